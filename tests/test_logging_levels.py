"""What each log level shows: an operator's view at info, details at debug, contents never at info.

One Agent turn with a tool call and a memory decision runs with JSON logs at
each level. A marker planted in the user's message, the tool's arguments and
result, the model's answer and (through extraction) the fact's text must not
reach any line at info; at debug it may appear in a tool call's ``arguments``
only, with secrets masked.
"""

from __future__ import annotations

import io
import logging
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import msgspec
import pytest
import structlog

from tests.session_helpers import extraction_responder, summary_responder
from xai.agent import Agent, FakeClock, OnEvent, Wakeup
from xai.events import SessionEnded
from xai.logs import configure_logging, get_logger
from xai.messages import TurnStatus
from xai.providers import OpenAIProvider
from xai.session import Session, SessionConfig
from xai.testing import OpenAIWireServer, Reply, ScriptedCall, ScriptedProvider
from xai.tools import tool

pytestmark = pytest.mark.anyio

MARK = "zq7MARKER31"
SECRET = "sk-PLANTEDsecret0123456789abcdef"

INFO_EVENTS = {
    "agent.started",
    "session.opened",
    "session.turn_done",
    "session.candidates_proposed",
    "memory.decided",
    "session.closed",
    "agent.stopped",
}


@tool
def lookup(q: str) -> str:
    """Looks something up."""
    return f"result {MARK} for {q}"


@pytest.fixture
def restore_logging() -> Iterator[None]:
    yield
    configure_logging("console", level="warning", stream=sys.stderr)


async def agent_turn(
    tmp_path: Path, server: OpenAIWireServer, provider: OpenAIProvider, level: str
) -> tuple[list[dict[str, Any]], str]:
    """Run one turn (a tool call, then an answer), close it (a fact is decided), open a
    second Session (its memory prefix holds the fact); the log lines and the first Session's id."""
    stream = io.StringIO()
    configure_logging("json", level=level, stream=stream)
    server.script.add_responder(extraction_responder)
    server.push(
        Reply(tool_calls=(ScriptedCall(name="lookup", arguments={"q": f"{MARK} {SECRET}"}),)),
        Reply(text=f"the answer is {MARK}"),
    )
    async with Agent(tmp_path, provider, tools=[lookup]) as agent:
        session = await agent.open_session("chat")
        outcome = await session.send(f"I am {MARK}, look me up")
        assert outcome.status is TurnStatus.COMPLETED and MARK in outcome.text
        await session.close()
        assert [MARK in f.text for f in agent.memory.facts()] == [True]
        later = await agent.open_session(f"talk about {MARK}")
        assert MARK in later.system.memory_prefix
    return json_lines(stream), session.id


async def test_info_shows_what_happened_and_what_it_cost_never_what_was_said(
    tmp_path: Path, openai_server: OpenAIWireServer, provider: OpenAIProvider, restore_logging: None
) -> None:
    lines, session_id = await agent_turn(tmp_path, openai_server, provider, "info")
    assert [line for line in lines if MARK in msgspec.json.encode(line).decode()] == []
    assert {line["level"] for line in lines} <= {"info", "warning", "error"}
    events: dict[str, list[dict[str, Any]]] = {}
    for line in lines:
        events.setdefault(str(line["event"]), []).append(line)
    assert set(events) >= INFO_EVENTS
    agent_id = events["agent.started"][0]["agent_id"]
    assert all(line.get("agent_id") == agent_id for line in lines), "every line names the Agent"
    (done,) = events["session.turn_done"]
    assert done["session_id"] == session_id and done["turn"] == 1
    assert done["status"] == "completed" and done["rounds"] == 2 and done["tool_calls"] == 1
    assert done["prompt_tokens"] > 0 and done["completion_tokens"] > 0 and done["ms"] >= 0
    (decided,) = events["memory.decided"]
    assert decided["kinds"] == {"add": 1} and len(decided["fact_ids"]) == 1
    assert decided["session_id"] == session_id
    first_close = next(c for c in events["session.closed"] if c["session_id"] == session_id)
    assert first_close["reason"] == "closed" and first_close["turns"] == 1
    assert first_close["candidates_acknowledged"] == 1 and first_close["candidates_pending"] == 0
    assert first_close["prompt_tokens"] >= done["prompt_tokens"]
    assert events["agent.started"][0]["facts"] == 0 and "ms" in events["agent.started"][0]


