"""A Session in a child process, for the kill -9 tests: ``python -m tests.crash_child DIR URL``.

It records every message it is told is committed (``acked.log``) and every
tool execution (``fast.log`` / ``slow.log``) in DIR, so the parent can kill
it at a chosen point and check what survived.
"""

from __future__ import annotations

import sys
from pathlib import Path

import anyio

from xai.config import LLMConfig
from xai.events import MessageCommitted, SessionEvent
from xai.providers import OpenAIProvider
from xai.session import Session, SessionConfig
from xai.tools import tool


def main(directory: Path, base_url: str) -> None:
    def note(name: str, line: str) -> None:
        with (directory / name).open("a") as f:
            f.write(line + "\n")

    @tool
    async def fast(n: int) -> str:
        """Finishes at once."""
        note("fast.log", str(n))
        return f"fast {n}"

    @tool
    async def slow(n: int) -> str:
        """Never finishes in time."""
        note("slow.log", str(n))
        await anyio.sleep(120)
        return f"slow {n}"

    def ack(event: SessionEvent) -> None:
        if isinstance(event.event, MessageCommitted):
            note("acked.log", event.event.message.id)

    async def run() -> None:
        config = LLMConfig(model="m", base_url=base_url, api_key="k", max_retries=0, timeout=120)
        async with (
            OpenAIProvider(config) as provider,
            Session(
                provider,
                tools=[fast, slow],
                directory=directory / "session",
                config=SessionConfig(fsync="commit"),
            ) as session,
        ):
            session.on(ack)
            note("ready.log", session.id)
            await session.send("go")

    anyio.run(run)


if __name__ == "__main__":
    main(Path(sys.argv[1]), sys.argv[2])
