"""The event streams a host keeps of its Agents' Sessions (``SessionStream``), by
``(agent_id, session_id)``: made when a Session is first streamed, reattached when it
reopens, kept a while after it closes (its log too), swept when an Agent starts."""

from __future__ import annotations

import contextlib
import time
from collections import OrderedDict
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

import anyio

from xai.agent._agent import Agent
from xai.agent._eventlog import CLOSED_LOG_GRACE, STREAMS_DIR, sweep_logs
from xai.agent._streams import SessionStream
from xai.events import AgentEvent, SessionOpened
from xai.logs import get_logger
from xai.session import Session

__all__ = ["CLOSED_STREAMS_KEPT", "HostStreams"]

_log = get_logger(__name__)

CLOSED_STREAMS_KEPT = 256
"""Streams of closed Sessions a host keeps (readers may still be catching up on them); the
log of one it forgets is deleted."""


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
        self._streams: OrderedDict[tuple[str, str], SessionStream] = OrderedDict()

    def get(self, agent_id: str, session_id: str) -> SessionStream | None:
        return self._streams.get((agent_id, session_id))

    def of_agent(self, agent_id: str) -> list[SessionStream]:
        return [s for (owner, _), s in self._streams.items() if owner == agent_id]

    def log_path(self, agent_id: str, session_id: str) -> Path:
        return (self.root / agent_id).expanduser() / STREAMS_DIR / f"{session_id}.jsonl"

    def keep(self, agent_id: str, stream: SessionStream) -> None:
        """Keep ``stream``; forget the oldest closed ones past the cap (their logs go)."""
        self._streams[(agent_id, stream.session_id)] = stream
        closed = [k for k, s in self._streams.items() if s.closed]
        for old in closed[: max(0, len(closed) - CLOSED_STREAMS_KEPT)]:
            forgotten = self._streams.pop(old)
            if forgotten.log_path is not None:
                with contextlib.suppress(OSError):
                    forgotten.log_path.unlink(missing_ok=True)

    def of(self, agent_id: str, session: Session) -> SessionStream:
        """The Session's stream, made (and attached) if needed."""
        stream = self._streams.get((agent_id, session.id))
        if stream is None:
            stream = SessionStream(
                session.id, self.replay_events, log=self.log_path(agent_id, session.id)
            )
            self.keep(agent_id, stream)
        if not stream.attached and not stream.closed and stream.attach(session):
            self._start_soon(stream.load)  # (what the Session publishes meanwhile waits)
        return stream

    async def sweep(self, agent: Agent) -> None:
        """The events logs of the Agent's Sessions that are closed (not open once it has
        started, not streamed here) and were last written ``CLOSED_LOG_GRACE`` ago go."""
        keep = set(agent.sessions) | {s for (a, s) in self._streams if a == agent.id}
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