async def test_debug_adds_the_details_and_contents_only_as_masked_tool_arguments(
    tmp_path: Path, openai_server: OpenAIWireServer, provider: OpenAIProvider, restore_logging: None
) -> None:
    lines, _ = await agent_turn(tmp_path, openai_server, provider, "debug")
    text = "\n".join(msgspec.json.encode(line).decode() for line in lines)
    assert SECRET not in text and "PLANTEDsecret" not in text
    marked = [line for line in lines if MARK in msgspec.json.encode(line).decode()]
    assert [(line["event"], line["level"]) for line in marked] == [("tool.started", "debug")]
    assert MARK in marked[0]["arguments"] and MARK not in str(
        {k: v for k, v in marked[0].items() if k != "arguments"}
    )
    seen = {str(line["event"]) for line in lines}
    assert INFO_EVENTS | {"query.round", "tool.finished", "memory.written", "memory.prefix"} <= seen
    (round_,) = [line for line in lines if line["event"] == "query.round" and line["round"] == 2]
    assert round_["finish"] == "stop" and round_["prompt_tokens"] > 0 and round_["query_id"]


async def test_warning_shows_none_of_it(
    tmp_path: Path, openai_server: OpenAIWireServer, provider: OpenAIProvider, restore_logging: None
) -> None:
    lines, _ = await agent_turn(tmp_path, openai_server, provider, "warning")
    assert [line["event"] for line in lines if line["level"] in ("debug", "info")] == []
    assert not INFO_EVENTS & {str(line["event"]) for line in lines}


def test_a_filtered_line_costs_no_structlog_call(
    monkeypatch: pytest.MonkeyPatch, restore_logging: None
) -> None:
    configure_logging("json", level="warning", stream=io.StringIO())
    log = get_logger("test")

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("a filtered line built a logger")

    monkeypatch.setattr(structlog, "get_logger", refuse)
    log.debug("query.round", round=1)
    log.info("session.turn_done", turn=1)
    assert not log.enabled("debug") and not log.enabled("info")


def test_an_application_logger_of_its_own_gets_every_level(restore_logging: None) -> None:
    seen: list[tuple[str, str]] = []

    class Everything(structlog.BoundLoggerBase):
        def debug(self, event: str, **fields: object) -> None:
            seen.append(("debug", event))

        def info(self, event: str, **fields: object) -> None:
            seen.append(("info", event))

    structlog.configure(wrapper_class=Everything)
    get_logger("test").debug("a.detail")
    get_logger("test").info("a.fact")
    assert seen == [("debug", "a.detail"), ("info", "a.fact")]
    assert get_logger("test").enabled("debug")
    configure_logging("json", level=logging.INFO, stream=io.StringIO())
    assert get_logger("test").enabled("info") and not get_logger("test").enabled("debug")


def json_lines(stream: io.StringIO) -> list[dict[str, Any]]:
    return [msgspec.json.decode(line) for line in stream.getvalue().splitlines() if line]


async def test_wakeups_fired_and_skipped_are_info_lines(
    tmp_path: Path, restore_logging: None
) -> None:
    stream = io.StringIO()
    configure_logging("json", level="info", stream=stream)
    scripted = ScriptedProvider()
    scripted.script.add_responder(lambda body: Reply(text="good morning"))
    async with Agent(tmp_path, scripted, clock=FakeClock(0.0)) as agent:
        events = agent.events()
        agent.scheduler.add(Wakeup(id="ping", trigger=OnEvent(name="ping"), text=f"hi {MARK}"))
        agent.notify("ping")
        with anyio.fail_after(30):
            async for event in events:
                if isinstance(event.event, SessionEnded):
                    break
        agent.scheduler.pause("ping")
        agent.notify("ping")
    by_event = {str(line["event"]): line for line in json_lines(stream)}
    fired, skipped = by_event["scheduler.wakeup_fired"], by_event["scheduler.wakeup_skipped"]
    assert fired["wakeup_id"] == "ping" and fired["session_id"] and fired["agent_id"] == agent.id
    assert (skipped["wakeup_id"], skipped["reason"]) == ("ping", "paused")
    assert MARK not in stream.getvalue()


async def test_compaction_is_an_info_line_with_its_token_counts(restore_logging: None) -> None:
    stream = io.StringIO()
    configure_logging("json", level="info", stream=stream)
    scripted = ScriptedProvider()
    scripted.script.add_responder(summary_responder(f"summary {MARK}"))
    scripted.script.add_responder(lambda body: Reply(text=f"{MARK} " + "w" * 400))
    config = SessionConfig(context_window=400, keep_recent_tokens=100, compact_at=0.5)
    async with Session(scripted, config=config) as session:
        for n in range(3):
            await session.send(f"message {n} {MARK}")
    (compacted, *_) = [line for line in json_lines(stream) if line["event"] == "session.compacted"]
    assert compacted["session_id"] == session.id and compacted["method"] == "summary"
    assert compacted["before_tokens"] > compacted["after_tokens"] > 0
    assert compacted["reason"] == "proactive" and compacted["removed_messages"] > 0
    assert MARK not in stream.getvalue()
