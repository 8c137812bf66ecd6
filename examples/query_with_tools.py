"""Run one Query with two tools and print its events as they stream.

Offline (default): xai's OpenAI-wire test server plays a scripted model over
real HTTP. Online: set LLM_API_KEY, LLM_BASE_URL and LLM_MODEL.

    python examples/query_with_tools.py
"""

from __future__ import annotations

from typing import assert_never

import anyio

from xai import (
    LLMConfig,
    MessageCommitted,
    OpenAIProvider,
    Query,
    QueryConfig,
    QueryDone,
    QueryEvent,
    SystemMessage,
    TextDelta,
    ThinkingDelta,
    ToolCallFinished,
    ToolCallStarted,
    tool,
)
from xai.testing import OpenAIWireServer, Reply, ScriptedCall

PRICES = {"apple": 0.5, "pear": 0.75, "mango": 2.0}


@tool
def unit_price(fruit: str) -> float:
    """Price of one fruit in euros.

    Args:
        fruit: apple, pear or mango.
    """
    if fruit not in PRICES:
        raise KeyError(f"unknown fruit {fruit!r}")
    return PRICES[fruit]


@tool
async def multiply(a: float, b: float) -> float:
    """Multiply two numbers."""
    return a * b


def show(event: QueryEvent) -> None:
    if isinstance(event, TextDelta):
        print(event.text, end="", flush=True)
    elif isinstance(event, ToolCallStarted):
        print(f"\n[calling {event.call.name}({event.call.arguments})]")
    elif isinstance(event, ToolCallFinished):
        print(f"[{event.result.tool_name} -> {event.result.content}]")
    elif isinstance(event, (ThinkingDelta, MessageCommitted, QueryDone)):
        pass  # not shown here
    else:
        assert_never(event)  # a new kind of event is a type error here, not silence


async def main() -> None:
    config = LLMConfig.from_env()
    server = None
    if not config.is_configured:
        server = OpenAIWireServer(
            [
                Reply(tool_calls=(ScriptedCall(name="unit_price", arguments={"fruit": "mango"}),)),
                Reply(tool_calls=(ScriptedCall(name="multiply", arguments={"a": 2.0, "b": 12}),)),
                Reply(text="Twelve mangoes cost 24.00 euros."),
            ]
        ).start()
        config = server.llm_config()
        print(f"(scripted model at {server.base_url})")
    try:
        async with OpenAIProvider(config) as provider:
            query = Query(provider, tools=[unit_price, multiply], config=QueryConfig(max_rounds=5))
            system = SystemMessage(content="Answer with the tools; be brief.")
            result = await query.run([system], "How much do twelve mangoes cost?", observers=[show])
        print(f"\nstop={result.stop_reason.value} rounds={result.rounds} usage={result.usage}")
    finally:
        if server is not None:
            server.stop()


if __name__ == "__main__":
    anyio.run(main)
