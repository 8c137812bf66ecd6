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
from xai.cli._render import Renderer
from xai.events import AgentEvent
from xai.session import SessionConfig, Subscription


async def show(events: Subscription[AgentEvent], render: Renderer) -> None:
    async for event in events:
        render.agent_event(event)


async def main() -> None:
    async with AsyncExitStack() as stack:
        config = LLMConfig.from_env()
        if not config.is_configured:
            from xai.cli._scripted import scripted_model
            from xai.testing import OpenAIWireServer

            server = await stack.enter_async_context(OpenAIWireServer())
            server.script.add_responder(scripted_model)
            config = server.llm_config()
        provider = await stack.enter_async_context(OpenAIProvider(config))
        directory = stack.enter_context(tempfile.TemporaryDirectory())
        agent_config = AgentConfig(session=SessionConfig(delegation=True))
        agent = await stack.enter_async_context(Agent(directory, provider, config=agent_config))
        render = Renderer()
        async with anyio.create_task_group() as group:
            group.start_soon(show, agent.events(), render)
            session = await agent.open_session("trip planning")
            render.line("user: Please ask a helper to plan my packing for Tokyo.")
            outcome = await session.send("Please ask a helper to plan my packing for Tokyo.")
            await session.close()
            await anyio.sleep(0.05)
            group.cancel_scope.cancel()
        print(
            f"\nparent turn: {outcome.status.value}, {outcome.usage.requests} requests "
            "(the helper's included)"
        )


if __name__ == "__main__":
    anyio.run(main)
