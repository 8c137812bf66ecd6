"""An Agent's start, acting on what ``scan_sessions`` found under ``sessions/``: reopen the
live Sessions, decide the candidates closed journals left behind, record their episodes,
quarantine damaged journals. These run in the Agent's ``run`` task, before it reports started.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, assert_never

import anyio

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
from xai.events import JournalQuarantined, SessionOpened
from xai.logs import get_logger
from xai.messages import CloseReason
from xai.session import Session

if TYPE_CHECKING:
    from xai.agent._agent import Agent

__all__ = ["resume_sessions"]

_log = get_logger("xai.agent._agent")  # the Agent's own lines


async def resume_sessions(self: Agent) -> None:
    """Act on every journal found under ``sessions/`` (each read once, in a worker
    thread): see ``xai.agent._resume``."""
    known = self.memory.episodes.__contains__
    root = self.directory / "sessions"
    found = await anyio.to_thread.run_sync(scan_sessions, root, known)
    done: list[str] = []  # closed journals read, now completely done
    for item in found:
        if isinstance(item, Reopen):
            await _reopen(self, item)
        elif isinstance(item, LeftOver):
            await self.memory.record_episodes(item.episodes)
            await self.adjudication.decide_left_over(item.session_id, item.candidates, item.history)
            # (the memory has decided them: its decisions are the acknowledgement)
            done.append(item.session_id)
        elif isinstance(item, Unrecorded):
            await self.memory.record_episodes(item.episodes)
            done.append(item.session_id)
        elif isinstance(item, Damaged):
            await _quarantine(self, item)
        elif isinstance(item, Done):
            done.append(item.session_id)
        else:
            assert_never(item)
    await anyio.to_thread.run_sync(list_done, root, done)


async def _reopen(self: Agent, item: Reopen) -> None:
    state = item.state
    header = state.header
    session = Session.reopen(
        item.directory,
        self.provider,
        tools=self._tools,
        config=self.config.session,
        child_factory=self._spawn_child,
        depth=header.depth,
        state=state,
        telemetry=self._session_telemetry(),
        clock=self.clock.now,
    )
    await self._start(session, SessionOpened(parent_id=header.parent_id, resumed=True))
    retire: CloseReason | None = state.closing
    if retire is None and header.parent_id is not None:
        retire = "cancelled"  # an orphan: its parent's delegate call was interrupted
    if retire is not None:
        # Closed at once: its finalising hook hands its candidates to the adjudicator.
        assert self._group is not None
        self._group.start_soon(session.close, retire)
        return
    pending = tuple(state.unacknowledged)
    if pending:
        await self.adjudication.enqueue(Job(session.id, pending, session, None))


async def _quarantine(self: Agent, item: Damaged) -> None:
    """Keep what the journal's readable lines say, then set the file aside for good."""
    await self.memory.record_episodes(item.episodes)
    await self.adjudication.decide_left_over(item.session_id, item.candidates, item.history)
    moved = await anyio.to_thread.run_sync(set_aside, item.journal)
    _log.error(
        "agent.journal_quarantined",
        path=str(item.journal),
        moved_to=str(moved),
        error=item.error,
        recovered_candidates=len(item.candidates),
    )
    self._publish(
        item.session_id,
        JournalQuarantined(
            path=str(item.journal),
            moved_to=str(moved),
            error=item.error,
            recovered_candidates=len(item.candidates),
        ),
    )
