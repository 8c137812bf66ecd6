"""A Session's lifecycle: one state machine whose every move is checked, seen through the
public ``Session.state`` (a ``str`` enum) on the way from ``new`` to ``closed`` or
``suspended``."""

from __future__ import annotations

import itertools

import anyio
import pytest

from xai.events import SessionEvent, TextDelta, TurnDone
from xai.exceptions import LifecycleError, UsageError
from xai.messages import TurnStatus
from xai.session import Session, SessionState
from xai.session._lifecycle import Lifecycle
from xai.testing import Reply, ScriptedProvider

pytestmark = pytest.mark.anyio

S = SessionState
ALLOWED = {
    (S.NEW, S.RUNNING),
    (S.NEW, S.CLOSED),
    (S.RUNNING, S.SUSPENDING),
    (S.RUNNING, S.CLOSING),
    (S.SUSPENDING, S.SUSPENDED),
    (S.SUSPENDING, S.CLOSING),
    (S.CLOSING, S.CLOSED),
    (S.RUNNING, S.WAITING),  # a tool call waits for a person (docs/approvals.md)
    (S.WAITING, S.RUNNING),
    (S.WAITING, S.SUSPENDING),
    (S.WAITING, S.CLOSING),
}
"""The diagram of docs/architecture.md and ``_lifecycle``'s docstring, move by move."""


def test_every_move_is_checked_against_the_diagram() -> None:
    for source, target in itertools.product(S, S):
        machine = Lifecycle("session t")
        machine.state = source
        if (source, target) in ALLOWED:
            machine.transition(target)
            assert machine.state is target
        else:
            with pytest.raises(LifecycleError) as raised:
                machine.transition(target)
            assert (raised.value.state, raised.value.target) == (source.value, target.value)
            assert isinstance(raised.value, UsageError)
            assert machine.state is source  # a refused move changes nothing


def test_the_state_is_still_a_string() -> None:
    state: str = S.RUNNING  # what code comparing ``session.state`` with a string sees
    assert state == "running" and f"{S.CLOSED}" == "closed"
    assert [s.value for s in S] == [
        "new",
        "running",
        "waiting",
        "suspending",
        "suspended",
        "closing",
        "closed",
    ]


def watch(session: Session) -> tuple[anyio.Event, list[SessionState]]:
    """An event set at the turn's first text, and the state each ``turn_done`` saw."""
    started = anyio.Event()
    at_turn_done: list[SessionState] = []

    def note(event: SessionEvent) -> None:
        if isinstance(event.event, TextDelta):
            started.set()
        elif isinstance(event.event, TurnDone):
            at_turn_done.append(session.state)

    session.listen(note)
    return started, at_turn_done


async def test_a_close_moves_through_closing_while_the_turn_is_torn_down() -> None:
    provider = ScriptedProvider([Reply(text="s" * 200, chunk_chars=1, chunk_delay=0.01)])
    session = Session(provider)
    seen: list[SessionState] = [session.state]
    hooked: list[SessionState] = []
    session.on_session_finalizing.append(lambda _: hooked.append(session.state))
    started, at_turn_done = watch(session)
    async with anyio.create_task_group() as group:
        await group.start(session.run)
        seen.append(session.state)
        handle = session.send("talk")
        await started.wait()
        await session.close()
    seen.append(session.state)
    assert (await handle).status is TurnStatus.CANCELLED
    assert seen == [S.NEW, S.RUNNING, S.CLOSED]
    # closing from the moment the close was asked for: the cancelled turn ends in it
    assert at_turn_done == [S.CLOSING] and hooked == [S.CLOSING]


async def test_a_suspend_moves_through_suspending_while_the_turn_finishes() -> None:
    provider = ScriptedProvider([Reply(text="done", chunk_chars=1, chunk_delay=0.01)])
    session = Session(provider)
    started, at_turn_done = watch(session)
    async with anyio.create_task_group() as group:
        await group.start(session.run)
        handle = session.send("talk")
        await started.wait()
        session.begin_suspend()
        assert session.state is S.SUSPENDING
        outcome = await handle
        await session.suspend()
    assert outcome.status is TurnStatus.COMPLETED  # a suspend never interrupts a turn
    assert at_turn_done == [S.SUSPENDING] and session.state is S.SUSPENDED


async def test_a_session_closed_before_it_ran_goes_straight_to_closed() -> None:
    session = Session(ScriptedProvider([]))
    await session.close()
    assert session.state is S.CLOSED
