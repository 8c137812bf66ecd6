"""An Agent in a child process, killed by the parent once it has learned something.

``python -m tests.agent_crash_child DIR URL``: open a Session, say something
worth remembering, wait until the Agent decided it, write DIR/learned, then
wait to be killed (the Session stays open: its journal has no close record).
"""

from __future__ import annotations

import sys
from pathlib import Path

import anyio

from xai.agent import Agent
from xai.config import LLMConfig
from xai.events import MemoryDecided
from xai.providers import OpenAIProvider


def main(directory: Path, base_url: str) -> None:
    async def run() -> None:
        config = LLMConfig(model="m", base_url=base_url, api_key="k", max_retries=0)
        async with (
            OpenAIProvider(config) as provider,
            Agent(directory / "agent", provider) as agent,
        ):
            events = agent.events()
            session = await agent.open_session("introductions")
            await session.send("My name is Ada")
            async for event in events:
                if isinstance(event.event, MemoryDecided):
                    break
            (directory / "learned").write_text(session.id)
            await anyio.sleep(3600)

    anyio.run(run)


if __name__ == "__main__":
    main(Path(sys.argv[1]), sys.argv[2])
