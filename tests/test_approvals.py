"""Human approval of tool calls: a Session holds a call, waits durably, and goes on when a
person decides (against the OpenAI-wire server with the real ``openai`` client)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import anyio
import pytest

from xai.events import ApprovalDecided, ApprovalRequested, SessionEvent, ToolCallStarted
from xai.exceptions import (
    ApprovalDecidedError,
    ApprovalNotFoundError,
    ApprovalPendingError,
    InvalidEditError,
)
from xai.messages import ToolMessage, TurnStatus
from xai.providers import OpenAIProvider
from xai.query import DENIED_TOOL_TEXT, Query
from xai.session import JournalView, Session, SessionConfig, SessionState
from xai.session._records import JOURNAL_FILE
from xai.testing import OpenAIWireServer, Reply, ScriptedCall
from xai.tools import ToolSet, tool

pytestmark = pytest.mark.anyio


class Disk:
    """A tool double that counts what it did: nothing may run twice or unapproved."""

    def __init__(self) -> None:
        self.deleted: list[str] = []
        self.read: list[str] = []

    def tools(self) -> list[Any]:
        @tool(needs_approval=True)
        def delete(path: str) -> str:
            """Delete a file.

            Args:
                path: The file.
            """
            self.deleted.append(path)
            return f"deleted {path}"

        @tool
        def look(path: str) -> str:
            """Read a file."""
            self.read.append(path)
            return f"contents of {path}"

        return [delete, look]


def call(name: str, call_id: str, **arguments: Any) -> ScriptedCall:
    return ScriptedCall(name=name, id=call_id, arguments=arguments)


async def requested(events: Any) -> ApprovalRequested:
    async for event in events:
        if isinstance(event.event, ApprovalRequested):
            return event.event
    raise AssertionError("the Session ended without asking")


def tool_results(server: OpenAIWireServer) -> list[Mapping[str, Any]]:
    """The tool messages of the last request the model got."""
    body = server.chat_requests()[-1].body
    return [m for m in body["messages"] if m["role"] == "tool"]


async def test_approve_runs_the_call_and_the_turn_goes_on(
    openai_server: OpenAIWireServer, provider: OpenAIProvider
) -> None:
    disk = Disk()
    openai_server.push(Reply(tool_calls=(call("delete", "c1", path="a.txt"),)), Reply(text="done"))
    async with Session(provider, tools=disk.tools()) as session:
        events = session.subscribe()
        handle = session.send("delete a.txt")
        asked = await requested(events)
        assert asked.pending.call.name == "delete"
        assert json.loads(asked.pending.call.arguments) == {"path": "a.txt"}
        assert asked.pending.session_id == session.id and asked.pending.asked_by == "user"
        assert session.state is SessionState.WAITING
        assert [p.call.id for p in session.approvals.pending()] == ["c1"]
        assert disk.deleted == []  # nothing ran before the decision
        decision = session.approvals.approve("c1")
        assert session.approvals.approve("c1") == decision  # a repeat changes nothing
        with pytest.raises(ApprovalDecidedError):
            session.approvals.deny("c1", "changed my mind")
        outcome = await handle
    assert outcome.status is TurnStatus.COMPLETED and outcome.text == "done"
    assert disk.deleted == ["a.txt"]
    assert [m["content"] for m in tool_results(openai_server)] == ["deleted a.txt"]
    assert session.approvals.approve("c1") == decision  # kept once applied: a retry is fine
    with pytest.raises(ApprovalNotFoundError):
        session.approvals.approve("c2")


async def test_deny_reaches_the_model_as_the_result(
    openai_server: OpenAIWireServer, provider: OpenAIProvider
) -> None:
    disk = Disk()
    openai_server.push(
        Reply(tool_calls=(call("delete", "c1", path="a.txt"),)), Reply(text="ok, kept")
    )
    async with Session(provider, tools=disk.tools()) as session:
        events = session.subscribe()
        handle = session.send("delete a.txt")
        await requested(events)
        session.approvals.deny("c1", "keep it")
        outcome = await handle
    assert outcome.status is TurnStatus.COMPLETED
    assert disk.deleted == []
    (result,) = tool_results(openai_server)
    assert result["content"] == DENIED_TOOL_TEXT.format(reason=": keep it")


async def test_an_edit_is_checked_against_the_schema_then_runs(
    openai_server: OpenAIWireServer, provider: OpenAIProvider
) -> None:
    disk = Disk()
    openai_server.push(Reply(tool_calls=(call("delete", "c1", path="a.txt"),)), Reply(text="done"))
    async with Session(provider, tools=disk.tools()) as session:
        events = session.subscribe()
        handle = session.send("delete a.txt")
        await requested(events)
        for bad in ({"path": 3}, {"file": "b"}, "not json", "[1]"):
            with pytest.raises(InvalidEditError):
                session.approvals.approve("c1", arguments=bad)
        assert session.approvals.pending()  # a refused edit records nothing
        session.approvals.approve("c1", arguments={"path": "b.txt"})
        outcome = await handle
    assert outcome.status is TurnStatus.COMPLETED
    assert disk.deleted == ["b.txt"]
    (result,) = tool_results(openai_server)
    assert "edited arguments" in result["content"] and "deleted b.txt" in result["content"]


async def test_the_timeout_denies_a_call_nobody_decided(
    openai_server: OpenAIWireServer, provider: OpenAIProvider
) -> None:
    disk = Disk()
    openai_server.push(Reply(tool_calls=(call("delete", "c1", path="a"),)), Reply(text="ok"))
    config = SessionConfig(approval_timeout=0.05)
    async with Session(provider, tools=disk.tools(), config=config) as session:
        events = session.subscribe()
        outcome = await session.send("delete a")
    decided = [e.event for e in _drain(events) if isinstance(e.event, ApprovalDecided)]
    assert [(d.decision.approved, d.decision.by) for d in decided] == [(False, "timeout")]
    assert outcome.status is TurnStatus.COMPLETED and disk.deleted == []


async def test_the_timeout_can_remind_instead(
    openai_server: OpenAIWireServer, provider: OpenAIProvider
) -> None:
    disk = Disk()
    openai_server.push(Reply(tool_calls=(call("delete", "c1", path="a"),)), Reply(text="ok"))
    config = SessionConfig(approval_timeout=0.02, approval_expiry="remind")
    async with Session(provider, tools=disk.tools(), config=config) as session:
        events = session.subscribe()
        handle = session.send("delete a")
        reminders = 0
        async for event in events:
            if isinstance(event.event, ApprovalRequested) and event.event.reminder:
                reminders += 1
                if reminders == 2:
                    break
        session.approvals.approve("c1")
        assert (await handle).status is TurnStatus.COMPLETED
    assert disk.deleted == ["a"]


async def test_parallel_calls_the_free_ones_run_the_held_one_waits(
    openai_server: OpenAIWireServer, provider: OpenAIProvider
) -> None:
    disk = Disk()
    openai_server.push(
        Reply(tool_calls=(call("look", "r1", path="x"), call("delete", "d1", path="x"))),
        Reply(text="done"),
    )
    async with Session(provider, tools=disk.tools()) as session:
        events = session.subscribe()
        handle = session.send("read then delete x")
        await requested(events)
        assert disk.read == ["x"] and disk.deleted == []
        assert len(openai_server.chat_requests()) == 1  # the model waits for both results
        session.approvals.approve("d1")
        await handle
    assert disk.deleted == ["x"]
    assert sorted(m["tool_call_id"] for m in tool_results(openai_server)) == ["d1", "r1"]


async def test_inputs_while_waiting_queue_or_are_refused(
    openai_server: OpenAIWireServer, provider: OpenAIProvider
) -> None:
    disk = Disk()
    openai_server.push(
        Reply(tool_calls=(call("delete", "c1", path="a"),)), Reply(text="one"), Reply(text="two")
    )
    async with Session(provider, tools=disk.tools()) as session:
        events = session.subscribe()
        first = session.send("delete a")
        await requested(events)
        second = session.send("and then?")  # queued behind the held turn
        assert not second.done
        session.approvals.approve("c1")
        assert (await first).text == "one" and (await second).text == "two"
    openai_server.push(Reply(tool_calls=(call("delete", "c2", path="b"),)), Reply(text="x"))
    config = SessionConfig(while_waiting="reject")
    async with Session(provider, tools=disk.tools(), config=config) as session:
        events = session.subscribe()
        first = session.send("delete b")
        await requested(events)
        with pytest.raises(ApprovalPendingError):
            session.send("more")
        session.approvals.deny("c2")
        await first


async def test_a_tool_set_policy_holds_calls_by_their_arguments(
    openai_server: OpenAIWireServer, provider: OpenAIProvider
) -> None:
    disk = Disk()
    tools = ToolSet(disk.tools()[1:], needs_approval=lambda c: "secret" in c.arguments)
    openai_server.push(
        Reply(tool_calls=(call("look", "r1", path="public"), call("look", "r2", path="secret"))),
        Reply(text="done"),
    )
    async with Session(provider, tools=tools) as session:
        events = session.subscribe()
        handle = session.send("read both")
        asked = await requested(events)
        assert asked.pending.call.id == "r2" and disk.read == ["public"]
        session.approvals.approve("r2")
        await handle
    assert disk.read == ["public", "secret"]


async def test_a_stateless_query_returns_the_held_call_and_resumes_with_decisions(
    openai_server: OpenAIWireServer, provider: OpenAIProvider
) -> None:
    disk = Disk()
    openai_server.push(Reply(tool_calls=(call("delete", "c1", path="q"),)), Reply(text="done"))
    query = Query(provider, tools=disk.tools())
    first = await query.run([], "delete q")
    assert first.stop_reason == "awaiting_approval" and [c.id for c in first.pending] == ["c1"]
    history = [*_inputs(openai_server), *first.messages]
    from xai.messages import ApprovalDecision

    second = await query.run(
        history, decisions={"c1": ApprovalDecision(call_id="c1", approved=True)}
    )
    assert second.stop_reason == "end_turn" and disk.deleted == ["q"]
    assert isinstance(second.messages[0], ToolMessage)


async def test_suspended_while_waiting_then_reopened_the_decision_applies_once(
    openai_server: OpenAIWireServer, provider: OpenAIProvider, tmp_path: Path
) -> None:
    disk = Disk()
    openai_server.push(Reply(tool_calls=(call("delete", "c1", path="a"),)), Reply(text="done"))
    session = Session(provider, tools=disk.tools(), directory=tmp_path)
    async with anyio.create_task_group() as group:
        await group.start(session.run)
        events = session.subscribe()
        handle = session.send("delete a")
        await requested(events)
        await session.suspend()
    assert (await handle).status is TurnStatus.AWAITING_APPROVAL
    view = JournalView.read(tmp_path / JOURNAL_FILE)
    assert [a.call.id for a in view.approvals] == ["c1"] and view.open_turn == 1
    again = Session.reopen(tmp_path, provider, tools=disk.tools())
    assert [p.call.id for p in again.approvals.pending()] == ["c1"]
    again.approvals.approve("c1")  # decided before it even runs: journaled, applied on start
    async with again:
        events = again.subscribe()
        async for event in events:
            if type(event.event).__name__ == "TurnDone":
                assert event.event.outcome.status is TurnStatus.COMPLETED  # type: ignore[union-attr]
                break
    assert disk.deleted == ["a"]
    view = JournalView.read(tmp_path / JOURNAL_FILE)
    assert view.approvals == [] and view.open_turn is None
    # Reopened once more: nothing waits, nothing runs again.
    async with Session.reopen(tmp_path, provider, tools=disk.tools()) as third:
        assert third.approvals.pending() == ()
    assert disk.deleted == ["a"]


async def test_an_approved_call_started_before_a_stop_never_runs_again(
    openai_server: OpenAIWireServer, provider: OpenAIProvider, tmp_path: Path
) -> None:
    """The journal says the approved call started and has no result (the process died in
    it): the reopened Session answers it interrupted, the model goes on."""
    disk = Disk()
    openai_server.push(Reply(tool_calls=(call("delete", "c1", path="a"),)), Reply(text="sorry"))
    session = Session(provider, tools=disk.tools(), directory=tmp_path)
    async with anyio.create_task_group() as group:
        await group.start(session.run)
        events = session.subscribe()
        session.send("delete a")
        await requested(events)
        await session.suspend()
    from xai.messages import ApprovalDecision
    from xai.session._journal import append_records
    from xai.session._records import ApprovalDecidedRecord, ToolStartRecord

    append_records(
        tmp_path / JOURNAL_FILE,
        ApprovalDecidedRecord(decision=ApprovalDecision(call_id="c1", approved=True)),
        ToolStartRecord(turn=1, call_id="c1"),
    )
    async with Session.reopen(tmp_path, provider, tools=disk.tools()) as again:
        assert again.approvals.pending() == ()
        outcome = await again.continue_turn()
    assert disk.deleted == []  # it "ran" before the stop: never again
    assert outcome.status is TurnStatus.COMPLETED
    assert "interrupted" in tool_results(openai_server)[0]["content"]


async def test_closed_while_waiting_the_call_never_runs(
    openai_server: OpenAIWireServer, provider: OpenAIProvider
) -> None:
    disk = Disk()
    openai_server.push(Reply(tool_calls=(call("delete", "c1", path="a"),)))
    async with Session(provider, tools=disk.tools()) as session:
        events = session.subscribe()
        handle = session.send("delete a")
        await requested(events)
        await session.close()
    outcome = await handle
    assert outcome.status is TurnStatus.CANCELLED and disk.deleted == []
    assert isinstance(session.history[-1], ToolMessage) and session.history[-1].synthetic


async def test_a_helpers_held_call_surfaces_at_the_parent(
    openai_server: OpenAIWireServer, provider: OpenAIProvider
) -> None:
    disk = Disk()

    def script(body: Mapping[str, Any]) -> Reply | None:
        system = str(body["messages"][0].get("content", ""))
        tools = [m for m in body["messages"] if m["role"] == "tool"]
        if "helper" in system:
            if not tools:
                return Reply(tool_calls=(call("delete", "h1", path="tmp"),))
            return Reply(text="helper done")
        if not tools:
            return Reply(tool_calls=(call("delegate", "p1", task="clean tmp"),))
        return Reply(text="all clean")

    openai_server.script.add_responder(script)
    config = SessionConfig(delegation=True)
    async with Session(provider, tools=disk.tools(), config=config) as parent:
        events = parent.subscribe()
        handle = parent.send("clean up")
        asked = await requested(events)
        assert asked.pending.session_id != parent.id  # the helper asked
        assert [p.call.id for p in parent.approvals.pending()] == ["h1"]
        parent.approvals.approve("h1")
        outcome = await handle
    assert outcome.text == "all clean" and disk.deleted == ["tmp"]
    decided = [e.event for e in _drain(events) if isinstance(e.event, ApprovalDecided)]
    assert [d.decision.call_id for d in decided] == ["h1"]


async def test_the_approved_call_start_is_journaled_before_it_runs(
    openai_server: OpenAIWireServer, provider: OpenAIProvider, tmp_path: Path
) -> None:
    seen: list[set[str]] = []

    @tool(needs_approval=True)
    def act() -> str:
        """Act."""
        seen.append(JournalView.read(tmp_path / JOURNAL_FILE, repair=False).tools_started)
        return "acted"

    openai_server.push(Reply(tool_calls=(call("act", "c1"),)), Reply(text="done"))
    async with Session(provider, tools=[act], directory=tmp_path) as session:
        events = session.subscribe()
        handle = session.send("act")
        await requested(events)
        session.approvals.approve("c1")
        await handle
        started = [e for e in _drain(events) if isinstance(e.event, ToolCallStarted)]
    assert seen == [{"c1"}] and len(started) == 1


def _drain(subscription: Any) -> list[SessionEvent]:
    out: list[SessionEvent] = []
    while (event := subscription.get_nowait()) is not None:
        out.append(event)
    return out


def _inputs(server: OpenAIWireServer) -> list[Any]:
    from xai.messages import UserMessage

    return [UserMessage(content="delete q")]


async def test_the_wait_is_a_span_of_the_turn(openai_server: OpenAIWireServer) -> None:
    """OTel: ``xai.session.approval_wait`` sits in the turn between the round that asked
    and the approved tool's ``execute_tool`` span."""
    from tests.test_telemetry import Traces, attrs, tree
    from xai.testing import ScriptedProvider

    traces = Traces()
    disk = Disk()
    provider = ScriptedProvider(
        [Reply(tool_calls=(call("delete", "c1", path="a"),)), Reply(text="done")]
    )
    try:
        async with Session(provider, tools=disk.tools(), telemetry=traces.telemetry) as session:
            events = session.subscribe()
            handle = session.send("delete a")
            await requested(events)
            session.approvals.approve("c1")
            await handle
        (turn,) = traces.named("xai.session.turn")
        assert tree(traces, turn) == [
            "xai.session.turn",
            "  chat scripted",
            "  xai.session.approval_wait",
            "  execute_tool delete",
            "  chat scripted",
        ], tree(traces, turn)
        wait = attrs(traces.one("xai.session.approval_wait"))
        assert wait["xai.approval.calls"] == 1 and wait["xai.approval.tools"] == ("delete",)
    finally:
        traces.close()


async def test_cancel_while_waiting_ends_the_turn_and_the_call_never_runs(
    openai_server: OpenAIWireServer, provider: OpenAIProvider
) -> None:
    disk = Disk()
    openai_server.push(
        Reply(tool_calls=(call("delete", "c1", path="a"),)), Reply(text="next answer")
    )
    async with Session(provider, tools=disk.tools()) as session:
        events = session.subscribe()
        handle = session.send("delete a")
        await requested(events)
        assert session.cancel() is True
        outcome = await handle
        assert outcome.status is TurnStatus.CANCELLED and session.state is SessionState.RUNNING
        assert session.approvals.pending() == ()
        assert (await session.send("and now?")).text == "next answer"  # a valid history
    assert disk.deleted == []
    assert (
        "cancelled or closed before a person decided" in tool_results(openai_server)[0]["content"]
    )
