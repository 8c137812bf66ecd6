"""An Agent's start, acting on what ``scan_sessions`` found under ``sessions/``: reopen the
live Sessions, decide the candidates closed journals left behind, record their episodes,
quarantine damaged journals. These run in the Agent's ``run`` task, before it reports started.

``resume_sessions`` is handed what it acts with (the memory, the adjudication, a way to
reopen and close Sessions, a way to publish), never the Agent.
"""

from __future__ import annotations

from pathlib import Path
from typing import Protocol, assert_never

import anyio

from xai.agent._adjudication import Adjudication, Publish
from xai.agent._jobs import Job
from xai.agent._resume import (
    Damaged,
    Done,
    LeftOver,
    Reopen,
    Unrecorded,
    list_done,
    scan_sessions,
    set_aside,
)
from xai.events import JournalQuarantined
from xai.logs import get_logger
from xai.memory import LongTermMemory
from xai.messages import CloseReason
from xai.session import JournalState, Session

__all__ = ["Reopener", "resume_sessions"]

_log = get_logger("xai.agent._agent")  # the Agent's own lines


class Reopener(Protocol):
    """How a restart brings a Session back (``SessionSet``)."""

    async def reopen(self, directory: Path, state: JournalState) -> Session:
        """Reopen and start the Session a journal left open."""
        ...

    def close_soon(self, session: Session, reason: CloseReason) -> None:
        """Close it in a task of the Agent's."""
        ...


async def resume_sessions(
    root: Path,
    memory: LongTermMemory,
    adjudication: Adjudication,
    sessions: Reopener,
    publish: Publish,
) -> None:
    """Act on every journal found under ``root`` (the Agent's ``sessions/``; each read
    once, in a worker thread): see ``xai.agent._resume``."""
    known = memory.episodes.__contains__
    found = await anyio.to_thread.run_sync(scan_sessions, root, known)
    done: list[str] = []  # closed journals read, now completely done
    for item in found:
        if isinstance(item, Reopen):
            await _reopen(item, adjudication, sessions)
        elif isinstance(item, LeftOver):
            await memory.record_episodes(item.episodes)
            await adjudication.decide_left_over(item.session_id, item.candidates, item.history)
            # (the memory has decided them: its decisions are the acknowledgement)
            done.append(item.session_id)
        elif isinstance(item, Unrecorded):
            await memory.record_episodes(item.episodes)
            done.append(item.session_id)
        elif isinstance(item, Damaged):
            await _quarantine(item, memory, adjudication, publish)
        elif isinstance(item, Done):
            done.append(item.session_id)
        else:
            assert_never(item)
    await anyio.to_thread.run_sync(list_done, root, done)


async def _reopen(item: Reopen, adjudication: Adjudication, sessions: Reopener) -> None:
    state = item.state
    session = await sessions.reopen(item.directory, state)
    retire: CloseReason | None = state.closing
    if retire is None and state.parent_id is not None:
        retire = "cancelled"  # an orphan: its parent's delegate call was interrupted
    if retire is not None:
        # Closed at once: its finalising hook hands its candidates to the adjudicator.
        sessions.close_soon(session, retire)
        return
    pending = tuple(state.unacknowledged)
    if pending:
        await adjudication.enqueue(Job(session.id, pending, session, None))


async def _quarantine(
    item: Damaged, memory: LongTermMemory, adjudication: Adjudication, publish: Publish
) -> None:
    """Keep what the journal's readable lines say, then set the file aside for good."""
    await memory.record_episodes(item.episodes)
    await adjudication.decide_left_over(item.session_id, item.candidates, item.history)
    moved = await anyio.to_thread.run_sync(set_aside, item.journal)
    _log.error(
        "agent.journal_quarantined",
        path=str(item.journal),
        moved_to=str(moved),
        error=item.error,
        recovered_candidates=len(item.candidates),
    )
    publish(
        item.session_id,
        JournalQuarantined(
            path=str(item.journal),
            moved_to=str(moved),
            error=item.error,
            recovered_candidates=len(item.candidates),
        ),
    )
