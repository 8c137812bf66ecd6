"""The event streams a host keeps of its Agents' Sessions (``SessionStream``), by
``(agent_id, session_id)``: made when a Session is first streamed, reattached when it
reopens, swept when an Agent starts.

Once a Session has closed and its stream's last event is in its log, the host keeps the
log, not the stream: a reader that comes for it gets a stream read back from the log
(``SessionStream.of_closed``), so a long-running host holds nothing in memory per
closed Session but its name in a bounded list (``CLOSED_STREAMS_KEPT``; the log of one
it forgets is deleted). Only a stream whose log failed stays in memory, in that list."""

from __future__ import annotations

import contextlib
import functools
import time
from collections import OrderedDict
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

import anyio

from xai.agent._agent import Agent
from xai.agent._eventlog import CLOSED_LOG_GRACE, STREAMS_DIR, begin_log, sweep_logs
from xai.agent._give_back import GiveBack
from xai.agent._streams import SessionStream
from xai.events import AgentEvent, SessionOpened
from xai.logs import get_logger
from xai.session import Session

__all__ = ["CLOSED_STREAMS_KEPT", "HostStreams"]

_log = get_logger(__name__)

CLOSED_STREAMS_KEPT = 256
"""Streams of closed Sessions a host keeps readable (readers may still be catching up on
them); the log of one it forgets is deleted."""


class HostStreams:
    """The host's streams; ``start_soon`` runs a stream's log reading in the host's tasks."""

    def __init__(
        self,
        root: Path,
        replay_events: int,
        start_soon: Callable[[Callable[[], Coroutine[Any, Any, Any]]], None],
    ) -> None:
        self.root = root
        self.replay_events = replay_events
        self._start_soon = start_soon
        self.give_back = GiveBack(start_soon)
        """What the host gives back to the system as Sessions close."""
        self._streams: dict[tuple[str, str], SessionStream] = {}
        """The streams of Sessions that have not closed (or whose last event is not written)."""
        self._closed: OrderedDict[tuple[str, str], Path | SessionStream] = OrderedDict()
        """Closed Sessions still readable, oldest first: the log, or (the log failed) the
        stream itself."""

    def __len__(self) -> int:
        """The streams held in memory (those of open Sessions, and of closed ones whose log
        failed)."""
        return len(self._streams) + sum(
            isinstance(kept, SessionStream) for kept in self._closed.values()
        )

    @property
    def closed_kept(self) -> int:
        """Closed Sessions whose streams are still readable (at most ``CLOSED_STREAMS_KEPT``)."""
        return len(self._closed)

    def get(self, agent_id: str, session_id: str) -> SessionStream | None:
        """The stream held in memory (``None`` for a closed Session's that is in its log)."""
        key = (agent_id, session_id)
        stream = self._streams.get(key)
        if stream is None:
            kept = self._closed.get(key)
            stream = kept if isinstance(kept, SessionStream) else None
        return stream

    async def find(self, agent_id: str, session_id: str) -> SessionStream | None:
        """The stream held in memory, or a closed Session's read back from its kept log
        (``None``: neither; its Agent may know the Session)."""
        stream = self.get(agent_id, session_id)
        kept = self._closed.get((agent_id, session_id))
        if stream is None and isinstance(kept, Path):
            try:
                stream = await SessionStream.of_closed(session_id, kept, self.replay_events)
            except OSError as exc:
                _log.warning("host.log_unreadable", session_id=session_id, error=str(exc))
        return stream

    def of_agent(self, agent_id: str) -> list[SessionStream]:
        return [s for (owner, _), s in self._streams.items() if owner == agent_id]

    def log_path(self, agent_id: str, session_id: str) -> Path:
        return (self.root / agent_id).expanduser() / STREAMS_DIR / f"{session_id}.jsonl"

    def keep(self, agent_id: str, stream: SessionStream) -> None:
        """Keep ``stream`` (a closed Session's: as ``closed`` does)."""
        if stream.closed:
            self._closed_one(agent_id, stream)
        else:
            self._streams[(agent_id, stream.session_id)] = stream

    def _closed_one(self, agent_id: str, stream: SessionStream) -> None:
        """``stream``'s Session closed and its last event is written: keep its log (or, if
        that failed, the stream), and forget the oldest closed ones past the cap (their
        logs go)."""
        key = (agent_id, stream.session_id)
        if self._streams.get(key) is stream:
            del self._streams[key]
        elif key in self._streams:
            return  # (a stream read back from the log while another runs: not the one kept)
        if key not in self._closed:  # (not a stream read back from the log)
            self.give_back.session_closed()
        self._closed.pop(key, None)
        self._closed[key] = stream.log_path if stream.on_disk and stream.log_path else stream
        while len(self._closed) > CLOSED_STREAMS_KEPT:
            _, forgotten = self._closed.popitem(last=False)
            path = forgotten if isinstance(forgotten, Path) else forgotten.log_path
            if path is not None:
                with contextlib.suppress(OSError):
                    path.unlink(missing_ok=True)

    def of(self, agent_id: str, session: Session) -> SessionStream:
        """The Session's stream, made (and attached) if needed."""
        stream = self._streams.get((agent_id, session.id))
        if stream is None:
            log = self.log_path(agent_id, session.id)
            try:  # (now, not in ``load``: see ``begin_log``)
                begin_log(log, session.announced)
            except OSError as exc:  # (``load`` meets it again: the stream is in memory)
                _log.warning("host.log_not_begun", session_id=session.id, error=str(exc))
            stream = SessionStream(
                session.id,
                self.replay_events,
                log=log,
                on_closed=functools.partial(self._closed_one, agent_id),
            )
            self.keep(agent_id, stream)
        if not stream.attached and not stream.closed and stream.attach(session):
            self._start_soon(stream.load)  # (what the Session publishes meanwhile waits)
        return stream

    async def sweep(self, agent: Agent) -> None:
        """The events logs of the Agent's Sessions that are closed (not open once it has
        started, not streamed here) and were last written ``CLOSED_LOG_GRACE`` ago go."""
        streamed = [*self._streams, *self._closed]
        keep = set(agent.sessions) | {s for (a, s) in streamed if a == agent.id}
        before = time.time() - CLOSED_LOG_GRACE
        directory = agent.directory / STREAMS_DIR
        gone = await anyio.to_thread.run_sync(sweep_logs, directory, keep, before)
        if gone:
            _log.info("host.logs_swept", agent_id=agent.id, sessions=len(gone))

    def reopened(self, agent: Agent, event: AgentEvent) -> None:
        """Heard as the Agent publishes it: a Session it reopened (a restart, a reopen
        after a suspend) that the host streams, or streamed before the process restarted
        (its log is there), goes on in its stream from its first event (the end of a turn
        the process died in, say). A helper a streamed Session delegates to is streamed
        too, from its first event: a reader that comes back (a reloaded web page) reads it
        as it reads its parent."""
        session_id = event.session_id
        opened = event.event
        if not isinstance(opened, SessionOpened):
            return
        session = agent.sessions.get(session_id) if session_id is not None else None
        if session is None:
            return
        if not opened.resumed:
            parent = opened.parent_id
            if parent is not None and (agent.id, parent) in self._streams:
                self.of(agent.id, session)  # (before its first turn: none is missed)
            return
        stream = self._streams.get((agent.id, session.id))
        if stream is None:
            if self.log_path(agent.id, session.id).is_file():
                self.of(agent.id, session)
        elif stream.attach(session):  # (also if still attached: to a Session that is gone)
            self._start_soon(stream.load)
