"""The Session actor against the local OpenAI-wire server with the real ``openai`` client."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import anyio
import anyio.lowlevel
import pytest

from tests.session_helpers import (
    drain,
    extraction_responder,
    is_side_request,
    last_content,
    summary_responder,
)
from xai.events import (
    CandidatesProposed,
    Compacted,
    EventsDropped,
    SessionClosed,
    SessionEvent,
    SessionFinalizing,
    TextDelta,
    TurnDone,
    TurnStarted,
)
from xai.exceptions import SessionClosedError
from xai.messages import AssistantMessage, MemoryCandidate, ToolMessage, TurnStatus, UserMessage
from xai.providers import OpenAIProvider
from xai.query import QueryConfig
from xai.session import (
    EXTRACTION_MARKER,
    FinalizingContext,
    Session,
    SessionConfig,
    SessionContext,
    SystemPrompt,
)
from xai.testing import HttpError, OpenAIWireServer, Reply, Rule, ScriptedCall
from xai.tools import ToolContext, tool

pytestmark = pytest.mark.anyio


def echo(body: Mapping[str, Any]) -> Reply | None:
    if is_side_request(body):
        return None
    return Reply(text=f"echo: {last_content(body)}", chunk_chars=3)


async def test_concurrent_inputs_run_in_order_one_query_at_a_time(
    openai_server: OpenAIWireServer, provider: OpenAIProvider
) -> None:
    openai_server.script.add_responder(echo)
    sent: list[str] = []
    outcomes: dict[str, str] = {}
    async with Session(provider) as session:
        events = session.subscribe(buffer=10_000)

        async def one(i: int) -> None:
            await anyio.lowlevel.checkpoint()
            sent.append(f"q{i}")
            outcome = await session.send(f"q{i}")
            outcomes[f"q{i}"] = outcome.text

        async with anyio.create_task_group() as group:
            for i in range(10):
                group.start_soon(one, i)
    assert outcomes == {q: f"echo: {q}" for q in sent}
    # the server saw the inputs in the order they were sent, one request per turn
    assert [last_content(r.body) for r in openai_server.chat_requests()] == sent
    # turns never overlap: started, done, started, done ...
    lifecycle = [
        type(e.event).__name__
        for e in drain(events)
        if isinstance(e.event, (TurnStarted, TurnDone))
    ]
    assert lifecycle == ["TurnStarted", "TurnDone"] * 10
    assert session.turns == 10 and session.usage.requests == 10


async def test_interrupt_policy_cancels_the_running_turn_first(
    openai_server: OpenAIWireServer, provider: OpenAIProvider
) -> None:
    openai_server.add_rule(
        Rule(
            contains="slow question",
            reply=Reply(text="a very long and slow answer", chunk_chars=2, chunk_delay=0.05),
        )
    )
    openai_server.script.add_responder(echo)
    async with Session(provider) as session:
        events = session.subscribe()
        first = session.send("slow question")
        async for event in events:
            if isinstance(event.event, TextDelta):
                break
        queued = session.send("queued question")
        urgent = session.send("urgent question", policy="interrupt")
        first_outcome, urgent_outcome, queued_outcome = await first, await urgent, await queued
    assert first_outcome.status is TurnStatus.CANCELLED
    assert urgent_outcome.text == "echo: urgent question"
    assert queued_outcome.text == "echo: queued question"
    history = session.history
    partial = history[1]
    assert isinstance(partial, AssistantMessage) and partial.interrupted and partial.content
    assert [m.content for m in history if isinstance(m, UserMessage)] == [
        "slow question",
        "urgent question",
        "queued question",
    ]


async def test_three_observers_see_the_same_ordered_events(
    openai_server: OpenAIWireServer, provider: OpenAIProvider
) -> None:
    openai_server.script.add_responder(echo)
    from_callback: list[SessionEvent] = []
    from_async_callback: list[SessionEvent] = []

    async def slowish(event: SessionEvent) -> None:
        await anyio.lowlevel.checkpoint()
        from_async_callback.append(event)

    async with Session(provider) as session:
        iterated = session.events()
        session.on(from_callback.append)
        session.on(slowish)
        await session.send("one")
        await session.send("two")
    from_iteration = [event async for event in iterated]  # ends after the closed event
    assert [e.seq for e in from_iteration] == list(range(1, len(from_iteration) + 1))
    assert from_iteration == from_callback == from_async_callback
    assert all(e.session_id == session.id for e in from_iteration)
    assert isinstance(from_iteration[-1].event, SessionClosed)
    assert isinstance(from_iteration[-2].event, SessionFinalizing)


async def test_a_stalled_subscriber_does_not_slow_the_session_and_learns_what_it_missed(
    openai_server: OpenAIWireServer, provider: OpenAIProvider
) -> None:
    openai_server.push(Reply(text="x" * 200, chunk_chars=2))  # 100 deltas
    async with Session(provider) as session:
        stalled = session.subscribe(buffer=5)
        keen = session.subscribe(buffer=10_000)
        outcome = await session.send("talk")  # completes although `stalled` never reads
        assert outcome.status is TurnStatus.COMPLETED
        everything = drain(keen)
        got = drain(stalled)
    gap = got[0].event
    assert isinstance(gap, EventsDropped)
    assert gap.count == len(everything) - 5
    assert (gap.first_seq, gap.last_seq) == (everything[0].seq, everything[-6].seq)
    assert [e.seq for e in got[1:]] == [e.seq for e in everything[-5:]]

    # drop_newest keeps the oldest instead
    openai_server.push(Reply(text="y" * 20, chunk_chars=2))
    async with Session(provider) as session:
        oldest = session.subscribe(buffer=3, overflow="drop_newest")
        await session.send("talk")
        got = drain(oldest)
    assert [e.seq for e in got[:3]] == [1, 2, 3]
    late_gap = got[3].event
    assert isinstance(late_gap, EventsDropped) and late_gap.first_seq == 4
    assert late_gap.count == late_gap.last_seq - 3 and len(got) == 4


async def test_breaking_out_of_iteration_unsubscribes_and_the_session_goes_on(
    openai_server: OpenAIWireServer, provider: OpenAIProvider
) -> None:
    openai_server.script.add_responder(echo)
    async with Session(provider) as session:
        handle = session.send("first")
        async for event in session.events():
            if isinstance(event.event, TurnStarted):
                break
        assert session._hub.count == 0
        assert (await handle).text == "echo: first"
        assert (await session.send("second")).text == "echo: second"


async def test_finalising_hooks_get_unacknowledged_candidates(
    openai_server: OpenAIWireServer, provider: OpenAIProvider
) -> None:
    openai_server.script.add_responder(extraction_responder)
    openai_server.script.add_responder(echo)
    received: list[FinalizingContext] = []

    def broken_hook(context: FinalizingContext) -> None:
        raise RuntimeError("hook bug")

    async def good_hook(context: FinalizingContext) -> None:
        await anyio.lowlevel.checkpoint()
        received.append(context)

    config = SessionConfig(extract_memory=True)
    async with Session(provider, config=config) as session:
        session.on_session_finalizing.extend([broken_hook, good_hook])
        proposals = session.subscribe()
        await session.send("I prefer tea over coffee")
        await session.send("My daughter is called Ada")
        proposed: list[MemoryCandidate] = []
        async for event in proposals:  # extraction runs after each turn, between Queries
            if isinstance(event.event, CandidatesProposed):
                proposed.extend(event.event.candidates)
                if len(proposed) == 2:
                    break
        assert [c.text for c in proposed] == [
            "The user said: I prefer tea over coffee",
            "The user said: My daughter is called Ada",
        ]
        first_input = session.history[0]
        assert proposed[0].evidence == (first_input.id,) and proposed[0].session_id == session.id
        session.acknowledge_candidates([proposed[0].id])
    (context,) = received  # called once, despite the failing hook before it
    assert context.reason == "closed" and context.turns == 2
    assert [c.text for c in context.candidates] == ["The user said: My daughter is called Ada"]
    assert context.usage == session.usage


async def test_agent_origin_input_yields_no_user_candidates(
    openai_server: OpenAIWireServer, provider: OpenAIProvider
) -> None:
    openai_server.script.add_responder(extraction_responder)
    openai_server.script.add_responder(echo)
    async with Session(provider, config=SessionConfig(extract_memory=True)) as session:
        await session.send("Good morning! The user was tired yesterday.", origin="agent")
    assert session.candidates == ()
    extraction_requests = [
        r
        for r in openai_server.chat_requests()
        if last_content(r.body).startswith(EXTRACTION_MARKER)
    ]
    assert extraction_requests == []  # nothing the user said: nothing to ask about
    first = session.history[0]
    assert isinstance(first, UserMessage) and first.origin == "agent"


async def test_candidates_not_grounded_in_user_messages_are_dropped(
    openai_server: OpenAIWireServer, provider: OpenAIProvider
) -> None:
    def lying_extractor(body: Mapping[str, Any]) -> Reply | None:
        if not last_content(body).startswith(EXTRACTION_MARKER):
            return None
        return Reply(
            text='{"candidates": [{"text": "The user loves spam", "evidence": ["not-a-user-message"]}]}'
        )

    openai_server.script.add_responder(lying_extractor)
    openai_server.script.add_responder(echo)
    async with Session(provider, config=SessionConfig(extract_memory=True)) as session:
        await session.send("hello")
    assert session.candidates == ()
    asked = [
        r
        for r in openai_server.chat_requests()
        if last_content(r.body).startswith(EXTRACTION_MARKER)
    ]
    assert len(asked) == 1  # the extractor was asked; its ungrounded answer was dropped


async def test_extraction_failure_never_fails_the_turn(
    openai_server: OpenAIWireServer, provider: OpenAIProvider
) -> None:
    openai_server.add_rule(Rule(contains=EXTRACTION_MARKER, reply=Reply(text="this is not JSON")))
    openai_server.script.add_responder(echo)
    async with Session(provider, config=SessionConfig(extract_memory=True)) as session:
        events = session.subscribe()
        outcome = await session.send("hello")
        assert outcome.status is TurnStatus.COMPLETED
    failures = [e.event for e in drain(events) if e.event.__class__.__name__ == "SessionFailed"]
    assert len(failures) == 1 and failures[0].stage == "extraction"  # type: ignore[union-attr]


async def test_system_prompt_is_assembled_from_the_parts_it_was_given(
    openai_server: OpenAIWireServer, provider: OpenAIProvider
) -> None:
    openai_server.script.add_responder(echo)
    system = SystemPrompt(
        instructions="Help with gardening.", persona="You are Fern.", memory_prefix="- likes roses"
    )
    async with Session(provider, system=system) as session:
        await session.send("hi")
    sent = openai_server.chat_requests()[0].body["messages"][0]
    assert sent["role"] == "system"
    assert sent["content"].startswith("You are Fern.\n\nHelp with gardening.")
    assert "- likes roses" in sent["content"]


async def test_stop_reasons_become_outcomes(
    openai_server: OpenAIWireServer, provider: OpenAIProvider
) -> None:
    @tool
    async def again() -> str:
        """Loops."""
        return "again"

    loop = Reply(tool_calls=(ScriptedCall(name="again"),))
    openai_server.push(
        Reply(text="cut", finish_reason="length"),
        loop,
        loop,
        Reply(fault=HttpError(status=400, message="bad")),
    )
    config = SessionConfig(query=QueryConfig(max_rounds=2), max_turns=3)
    async with Session(provider, tools=[again], config=config) as session:
        assert (await session.send("a")).status is TurnStatus.LENGTH
        assert (await session.send("b")).status is TurnStatus.BUDGET_EXHAUSTED
        failed = await session.send("c")
        assert failed.status is TurnStatus.ERROR and failed.error is not None
        assert failed.error.type == "BadRequestError"
        over = await session.send("d")
        assert over.status is TurnStatus.BUDGET_EXHAUSTED and session.turns == 3
    with pytest.raises(SessionClosedError):
        session.send("too late")


async def test_close_cancels_the_running_turn_and_queued_inputs(
    openai_server: OpenAIWireServer, provider: OpenAIProvider
) -> None:
    openai_server.push(Reply(text="z" * 100, chunk_chars=1, chunk_delay=0.02))
    async with Session(provider) as session:
        running = session.send("long")
        queued = session.send("never")
        async for event in session.events():
            if isinstance(event.event, TextDelta):
                break
        await session.close()
        assert session.state == "closed"
    assert (await running).status is TurnStatus.CANCELLED
    assert (await queued).status is TurnStatus.CANCELLED
    assert len(openai_server.chat_requests()) == 1


async def test_compaction_proactive(
    openai_server: OpenAIWireServer, provider: OpenAIProvider
) -> None:
    @tool
    async def fetch(n: int) -> str:
        """Returns a long text."""
        return f"document {n}: " + "lorem ipsum " * 80

    openai_server.script.add_responder(summary_responder("The user asked for documents 1 and 2."))
    for n in range(1, 4):
        openai_server.push(
            Reply(tool_calls=(ScriptedCall(name="fetch", arguments={"n": n}),)),
            Reply(text=f"done {n}"),
        )
    config = SessionConfig(context_window=600, compact_at=0.8, keep_recent_tokens=200)
    async with Session(provider, tools=[fetch], config=config) as session:
        events = session.subscribe()
        for n in range(1, 4):
            assert (await session.send(f"get document {n}")).status is TurnStatus.COMPLETED
        compactions = [e.event for e in drain(events) if isinstance(e.event, Compacted)]
    assert (
        compactions and compactions[0].reason == "proactive" and compactions[0].method == "summary"
    )
    assert compactions[0].after_tokens < compactions[0].before_tokens
    assert session.summary == "The user asked for documents 1 and 2."
    # the latest request carried the summary in its system prompt and no orphaned tool result
    last = [r for r in openai_server.chat_requests() if not is_side_request(r.body)][-1].body[
        "messages"
    ]
    assert "The user asked for documents 1 and 2." in last[0]["content"]
    assert last[1]["role"] != "tool"
    calls = {c["id"] for m in last if m["role"] == "assistant" for c in m.get("tool_calls", [])}
    results = {m["tool_call_id"] for m in last if m["role"] == "tool"}
    assert results <= calls


async def test_compaction_falls_back_to_a_digest(openai_server: OpenAIWireServer) -> None:
    from xai.session import COMPACTION_MARKER

    openai_server.add_rule(
        Rule(contains=COMPACTION_MARKER, reply=Reply(fault=HttpError(status=500)))
    )
    openai_server.script.add_responder(
        lambda body: None if is_side_request(body) else Reply(text="ok " + "w" * 300)
    )
    provider = openai_server.provider(max_retries=0)
    config = SessionConfig(context_window=400, keep_recent_tokens=100)
    try:
        async with Session(provider, config=config) as session:
            events = session.subscribe()
            for i in range(4):
                await session.send(f"message {i} " + "v" * 200)
            compactions = [e.event for e in drain(events) if isinstance(e.event, Compacted)]
    finally:
        await provider.aclose()
    assert compactions and all(c.method == "digest" for c in compactions)
    assert "user said: message 0" in session.summary


async def test_compaction_on_context_too_long(
    openai_server: OpenAIWireServer, provider: OpenAIProvider
) -> None:
    openai_server.script.add_responder(summary_responder("short summary"))
    openai_server.push(
        Reply(text="first answer"),
        Reply(text="second answer"),
        Reply(
            fault=HttpError(
                status=400,
                code="context_length_exceeded",
                message="maximum context length exceeded",
            )
        ),
        Reply(text="answer after compaction"),
    )
    async with Session(provider, config=SessionConfig(keep_recent_tokens=10)) as session:
        events = session.subscribe()
        await session.send("one")
        await session.send("two")
        outcome = await session.send("three")
        compactions = [e.event for e in drain(events) if isinstance(e.event, Compacted)]
    assert outcome.status is TurnStatus.COMPLETED and outcome.text == "answer after compaction"
    assert [c.reason for c in compactions] == ["context_too_long"]
    assert (
        outcome.usage.requests == 2
    )  # the failed attempt and the retry (the summary is the Session's)


async def test_delegation_runs_a_child_and_rolls_up_usage(
    openai_server: OpenAIWireServer, provider: OpenAIProvider
) -> None:
    def child(body: Mapping[str, Any]) -> Reply | None:
        if "helper working on one delegated task" in body["messages"][0]["content"]:
            return Reply(
                text=f"child result for <{last_content(body)}>",
                usage={"prompt_tokens": 100, "completion_tokens": 10},
            )
        return None

    openai_server.script.add_responder(child)
    openai_server.push(
        Reply(
            tool_calls=(ScriptedCall(name="delegate", arguments={"task": "count the stars"}),),
            usage={"prompt_tokens": 5, "completion_tokens": 1},
        ),
        Reply(
            text="The child says it is done.", usage={"prompt_tokens": 7, "completion_tokens": 2}
        ),
    )
    async with Session(provider, config=SessionConfig(delegation=True)) as session:
        outcome = await session.send("delegate please")
    assert outcome.status is TurnStatus.COMPLETED
    result = next(m for m in session.history if isinstance(m, ToolMessage))
    assert result.content == "child result for <count the stars>"
    assert outcome.usage.requests == 3 and outcome.usage.prompt_tokens == 112
    assert session.usage == outcome.usage


async def test_cancelling_the_parent_cancels_the_child(
    openai_server: OpenAIWireServer, provider: OpenAIProvider
) -> None:
    children: list[Session] = []
    child_started = anyio.Event()

    def slow_child(body: Mapping[str, Any]) -> Reply | None:
        if "helper working on one delegated task" in body["messages"][0]["content"]:
            return Reply(text="c" * 200, chunk_chars=1, chunk_delay=0.02)
        return None

    async def factory(parent: Session, task: str) -> Session:
        child = Session(
            provider,
            system=SystemPrompt(instructions="You are a helper working on one delegated task."),
            parent_id=parent.id,
            depth=parent.depth + 1,
        )
        await group.start(child.run)
        children.append(child)

        async def watch() -> None:
            async for event in child.events():
                if isinstance(event.event, TextDelta):
                    child_started.set()
                    return

        group.start_soon(watch)
        return child

    openai_server.script.add_responder(slow_child)
    openai_server.push(
        Reply(tool_calls=(ScriptedCall(name="delegate", arguments={"task": "slow work"}),))
    )
    async with anyio.create_task_group() as group:
        async with Session(
            provider, config=SessionConfig(delegation=True), child_factory=factory
        ) as session:
            handle = session.send("go")
            await child_started.wait()
            assert session.cancel()
            outcome = await handle
        (child,) = children
        child_outcome = child.history[-1]
        await child.close()
    assert outcome.status is TurnStatus.CANCELLED
    assert isinstance(child_outcome, AssistantMessage) and child_outcome.interrupted
    assert child.parent_id == session.id and child.depth == 1
    tool_result = next(m for m in session.history if isinstance(m, ToolMessage))
    assert tool_result.synthetic  # the parent's history stays valid


async def test_tools_receive_the_session_context(
    openai_server: OpenAIWireServer, provider: OpenAIProvider
) -> None:
    @tool
    async def where(ctx: ToolContext[SessionContext]) -> str:
        """Which session runs me."""
        return f"{ctx.deps.session_id}/{ctx.deps.deps}"

    openai_server.push(Reply(tool_calls=(ScriptedCall(name="where"),)), Reply(text="ok"))
    async with Session(provider, tools=[where], tool_deps="app-data") as session:
        await session.send("where?")
    result = next(m for m in session.history if isinstance(m, ToolMessage))
    assert result.content == f"{session.id}/app-data"


async def test_event_order_inside_a_turn(
    openai_server: OpenAIWireServer, provider: OpenAIProvider, tmp_path: Path
) -> None:
    @tool
    async def ping() -> str:
        """Pong."""
        return "pong"

    openai_server.push(
        Reply(text="calling", tool_calls=(ScriptedCall(name="ping"),)), Reply(text="pong received")
    )
    async with Session(provider, tools=[ping], directory=tmp_path / "s") as session:
        events = session.subscribe()
        await session.send("ping it")
        kinds = [
            type(e.event).__name__ for e in drain(events) if not isinstance(e.event, TextDelta)
        ]
    assert kinds == [
        "TurnStarted",
        "MessageCommitted",
        "ToolCallStarted",
        "ToolCallFinished",
        "MessageCommitted",
        "MessageCommitted",
        "QueryDone",
        "TurnDone",
    ]
