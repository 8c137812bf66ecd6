"""An Agent using the tools of an MCP server: the server is a few lines further down, written
with the official MCP SDK, and started by the Agent as a child process over stdio.

Offline (default): xai's OpenAI-wire test server plays a scripted model over real HTTP.
Online: set LLM_API_KEY, LLM_BASE_URL and LLM_MODEL. Needs ``pip install 'xai-actors[mcp]'``.

    python examples/mcp_tools.py            # the Agent (it runs `... --serve` itself)
    python examples/mcp_tools.py --serve    # just the MCP server, on stdin/stdout
"""

from __future__ import annotations

import os
import sys
import tempfile
from typing import Literal

import anyio
from pydantic import BaseModel

from xai import LLMConfig, OpenAIProvider
from xai.agent import Agent, AgentConfig
from xai.events import SessionEvent, ToolCallFinished, ToolCallStarted
from xai.session import SessionConfig
from xai.testing import OpenAIWireServer, Reply, ScriptedCall
from xai.tools import MCPServer, ToolSet

# -- the MCP server (what a third party would ship) ---------------------------------------


class Level(BaseModel):
    """What the server answers: structured content, which the Agent's record keeps as is."""

    item: str
    amount: int
    unit: Literal["g", "pieces"]


def serve() -> None:
    from mcp.server.mcpserver import MCPServer as SDKServer

    server = SDKServer("pantry", log_level="WARNING")
    stock = {"flour": 1200, "sugar": 300, "eggs": 6}

    @server.tool()
    def pantry_level(item: str) -> Level:
        """How much of an item is in the pantry."""
        if item not in stock:
            raise ValueError(f"no {item} in the pantry (known: {', '.join(stock)})")
        return Level(item=item, amount=stock[item], unit="pieces" if item == "eggs" else "g")

    anyio.run(server.run_stdio_async)


# -- the Agent ----------------------------------------------------------------------------


def show(event: SessionEvent) -> None:
    body = event.event
    if isinstance(body, ToolCallStarted):
        print(f"[calling {body.call.name}({body.call.arguments}) on the MCP server]")
    elif isinstance(body, ToolCallFinished):
        print(f"[{body.result.tool_name} -> {body.result.result}]")


async def main() -> None:
    config = LLMConfig.from_env()
    scripted = None
    if not config.is_configured:
        scripted = OpenAIWireServer(
            [
                Reply(
                    tool_calls=(
                        ScriptedCall(name="pantry_level", arguments={"item": "flour"}),
                        ScriptedCall(name="pantry_level", arguments={"item": "eggs"}),
                    )
                ),
                Reply(text="You have 1200 g of flour and 6 eggs: enough for two cakes."),
            ]
        ).start()
        config = scripted.llm_config()
        print(f"(scripted model at {scripted.base_url})")
    # The child gets the SDK's small default environment plus what is named here: this
    # process's import path, and no API keys.
    pantry = MCPServer.stdio(
        sys.executable,
        [__file__, "--serve"],
        name="pantry",
        env={"PYTHONPATH": os.pathsep.join(sys.path)},
    )
    try:
        with tempfile.TemporaryDirectory() as home:
            async with (
                OpenAIProvider(config) as provider,
                Agent(
                    home,
                    provider,
                    tools=ToolSet(mcp=[pantry]),
                    # a tool demo: no memory tool, no memory extraction after the turn
                    config=AgentConfig(
                        memory_tool=False, session=SessionConfig(extract_memory=False)
                    ),
                ) as agent,
            ):
                print(f"MCP server {pantry.name!r}: tools {[s.name for s in pantry.specs]}")
                session = await agent.open_session("baking")
                session.on(show)
                outcome = await session.send("Can I bake two cakes? Check flour and eggs.")
                print(outcome.text)
                await session.close()
            print(f"MCP server {pantry.name!r} is {pantry.state} again")
    finally:
        if scripted is not None:
            scripted.stop()


if __name__ == "__main__":
    if sys.argv[1:] == ["--serve"]:
        serve()
    else:
        anyio.run(main)
