"""Hundreds of concurrent Sessions on one Agent, each answering a turn.

Offline by default against xai's OpenAI-wire test server (real HTTP, real
client); with LLM_* set it talks to your endpoint (mind your rate limits:
lower SESSIONS). Memory extraction is off here: this is about concurrency.

    python examples/many_sessions.py [SESSIONS]
"""

from __future__ import annotations

import sys
import tempfile
import time
from contextlib import AsyncExitStack

import anyio

from xai import LLMConfig, OpenAIProvider
from xai.agent import Agent, AgentConfig
from xai.messages import TurnStatus
from xai.session import SessionConfig
from xai.testing import OpenAIWireServer, Reply


async def main(count: int) -> None:
    async with AsyncExitStack() as stack:
        config = LLMConfig.from_env()
        if not config.is_configured:
            server = await stack.enter_async_context(OpenAIWireServer())
            server.script.add_responder(
                lambda body: Reply(text=f"ok: {body['messages'][-1]['content']}", chunk_chars=4)
            )
            config = server.llm_config(timeout=60)
        provider = await stack.enter_async_context(OpenAIProvider(config))
        directory = stack.enter_context(tempfile.TemporaryDirectory())
        settings = AgentConfig(session=SessionConfig(extract_memory=False, fsync="off"))
        agent = await stack.enter_async_context(Agent(directory, provider, config=settings))
        statuses: list[TurnStatus] = []
        started = time.perf_counter()

        async def one(i: int) -> None:
            session = await agent.open_session(f"conversation {i}")
            outcome = await session.send(f"hello from session {i}")
            statuses.append(outcome.status)
            await session.close()

        async with anyio.create_task_group() as group:
            for i in range(count):
                group.start_soon(one, i)
        elapsed = time.perf_counter() - started
        done = sum(1 for s in statuses if s is TurnStatus.COMPLETED)
        print(
            f"{done}/{count} sessions completed a turn in {elapsed:.2f}s "
            f"({count / elapsed:.0f} sessions/s, one Agent, one event loop)"
        )


if __name__ == "__main__":
    anyio.run(main, int(sys.argv[1]) if len(sys.argv) > 1 else 200)
