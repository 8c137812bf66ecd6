"""An Agent in a child process that holds its directory until it is killed.

``python -m tests.agent_lock_child DIR``: start an Agent on DIR, print ``ready``
on stdout once it runs, then wait to be killed.
"""

from __future__ import annotations

import sys
from pathlib import Path

import anyio

from xai.agent import Agent
from xai.testing import ScriptedProvider


def main(directory: Path) -> None:
    async def run() -> None:
        async with Agent(directory, ScriptedProvider()):
            print("ready", flush=True)
            await anyio.sleep_forever()

    anyio.run(run)


if __name__ == "__main__":
    main(Path(sys.argv[1]))
