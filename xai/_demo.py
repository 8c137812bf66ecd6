"""``xai demo``: a guided tour of one Query with a tool call, streamed to the terminal.

With no ``LLM_*`` configuration it runs against xai's own OpenAI-wire server
on 127.0.0.1 with a scripted model (labelled as such); everything else is
real: the ``openai`` client, HTTP, SSE, tool dispatch. With ``LLM_*`` set the
same tour runs against the real model.
"""

from __future__ import annotations

import json
import re
import sys
import tempfile
from collections.abc import Mapping
from contextlib import AsyncExitStack
from pathlib import Path
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


_NAME = re.compile(r"my name is (\w+)", re.IGNORECASE)
_USER_LINE = re.compile(r"^\[(\w+)\] USER: (.*)$", re.MULTILINE)


def _scripted_model(body: Mapping[str, Any]) -> Any:
    """The offline demo's model: scripted, but it reads what it is sent."""
    from xai.session import EXTRACTION_MARKER
    from xai.testing import Reply, ScriptedCall

    messages = body.get("messages") or [{}]
    last = messages[-1]
    content = str(last.get("content") or "")
    if content.startswith(EXTRACTION_MARKER):
        found = [
            {
                "text": f"The user's name is {m.group(1)}.",
                "kind": "fact",
                "confidence": 0.9,
                "evidence": [mid],
            }
            for mid, said in _USER_LINE.findall(content)
            if (m := _NAME.search(said))
        ]
        return Reply(text=json.dumps({"candidates": found}))
    if last.get("role") == "tool":
        lines = []
        for message in messages:
            if message.get("role") == "tool":
                try:
                    data = json.loads(message["content"])
                    lines.append(f"{data['city']}: {data['condition']}, {data['fahrenheit']} °F")
                except (ValueError, KeyError, TypeError):
                    lines.append(f"(a tool failed: {message['content']})")
        return Reply(text="Here is the weather right now:\n- " + "\n- ".join(lines), chunk_chars=6)
    if "weather" in content.lower():
        return Reply(
            thinking="Two cities; I can look both up at once.",
            text="Let me check both cities.",
            tool_calls=(
                ScriptedCall(name="get_weather", arguments={"city": "Paris"}),
                ScriptedCall(name="get_weather", arguments={"city": "Tokyo"}),
            ),
        )
    if (match := _NAME.search(content)) is not None:
        return Reply(text=f"Nice to meet you, {match.group(1)}!", chunk_chars=4)
    if "name" in content.lower():
        earlier = [
            m.group(1)
            for message in messages[:-1]
            if message.get("role") == "user" and (m := _NAME.search(str(message.get("content"))))
        ]
        answer = f"Your name is {earlier[-1]}." if earlier else "You have not told me your name."
        return Reply(text=answer, chunk_chars=4)
    return Reply(text="(scripted) I only know about weather and names.")


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
            from xai.testing import OpenAIWireServer

            server = await stack.enter_async_context(OpenAIWireServer())
            server.script.add_responder(_scripted_model)
            config = server.llm_config()
            print(
                "xai demo — SCRIPTED model (no LLM_* configured) served over real HTTP by\n"
                f"xai's OpenAI-wire test server at {server.base_url}; set LLM_API_KEY, "
                "LLM_BASE_URL and LLM_MODEL to run it against a real model.",
                file=out,
            )
        provider = OpenAIProvider(config)
        stack.push_async_callback(provider.aclose)
        ok = await _query_part(provider, out)
        ok = await _session_part(provider, out) and ok
    return 0 if ok else 1


async def _query_part(provider: OpenAIProvider, out: TextIO) -> bool:
    print("\n── 1. A Query: one request, a tool loop, streamed events ──", file=out)
    query = Query(provider, tools=[get_weather], config=QueryConfig(max_rounds=4))
    system = SystemMessage(
        content="You are a concise assistant. Use the get_weather tool for weather questions."
    )
    print(f"\nuser: {QUESTION}\n", file=out)
    result = await query.run([system], QUESTION, observers=[_Printer(out)])
    return result.error is None


async def _session_part(provider: OpenAIProvider, out: TextIO) -> bool:
    print("\n── 2. A Session: a conversation with a journal on disk ──", file=out)
    with tempfile.TemporaryDirectory(prefix="xai-demo-session-") as scratch:
        return await _conversation(provider, out, Path(scratch))


async def _conversation(provider: OpenAIProvider, out: TextIO, directory: Path) -> bool:
    from xai.events import CandidatesProposed, SessionEvent, TurnDone, TurnStarted
    from xai.session import FinalizingContext, Session, SessionConfig, SystemPrompt

    printer = _Printer(out)
    finalised: list[FinalizingContext] = []
    ok = True

    def show(event: SessionEvent) -> None:
        body = event.event
        if isinstance(body, TurnStarted) and body.input is not None:
            print(f"\nuser: {body.input.content}", file=out)
        elif isinstance(body, TurnDone):
            o = body.outcome
            print(
                f"  [turn {o.turn}: {o.status.value}, {o.usage.requests} request(s), "
                f"{o.usage.total_tokens} tokens]",
                file=out,
            )
        elif isinstance(body, CandidatesProposed):
            for candidate in body.candidates:
                print(f"  [memory candidate: {candidate.text!r}]", file=out)
        elif not isinstance(body, QueryDone):
            printer(body)  # type: ignore[arg-type]

    session = Session(
        provider,
        system=SystemPrompt(instructions="You are a friendly, concise assistant."),
        config=SessionConfig(extract_memory=True),
        directory=directory,
    )
    session.on_session_finalizing.append(finalised.append)
    async with session:
        session.on(show)
        for text in ("Hi! My name is Ada.", "What is my name?"):
            outcome = await session.send(text)
            ok = ok and outcome.error is None
    kinds = [
        line.split('"kind":"')[1].split('"')[0]
        for line in (directory / "journal.jsonl").read_text().splitlines()
    ]
    print(f"\n  journal {directory / 'journal.jsonl'}: {', '.join(kinds)}", file=out)
    for context in finalised:
        texts = [c.text for c in context.candidates]
        print(
            f"  closed ({context.reason}); candidates handed to the finalising hook: {texts}",
            file=out,
        )
    return ok
