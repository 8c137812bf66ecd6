"""A Session is not recorded closed while it holds candidates its owner has not taken:
a hook that fails or times out leaves the journal ``closing``; a late acknowledgement, or
a close after a restart, finishes it."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from tests.session_helpers import extraction_responder, is_side_request, last_content
from xai.exceptions import SessionClosedError
from xai.messages import MemoryCandidate
from xai.session import (
    JOURNAL_FILE,
    FinalizingContext,
    Session,
    SessionConfig,
    aread_journal,
    read_journal,
)
from xai.session._journal import read_records
from xai.session._records import ClosedRecord, ClosingRecord
from xai.testing import Reply, ScriptedProvider

pytestmark = pytest.mark.anyio


def provider_with_candidates() -> ScriptedProvider:
    provider = ScriptedProvider()
    provider.script.add_responder(extraction_responder)
    provider.script.add_responder(
        lambda body: None if is_side_request(body) else Reply(text=f"ok: {last_content(body)}")
    )
    return provider


async def talk(directory: Path, config: SessionConfig, *hooks: object) -> Session:
    """A Session with two candidates, closed with ``hooks``."""
    session = Session(provider_with_candidates(), config=config, directory=directory)
    session.on_session_finalizing.extend(hooks)  # type: ignore[arg-type]
    async with session:
        await session.send("I live in Porto")
        await session.send("I keep bees")
    assert len(session.candidates) == 2
    return session


def pending(session: Session) -> bool:
    return session.closing_pending


def kinds(directory: Path) -> list[str]:
    return [type(r).__name__ for r in read_records(directory / JOURNAL_FILE)]


async def test_a_failing_hook_leaves_the_journal_closing(tmp_path: Path) -> None:
    """Old: the journal said ``closed`` and nobody would ever hand these candidates over."""

    def broken(context: FinalizingContext) -> None:
        raise RuntimeError("the owner is gone")

    session = await talk(tmp_path, SessionConfig(extract_memory=True), broken)
    assert session.state == "closed" and session.closing_pending
    state = read_journal(tmp_path / JOURNAL_FILE)
    assert state.closing == "closed" and state.closed is None
    assert [c.id for c in state.unacknowledged] == [c.id for c in session.candidates]
    assert kinds(tmp_path)[-1] == "ClosingRecord"


async def test_hooks_that_return_normally_took_the_candidates(tmp_path: Path) -> None:
    taken: list[MemoryCandidate] = []
    await talk(tmp_path, SessionConfig(extract_memory=True), lambda c: taken.extend(c.candidates))
    assert len(taken) == 2
    assert read_journal(tmp_path / JOURNAL_FILE).closed == "closed"
    # and a Session nobody hooks is closed as before
    plain = await talk(tmp_path / "plain", SessionConfig(extract_memory=True))
    assert not plain.closing_pending and kinds(tmp_path / "plain")[-1] == "ClosedRecord"


async def test_a_late_acknowledgement_completes_a_close_the_hook_could_not_wait_for(
    tmp_path: Path,
) -> None:
    release = anyio.Event()

    async def slow_owner(context: FinalizingContext) -> None:
        await release.wait()

    config = SessionConfig(extract_memory=True, hook_timeout=0.01)
    session = await talk(tmp_path, config, slow_owner)  # the hook times out
    assert session.closing_pending
    first, second = session.candidates
    session.acknowledge_candidates([first.id])  # after close: appended to the file
    assert read_journal(tmp_path / JOURNAL_FILE).closing == "closed"
    session.acknowledge_candidates([first.id, second.id])
    state = read_journal(tmp_path / JOURNAL_FILE)
    assert state.closed == "closed" and state.closing is None and state.unacknowledged == []
    assert not pending(session)
    written = kinds(tmp_path)
    assert written[-3:] == ["ReportedRecord", "ReportedRecord", "ClosedRecord"]
    session.acknowledge_candidates([second.id])  # nothing new: nothing written
    assert kinds(tmp_path) == written


async def test_a_closing_journal_reopens_to_be_closed_not_to_talk(tmp_path: Path) -> None:
    def broken(context: FinalizingContext) -> None:
        raise RuntimeError("no owner")

    await talk(tmp_path, SessionConfig(extract_memory=True), broken)
    state = await anyio.to_thread.run_sync(read_journal, tmp_path / JOURNAL_FILE)
    assert state.closing == "closed"
    (tmp_path / "moved").mkdir()
    # ``state=``: the journal is not read again (here it is not even where it was)
    (tmp_path / JOURNAL_FILE).rename(tmp_path / "moved" / JOURNAL_FILE)
    provider = provider_with_candidates()
    reopened = Session.reopen(tmp_path / "moved", provider, state=state)
    handed: list[FinalizingContext] = []
    reopened.on_session_finalizing.append(handed.append)
    async with reopened:
        assert reopened.requeued == () and reopened.closing_pending
        with pytest.raises(SessionClosedError, match="close"):
            reopened.send("hello?")
        with pytest.raises(SessionClosedError):
            reopened.continue_turn()
        await reopened.close(state.closing)
    (context,) = handed
    assert [c.id for c in context.candidates] == [c.id for c in state.unacknowledged]
    assert read_journal(tmp_path / "moved" / JOURNAL_FILE).closed == "closed"
    assert provider.requests == []
    records = read_records(tmp_path / "moved" / JOURNAL_FILE)
    assert isinstance(records[-1], ClosedRecord)
    assert sum(isinstance(r, ClosingRecord) for r in records) == 1


async def test_a_journal_read_off_the_event_loop_reopens_a_session(tmp_path: Path) -> None:
    await talk(tmp_path, SessionConfig(extract_memory=True))
    state = await aread_journal(tmp_path / JOURNAL_FILE)
    session = Session.reopen(tmp_path, provider_with_candidates(), state=state)
    assert len(session.candidates) == 2 and session.turns == 2


async def test_an_acknowledgement_before_a_reopened_session_runs_is_journaled(
    tmp_path: Path,
) -> None:
    await talk(tmp_path, SessionConfig(extract_memory=True), lambda context: None)
    reopened = Session.reopen(tmp_path, provider_with_candidates())
    first = reopened.candidates[0]
    reopened.acknowledge_candidates([first.id])  # not running: straight to the file
    assert first.id in read_journal(tmp_path / JOURNAL_FILE).reported
