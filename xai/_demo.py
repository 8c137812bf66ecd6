"""``xai demo``: a guided tour of one Query with a tool call, streamed to the terminal.

With no ``LLM_*`` configuration it runs against xai's own OpenAI-wire server
on 127.0.0.1 with a scripted model (labelled as such); everything else is
real: the ``openai`` client, HTTP, SSE, tool dispatch. With ``LLM_*`` set the
same tour runs against the real model.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from contextlib import AsyncExitStack
from typing import Any, TextIO

from xai.config import LLMConfig
from xai.events import (
    MessageCommitted,
    QueryDone,
    QueryEvent,
    TextDelta,
    ThinkingDelta,
    ToolCallFinished,
    ToolCallStarted,
)
from xai.messages import AssistantMessage, SystemMessage
from xai.providers import OpenAIProvider
from xai.query import Query, QueryConfig
from xai.tools import tool

__all__ = ["run_demo"]

_WEATHER: dict[str, dict[str, Any]] = {
    "paris": {"city": "Paris", "condition": "light rain", "celsius": 14},
    "tokyo": {"city": "Tokyo", "condition": "clear", "celsius": 22},
    "lisbon": {"city": "Lisbon", "condition": "sunny", "celsius": 19},
}

QUESTION = "What's the weather in Paris and Tokyo right now, in Fahrenheit?"


@tool
def get_weather(city: str) -> dict[str, Any]:
    """Current weather for a city (offline demo data).

    Args:
        city: City name, e.g. "Paris".
    """
    found = _WEATHER.get(city.strip().lower())
    if found is None:
        raise ValueError(f"no weather data for {city!r}; try Paris, Tokyo or Lisbon")
    return {**found, "fahrenheit": round(found["celsius"] * 9 / 5 + 32, 1)}


def _scripted_answer(body: Mapping[str, Any]) -> Any:
    """The scripted model's second turn: it reads the tool results it was sent."""
    from xai.testing import Reply

    messages = body.get("messages", [])
    if not messages or messages[-1].get("role") != "tool":
        return None
    import json

    lines = []
    for message in messages:
        if message.get("role") == "tool":
            try:
                data = json.loads(message["content"])
                lines.append(f"{data['city']}: {data['condition']}, {data['fahrenheit']} °F")
            except (ValueError, KeyError, TypeError):
                lines.append(f"(a tool failed: {message['content']})")
    return Reply(text="Here is the weather right now:\n- " + "\n- ".join(lines), chunk_chars=6)


class _Printer:
    def __init__(self, out: TextIO) -> None:
        self.out = out
        self.dim = "\x1b[2m" if out.isatty() else ""
        self.reset = "\x1b[0m" if out.isatty() else ""
        self.in_thinking = False
        self.in_text = False

    def __call__(self, event: QueryEvent) -> None:
        w = self.out.write
        if isinstance(event, ThinkingDelta):
            if not self.in_thinking:
                w(f"{self.dim}  thinking: ")
                self.in_thinking = True
            w(event.text)
        elif isinstance(event, TextDelta):
            if self.in_thinking:
                w(f"{self.reset}\n")
                self.in_thinking = False
            if not self.in_text:
                w("  assistant: ")
                self.in_text = True
            w(event.text)
        elif isinstance(event, MessageCommitted):
            if self.in_thinking or self.in_text:
                w(f"{self.reset}\n")
            self.in_thinking = self.in_text = False
            if isinstance(event.message, AssistantMessage):
                for call in event.message.tool_calls:
                    w(f"  → model asks for {call.name}({call.arguments})\n")
        elif isinstance(event, ToolCallStarted):
            w(f"  ⚙ running {event.call.name} …\n")
        elif isinstance(event, ToolCallFinished):
            r = event.result
            status = "ok" if r.success else f"error: {r.error}"
            w(f"  ✓ {r.tool_name} [{status}, {r.duration_ms:.1f} ms] {r.content}\n")
        elif isinstance(event, QueryDone):
            res = event.result
            u = res.usage
            w(
                f"\n  done: stop={res.stop_reason.value} rounds={res.rounds} "
                f"requests={u.requests} tokens={u.prompt_tokens}+{u.completion_tokens}\n"
            )
        self.out.flush()


async def run_demo(*, env: Mapping[str, str] | None = None, out: TextIO | None = None) -> int:
    out = out or sys.stdout
    config = LLMConfig.from_env(env)
    async with AsyncExitStack() as stack:
        if config.is_configured:
            print(
                f"xai demo — live model {config.model!r} at {config.base_url or 'OpenAI'}", file=out
            )
        else:
            from xai.testing import OpenAIWireServer, Reply, Rule, ScriptedCall

            server = await stack.enter_async_context(OpenAIWireServer())
            server.script.add_responder(_scripted_answer)
            server.add_rule(
                Rule(
                    last_role="user",
                    reply=Reply(
                        thinking="Two cities; I can look both up at once.",
                        text="Let me check both cities.",
                        tool_calls=(
                            ScriptedCall(name="get_weather", arguments={"city": "Paris"}),
                            ScriptedCall(name="get_weather", arguments={"city": "Tokyo"}),
                        ),
                    ),
                )
            )
            config = server.llm_config()
            print(
                "xai demo — SCRIPTED model (no LLM_* configured) served over real HTTP by\n"
                f"xai's OpenAI-wire test server at {server.base_url}; set LLM_API_KEY, "
                "LLM_BASE_URL and LLM_MODEL to run it against a real model.",
                file=out,
            )
        provider = OpenAIProvider(config)
        stack.push_async_callback(provider.aclose)
        query = Query(provider, tools=[get_weather], config=QueryConfig(max_rounds=4))
        system = SystemMessage(
            content="You are a concise assistant. Use the get_weather tool for weather questions."
        )
        print(f"\nuser: {QUESTION}\n", file=out)
        result = await query.run([system], QUESTION, observers=[_Printer(out)])
    return 0 if result.error is None else 1
