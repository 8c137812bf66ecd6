"""Inputs are on disk when ``send()`` accepts them: a restart runs those that never started,
in order; inputs a close dropped, or the turn budget refused, never run again."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.test_session_repair import answer_everything, freeze_call, snapshotting
from xai.exceptions import SessionClosedError
from xai.messages import TurnStatus, UserMessage
from xai.session import JOURNAL_FILE, Session, SessionConfig, read_journal
from xai.session._journal import read_records
from xai.session._records import AcceptedRecord, DroppedRecord, TurnEndRecord
from xai.testing import ScriptedProvider

pytestmark = pytest.mark.anyio


def user_inputs(session: Session) -> list[str]:
    return [m.content for m in session.history if isinstance(m, UserMessage)]


async def test_inputs_waiting_when_the_process_dies_run_after_a_restart(tmp_path: Path) -> None:
    """Old: an input was journaled only when its turn began; the queue died with the process."""
    live = tmp_path / "live"
    freeze, taken = snapshotting(live, tmp_path)
    provider = ScriptedProvider([freeze_call("crashed", "c1")])
    async with Session(provider, tools=[freeze], directory=live) as session:
        session.send("first")
        second = session.send("second")
        third = session.send("third", policy="queue")
        await taken[-1].wait()  # the first turn is in its tool: a kill now keeps this copy
        await session.close("cancelled")
    assert second.outcome is not None and second.outcome.status is TurnStatus.CANCELLED
    assert third.done
    # the live Session closed and dropped them: its journal says so
    assert any(isinstance(r, DroppedRecord) for r in read_records(live / JOURNAL_FILE))

    provider = ScriptedProvider()
    provider.script.add_responder(answer_everything)
    crashed = tmp_path / "crashed"
    restarted = Session.reopen(crashed, provider, tools=[freeze])
    assert [h.input.content for h in restarted.requeued if h.input] == ["second", "third"]
    assert restarted.pending_inputs == 2
    async with restarted:
        outcomes = [await handle for handle in restarted.requeued]
    assert [(o.turn, o.status) for o in outcomes] == [
        (2, TurnStatus.COMPLETED),
        (3, TurnStatus.COMPLETED),
    ]
    assert user_inputs(restarted) == ["first", "second", "third"]
    # run once: a second restart has nothing left to run
    assert read_journal(crashed / JOURNAL_FILE).pending == []


async def test_an_interrupting_input_goes_first_after_a_restart_too(tmp_path: Path) -> None:
    directory = tmp_path / "s"
    session = Session(ScriptedProvider(), directory=directory)
    session.send("queued")
    session.send("urgent", policy="interrupt")  # accepted before the Session ever ran
    shutil.copytree(directory, tmp_path / "killed")  # a kill -9 right now
    await session.close()
    assert read_journal(directory / JOURNAL_FILE).pending == []  # closed: dropped
    state = read_journal(tmp_path / "killed" / JOURNAL_FILE)
    assert [m.content for m in state.pending] == ["urgent", "queued"]
    records = read_records(tmp_path / "killed" / JOURNAL_FILE)
    assert [type(r).__name__ for r in records] == [
        "HeaderRecord",
        "AcceptedRecord",
        "AcceptedRecord",
    ]
    assert isinstance(records[2], AcceptedRecord) and records[2].interrupt


async def test_a_turn_refused_by_the_budget_is_journaled_and_not_run_again(
    tmp_path: Path,
) -> None:
    """Old: the budget's ``TurnDone`` had no journal record."""
    provider = ScriptedProvider()
    provider.script.add_responder(answer_everything)
    config = SessionConfig(max_turns=1)
    async with Session(provider, config=config, directory=tmp_path) as session:
        await session.send("one")
        refused = await session.send("two")
    assert refused.status is TurnStatus.BUDGET_EXHAUSTED
    records = read_records(tmp_path / JOURNAL_FILE)
    ends = [r.outcome for r in records if isinstance(r, TurnEndRecord)]
    assert ends[-1] == refused
    state = read_journal(tmp_path / JOURNAL_FILE)
    assert state.pending == [] and state.turns == 1
    async with Session.reopen(tmp_path, provider, config=config) as again:
        assert again.requeued == ()
    assert len(provider.requests) == 1


async def test_send_before_the_session_runs_is_journaled_and_runs_once(tmp_path: Path) -> None:
    provider = ScriptedProvider()
    provider.script.add_responder(answer_everything)
    session = Session(provider, directory=tmp_path)
    handle = session.send("early")
    assert (tmp_path / JOURNAL_FILE).exists()
    async with session:
        outcome = await handle
    assert outcome.turn == 1 and user_inputs(session) == ["early"]
    assert len(provider.requests) == 1
    assert read_journal(tmp_path / JOURNAL_FILE).pending == []


async def test_a_session_that_never_ran_closes_its_early_journal(tmp_path: Path) -> None:
    session = Session(ScriptedProvider(), directory=tmp_path)
    handle = session.send("never run")
    await session.close()
    assert handle.outcome is not None and handle.outcome.status is TurnStatus.CANCELLED
    state = read_journal(tmp_path / JOURNAL_FILE)
    assert state.pending == [] and state.closed == "closed"
    with pytest.raises(SessionClosedError):
        session.send("too late")


async def test_inputs_run_in_order_across_many_sends(tmp_path: Path) -> None:
    provider = ScriptedProvider()
    provider.script.add_responder(answer_everything)
    async with Session(provider, directory=tmp_path) as session:
        handles = [session.send(f"q{i}") for i in range(20)]
        for handle in handles:
            await handle
    assert user_inputs(session) == [f"q{i}" for i in range(20)]
    accepted = [r for r in read_records(tmp_path / JOURNAL_FILE) if isinstance(r, AcceptedRecord)]
    assert [r.message.content for r in accepted] == [f"q{i}" for i in range(20)]
    # everything accepted was started once
    assert read_journal(tmp_path / JOURNAL_FILE).pending == []
