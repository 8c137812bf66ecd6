"""The Agent's open Sessions: made as the Agent makes them, started in its task group,
heard, and closed (or suspended) with it.

A Session is known, heard and announced (``SessionOpened``) before its task starts, so an
observer that takes it up on that event (a host's stream) misses none of its events, not
even the first turn of a reopened Session (an input accepted before a kill). The Agent's
hearing is a synchronous listener: nothing is lost or late.

``SessionSet`` is handed what it needs (the provider, the Session config, getters for the
tools, persona and telemetry of the moment, the adjudication, a publish callback), never
the Agent.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import anyio
import anyio.abc
import msgspec

from xai.agent._adjudication import Adjudication, Publish
from xai.agent._jobs import Job
from xai.agent._mood import AgentMood
from xai.agent._persona import Persona
from xai.agent._resume import list_done
from xai.events import (
    CandidatesProposed,
    SessionClosed,
    SessionEnded,
    SessionEvent,
    SessionFailed,
    SessionOpened,
)
from xai.exceptions import AgentNotRunningError, DiskFullError, SessionClosedError
from xai.logs import bind_ids
from xai.messages import CloseReason, new_id
from xai.mood import MoodConfig
from xai.providers import Provider
from xai.session import (
    HELPER_INSTRUCTIONS,
    FinalizingContext,
    JournalState,
    Session,
    SessionConfig,
    SessionState,
    SystemPrompt,
)
from xai.tools import ToolSet

if TYPE_CHECKING:
    from xai.telemetry import Telemetry

__all__ = ["SessionSet"]


class SessionSet:
    """Open Sessions by id, and the way they open, start and end."""

    def __init__(
        self,
        *,
        agent_id: str,
        directory: Path,
        provider: Provider,
        config: SessionConfig,
        tools: Callable[[], ToolSet],
        persona: Callable[[], Persona],
        telemetry: Callable[[], Telemetry | None],
        clock: Callable[[], float],
        publish: Publish,
        adjudication: Adjudication,
        changed: Callable[[int, bool], None],
        mood: MoodConfig,
        notify: Callable[[str, object], int],
    ) -> None:
        self.agent_id = agent_id
        self.root = directory / "sessions"
        self.provider = provider
        self.config = config
        self._tools = tools
        self._persona = persona
        self._telemetry = telemetry
        self._clock = clock
        self._publish = publish
        self._adjudication = adjudication
        self._changed = changed  # (open Sessions, opened by the user): the scheduler's idle
        self.mood = AgentMood(directory, mood, persona, clock, publish, notify)
        """The mood the Agent carries: each Session starts from a copy and is digested here."""
        self._open: dict[str, Session] = {}
        self._stalled: set[str] = set()
        """Sessions stopped by a full disk: not recorded closed, resumed from their journals
        when the Agent next starts (``AgentHost`` restarts it once there is room)."""
        self._group: anyio.abc.TaskGroup | None = None
        self.live: Callable[[], bool] = lambda: False
        """Whether Sessions may open (the Agent runs and was not told to stop)."""

    def bind(self, group: anyio.abc.TaskGroup | None, live: Callable[[], bool]) -> None:
        """Sessions start in ``group`` from now on (``None``: the Agent's task ended)."""
        self._group = group
        self.live = live

    def check_open(self) -> None:
        if self._group is None or not self.live():
            raise AgentNotRunningError(self.agent_id)

    def copy(self) -> dict[str, Session]:
        return dict(self._open)

    def get(self, session_id: str) -> Session | None:
        return self._open.get(session_id)

    def open_one(self, session_id: str) -> Session:
        if session_id in self._stalled:  # (still closing, or gone)
            raise DiskFullError(str(self.root / session_id))
        session = self._open.get(session_id)
        if session is None:
            raise SessionClosedError(f"agent {self.agent_id} has no open session {session_id!r}")
        return session

    def __len__(self) -> int:
        return len(self._open)

    # -- making ----------------------------------------------------------------------

    def make(
        self,
        system: SystemPrompt,
        config: SessionConfig | None = None,
        *,
        parent: Session | None = None,
    ) -> Session:
        """A new Session of the Agent's (not started)."""
        session_id = new_id()
        if parent is None and system.mood is None:  # the injection: a copy of the mood
            system = msgspec.structs.replace(system, mood=self.mood.seed())
        return Session(
            self.provider,
            tools=self._tools(),
            config=config if config is not None else self.config,
            system=system,
            directory=self.root / session_id,
            session_id=session_id,
            parent_id=parent.id if parent is not None else None,
            depth=parent.depth + 1 if parent is not None else 0,
            child_factory=self.spawn_child,
            telemetry=self._telemetry(),
            clock=self._clock,
        )

    async def spawn_child(self, parent: Session, task: str) -> Session:
        """Delegation under an Agent: the child is the Agent's too (events, memory, close)."""
        self.check_open()
        system = SystemPrompt(instructions=HELPER_INSTRUCTIONS, persona=self._persona().render())
        child = self.make(system, parent.config, parent=parent)
        await self.start(child, SessionOpened(purpose=task, origin="agent", parent_id=parent.id))
        return child

    async def reopen(self, directory: Path, state: JournalState) -> Session:
        """The Session a journal left open, reopened and started (a restart)."""
        session = Session.reopen(
            directory,
            self.provider,
            tools=self._tools(),
            config=self.config,
            child_factory=self.spawn_child,
            depth=state.header.depth,
            state=state,
            telemetry=self._telemetry(),
            clock=self._clock,
        )
        opened = SessionOpened(parent_id=state.header.parent_id, resumed=True)
        await self.start(session, opened, recovered=True)
        return session

    def close_soon(self, session: Session, reason: CloseReason) -> None:
        """Close ``session`` in a task of the Agent's (its hook hands over its candidates)."""
        assert self._group is not None
        self._group.start_soon(session.close, reason)

    # -- starting and hearing ----------------------------------------------------------

    async def start(
        self, session: Session, opened: SessionOpened, *, recovered: bool = False
    ) -> None:
        """Start ``session`` in the Agent's group. One a start ``recovered`` is started even
        if the Agent was told to stop meanwhile: it closes with the others (its candidates
        are decided then); any other must not outlive the Agent."""
        assert self._group is not None
        if not recovered and not self.live():
            raise AgentNotRunningError(self.agent_id, f"agent {self.agent_id} is closing")
        self._open[session.id] = session
        session.on_session_finalizing.append(self._finalizing)
        stop = session.listen(self._forwarder(session))
        self._changed(len(self._open), opened.origin == "user")
        self._publish(session.id, opened)
        try:
            with bind_ids(agent_id=self.agent_id):  # its task copies the context from here
                await self._group.start(session.run)
        except BaseException:
            stop()
            if self._open.pop(session.id, None) is not None:
                self._publish(session.id, SessionEnded(reason="error"))
                self._changed(len(self._open), False)
            raise
        if not recovered and not self.live():
            await session.close("owner_shutdown")
            raise AgentNotRunningError(self.agent_id, f"agent {self.agent_id} is closing")

    def _forwarder(self, session: Session) -> Callable[[SessionEvent], None]:
        def forward(event: SessionEvent) -> None:
            body = event.event
            self._publish(session.id, body)
            if type(body) not in _WATCHED:  # a streamed delta, most of a turn's events
                return
            if _stopped_by_a_full_disk(body):
                # It stopped, not closed (a full disk): the Agent no longer runs it.
                self._stalled.add(session.id)
                if self._open.pop(session.id, None) is not None:
                    self._changed(len(self._open), False)
            if isinstance(body, CandidatesProposed):
                self._adjudication.offer(Job(session.id, body.candidates, session, None))
            elif isinstance(body, SessionClosed):
                self._open.pop(session.id, None)
                if self._adjudication.recorded(session.id) and not session.closing_pending:
                    list_done(self.root, (session.id,))  # every candidate acknowledged
                if not session.closing_pending:  # (else finalized again: its next start)
                    self.mood.closed(session.id)
                self._publish(session.id, SessionEnded(reason=body.reason))
                self._changed(len(self._open), False)

        return forward

    async def _finalizing(self, context: FinalizingContext) -> None:
        """A Session is closing: its mood deltas are digested, and its unacknowledged
        candidates decided, before it goes."""
        await self.mood.digest(context)
        await self._adjudication.finalizing(context, self._open.get(context.session_id))

    # -- ending ----------------------------------------------------------------------

    def busy(self) -> tuple[str, ...]:
        """The Sessions running a turn (or the memory extraction after one); a turn that
        waits for a person does not count: its wait is on disk and a reopen resumes it."""
        return tuple(
            i for i, s in self._open.items() if not s.idle and s.state is not SessionState.WAITING
        )

    def begin_suspend(self) -> None:
        for session in self._open.values():  # synchronously: no turn starts now
            session.begin_suspend()

    async def end(self, *, suspend: bool) -> list[Session]:
        """Suspend or close every Session; returns those closed."""
        if not suspend:
            return await self.close_all()
        async with anyio.create_task_group() as group:
            for session in list(self._open.values()):
                group.start_soon(session.suspend)
        self._open.clear()
        return []

    async def close_all(self) -> list[Session]:
        """Close every Session, children opened meanwhile too; returns those closed."""
        closed: list[Session] = []
        while self._open:
            async with anyio.create_task_group() as group:
                for session in list(self._open.values()):
                    closed.append(session)
                    group.start_soon(session.close, "owner_shutdown")
        return closed


_WATCHED: frozenset[type] = frozenset({SessionFailed, CandidatesProposed, SessionClosed})
"""The events the Agent acts on besides passing them on (none of them is subclassed)."""


def _stopped_by_a_full_disk(body: object) -> bool:
    """The Session stopped, not closed, because its disk is full (``DiskFullError``)."""
    return (
        isinstance(body, SessionFailed) and body.fatal and body.error.type == DiskFullError.__name__
    )
