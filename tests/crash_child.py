"""A Session in a child process, for the kill -9 tests:
``python -m tests.crash_child DIR URL [tools|inputs|continue]``.

It records every message it is told is committed (``acked.log``), every input
``send()`` accepted (``accepted.log``) and every tool execution (``fast.log`` /
``slow.log``) in DIR, so the parent can kill it at a chosen point and check
what survived. ``tools`` (the default) sends one input; ``inputs`` sends three
at once (the first runs a slow tool, the others wait); ``continue`` reopens
DIR/session and continues its interrupted turn.
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


def main(directory: Path, base_url: str, mode: str) -> None:
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
        session_config = SessionConfig(fsync="commit")
        async with OpenAIProvider(config) as provider:
            if mode == "continue":
                session = Session.reopen(
                    directory / "session", provider, tools=[fast, slow], config=session_config
                )
            else:
                session = Session(
                    provider,
                    tools=[fast, slow],
                    directory=directory / "session",
                    config=session_config,
                )
            async with session:
                session.on(ack)
                note("ready.log", session.id)
                if mode == "continue":
                    await session.continue_turn()
                    return
                inputs = ["go"] if mode == "tools" else ["go", "second", "third"]
                handles = []
                for text in inputs:
                    handle = session.send(text)
                    assert handle.input is not None
                    note("accepted.log", handle.input.id)  # send() returned: acknowledged
                    handles.append(handle)
                for handle in handles:
                    await handle

    anyio.run(run)


if __name__ == "__main__":
    main(Path(sys.argv[1]), sys.argv[2], sys.argv[3] if len(sys.argv) > 3 else "tools")
