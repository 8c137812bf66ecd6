"""The REPL in a page: read a line, stream the answer, remember the conversation.

For people who embed xai in their own command line. (``xai chat`` is the full
version with line editing, commands and wake-ups.) Offline by default.

    python examples/repl.py            # Ctrl-D to leave
"""

from __future__ import annotations

import sys
import tempfile
from contextlib import AsyncExitStack

import anyio

from xai import LLMConfig, OpenAIProvider, TextDelta
from xai.agent import Agent
from xai.events import TurnDone


async def main() -> None:
    async with AsyncExitStack() as stack:
        config = LLMConfig.from_env()
        if not config.is_configured:
            from xai.testing import OpenAIWireServer, demo_model

            server = await stack.enter_async_context(OpenAIWireServer())
            server.script.add_responder(demo_model)
            config = server.llm_config()
        provider = await stack.enter_async_context(OpenAIProvider(config))
        directory = stack.enter_context(tempfile.TemporaryDirectory())
        agent = await stack.enter_async_context(Agent(directory, provider))
        session = await agent.open_session("a chat on the command line")
        while True:
            print("you> ", end="", flush=True)
            line = await anyio.to_thread.run_sync(sys.stdin.readline)
            if not line:  # Ctrl-D
                break
            if not line.strip():
                continue
            events = session.events()
            session.send(line.strip())
            async for event in events:
                if isinstance(event.event, TextDelta):
                    print(event.event.text, end="", flush=True)
                elif isinstance(event.event, TurnDone):
                    print()
                    break
        await session.close()  # the conversation's memory is adjudicated here
        print(f"\nremembered: {[fact.text for fact in agent.memory.facts()]}")


if __name__ == "__main__":
    anyio.run(main)
