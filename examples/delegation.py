"""Delegation: the model hands a sub-task to a child Session the Agent owns.

Offline by default (a scripted model that delegates when asked); set LLM_* for
a real model. Prints the parent's and the helper's streamed output.

    python examples/delegation.py
"""

from __future__ import annotations

import tempfile
from contextlib import AsyncExitStack

import anyio

from xai import LLMConfig, OpenAIProvider
from xai.agent import Agent, AgentConfig
from xai.cli import Printer, Renderer, session_ended
from xai.session import SessionConfig


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
        agent_config = AgentConfig(session=SessionConfig(delegation=True))
        agent = await stack.enter_async_context(Agent(directory, provider, config=agent_config))
        printer = Printer(Renderer(), agent.events())
        async with anyio.create_task_group() as group:
            group.start_soon(printer.run)
            session = await agent.open_session("trip planning")
            printer.render.line("user: Please ask a helper to plan my packing for Tokyo.")
            outcome = await session.send("Please ask a helper to plan my packing for Tokyo.")
            await session.close()
            await printer.shown(session_ended(session.id))  # everything it said is printed
            group.cancel_scope.cancel()
        print(
            f"\nparent turn: {outcome.status.value}, {outcome.usage.requests} requests "
            "(the helper's included)"
        )


if __name__ == "__main__":
    anyio.run(main)
