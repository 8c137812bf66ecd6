"""A host streaming a Session in a child process that dies by SIGKILL inside the fsync at
the end of its first turn: the journal has the turn's end (in the page cache), the
Session never published its ``turn_done``, and a second input waits, accepted.

``python -m tests.stream_crash_child ROOT URL``: open Session ``ROOT/session`` (its id is
written there first) on Agent ``ada``, submit two inputs, and die when the journal is
synced with a ``turn_end`` as its last record.
"""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import anyio

from xai.agent import AgentHost, OpenSession
from xai.config import LLMConfig
from xai.providers import OpenAIProvider

if TYPE_CHECKING:
    from _typeshed import HasFileno

_fsync = os.fsync


def _dying_fsync(fd: int | HasFileno) -> None:
    """The journal's end-of-turn fsync is where the process dies (kill -9 from outside
    would land there by luck; here it lands there every time)."""
    number = fd if isinstance(fd, int) else fd.fileno()
    path = os.readlink(f"/proc/self/fd/{number}")
    if path.endswith("journal.jsonl"):
        with open(path, "rb") as f:
            last = f.read().splitlines()[-1]
        if b'"kind":"turn_end"' in last:
            os.kill(os.getpid(), signal.SIGKILL)
    _fsync(fd)


def main(root: Path, base_url: str) -> None:
    async def run() -> None:
        config = LLMConfig(model="m", base_url=base_url, api_key="k", max_retries=0)
        async with (
            OpenAIProvider(config) as provider,
            AgentHost(root / "agents", lambda _: provider) as host,
        ):
            info = await host.open_session("ada", OpenSession(purpose="chat"))
            (root / "session").write_text(info.session_id)
            os.fsync = _dying_fsync  # from here on
            await host.submit("ada", info.session_id, "first")
            await host.submit("ada", info.session_id, "second")  # accepted, waits
            await anyio.sleep(3600)

    anyio.run(run)


if __name__ == "__main__":
    main(Path(sys.argv[1]), sys.argv[2])
