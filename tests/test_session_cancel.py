"""Cancels that land at awkward moments: while a tool-call message is being journaled with
``fsync="commit"``, and while a delegated child has not reached its Query."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from tests.session_helpers import drain, history_problems, journal_as_written
from tests.test_query import add
from xai.events import MessageCommitted, TurnStarted
from xai.messages import AssistantMessage, ToolMessage, TurnStatus
from xai.session import JOURNAL_FILE, Session, SessionConfig, read_journal
from xai.session._journal import Journal
from xai.session._records import MessageRecord, Record
from xai.testing import Delay, Reply, ScriptedCall, ScriptedProvider

pytestmark = pytest.mark.anyio


def has_calls(record: Record) -> bool:
    return (
        isinstance(record, MessageRecord)
        and isinstance(record.message, AssistantMessage)
        and bool(record.message.tool_calls)
    )


async def test_cancel_while_the_tool_call_message_is_synced(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The cancel comes right after the assistant message with tool calls is written, while
    the Session awaits its fsync. Old: the Query had not yet noted the calls as pending, so
    its salvage answered none and the journal kept a call without a result."""
    provider = ScriptedProvider(
        [Reply(tool_calls=(ScriptedCall(name="add", arguments={"a": 1, "b": 2}, id="c1"),))]
    )
    session = Session(
        provider, tools=[add], directory=tmp_path, config=SessionConfig(fsync="commit")
    )
    append = Journal.append

    def append_then_cancel(journal: Journal, record: Record) -> None:
        append(journal, record)
        if has_calls(record):
            session.cancel()

    monkeypatch.setattr(Journal, "append", append_then_cancel)
    async with session:
        committed = session.subscribe()
        outcome = await session.send("add them")
    assert outcome.status is TurnStatus.CANCELLED
    written = journal_as_written(tmp_path / JOURNAL_FILE)
    assert history_problems(written) == []
    assert isinstance(written[-1], ToolMessage) and written[-1].synthetic
    assert history_problems(read_journal(tmp_path / JOURNAL_FILE).history) == []
    # observers heard of each journaled message exactly once
    told = [e.event.message for e in drain(committed) if isinstance(e.event, MessageCommitted)]
    assert told == written[1:]


async def test_a_cancelled_delegation_closes_a_child_that_has_not_reached_its_query() -> None:
    """The parent's turn is cancelled while the child's turn for the task waits in its inbox
    (the child is busy with an earlier input). Old: ``child.cancel()`` cancelled only the
    running turn, the task's turn then ran, and the child was left running once the grace
    period ended."""
    provider = ScriptedProvider()
    provider.push(
        Reply(tool_calls=(ScriptedCall(name="delegate", arguments={"task": "t"}, id="d1"),)),
        Reply(text="warm-up answer, much later", fault=Delay(seconds=30)),
        Reply(text="task answer, much later", fault=Delay(seconds=30)),
    )
    children: list[Session] = []

    async def factory(parent: Session, task: str) -> Session:
        child = Session(provider, config=parent.config)
        await group.start(child.run)
        children.append(child)
        events = child.subscribe()
        child.send("warm-up")
        async for event in events:
            if isinstance(event.event, TurnStarted):
                break  # the child is busy: the task will wait in its inbox
        parent.cancel()
        return child

    config = SessionConfig(delegation=True)
    parent = Session(provider, config=config, child_factory=factory)
    async with anyio.create_task_group() as group:
        await group.start(parent.run)
        try:
            outcome = await parent.send("delegate it")
            (child,) = children
            assert child.state == "closed"  # closed with the cancelled call, not left running
            await parent.close()
        finally:
            group.cancel_scope.cancel()  # (a child left running must not hold the test)
    assert outcome.status is TurnStatus.CANCELLED
    assert history_problems(parent.history) == []
    assert len(provider.requests) == 2  # the task's turn never reached the model
