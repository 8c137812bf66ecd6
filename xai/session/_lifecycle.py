"""A Session's lifecycle: one state machine, its allowed moves checked in one place.

::

    new ──run()──▶ running ──close()/teardown──▶ closing ──finalised──▶ closed
     │                │                              ▲
     │                └──suspend()──▶ suspending ────┤ (torn down: cancelled, failed)
     │                                     │
     └──close() before run()──▶ closed     └──task ended──▶ suspended

    running ◀──decided──▶ waiting   (a tool call waits for a person; from waiting,
                                      close() and suspend() move on as from running)

``closing`` begins when the close is asked for (the running turn is being
cancelled, the hooks have yet to run) and lasts until the journal's last record
is written; ``suspending`` lets the running turn finish and starts no other.
``closed`` and ``suspended`` are final for this object (a suspended Session
comes back through ``Session.reopen``).
"""

from __future__ import annotations

from enum import StrEnum

import anyio

from xai.exceptions import LifecycleError
from xai.messages import CloseReason

__all__ = ["Lifecycle", "SessionState"]


class SessionState(StrEnum):
    """Where a Session is in its life (a ``str``: ``session.state == "running"`` works)."""

    NEW = "new"
    RUNNING = "running"
    WAITING = "waiting"
    """A turn is held: a tool call waits for a person's decision (``approvals``)."""
    SUSPENDING = "suspending"
    SUSPENDED = "suspended"
    CLOSING = "closing"
    CLOSED = "closed"


_MOVES: dict[SessionState, frozenset[SessionState]] = {
    SessionState.NEW: frozenset({SessionState.RUNNING, SessionState.CLOSED}),
    SessionState.RUNNING: frozenset(
        {SessionState.SUSPENDING, SessionState.CLOSING, SessionState.WAITING}
    ),
    SessionState.WAITING: frozenset(
        {SessionState.RUNNING, SessionState.SUSPENDING, SessionState.CLOSING}
    ),
    SessionState.SUSPENDING: frozenset({SessionState.SUSPENDED, SessionState.CLOSING}),
    SessionState.CLOSING: frozenset({SessionState.CLOSED}),
    SessionState.SUSPENDED: frozenset(),
    SessionState.CLOSED: frozenset(),
}


_LIVE = frozenset({SessionState.NEW, SessionState.RUNNING, SessionState.WAITING})


class Lifecycle:
    """The state of one Session and what waits on it.

    ``close_reason`` is what the close will say (set with the move to ``closing``);
    ``ended`` is set once the task has finalised (or suspended) the Session,
    ``finished`` once the task has returned (its callbacks drained too).
    """

    __slots__ = ("actor", "close_reason", "ended", "finished", "state")

    def __init__(self, actor: str) -> None:
        self.actor = actor
        self.state = SessionState.NEW
        self.close_reason: CloseReason = "closed"
        self.ended: anyio.Event | None = None  # made in start(): needs the event loop
        self.finished: anyio.Event | None = None

    def transition(self, target: SessionState) -> None:
        """Move to ``target``; ``LifecycleError`` if the machine has no such move."""
        if target not in _MOVES[self.state]:
            raise LifecycleError(self.actor, self.state.value, target.value)
        self.state = target

    def start(self) -> None:
        self.transition(SessionState.RUNNING)
        self.ended = anyio.Event()
        self.finished = anyio.Event()

    def closing(self, reason: CloseReason) -> None:
        """Begin the close (from ``running`` or ``waiting``, or a teardown from
        ``suspending``)."""
        self.transition(SessionState.CLOSING)
        self.close_reason = reason

    @property
    def stopping(self) -> bool:
        """No turn may start: a close or a suspend was asked for (or is done)."""
        return self.state not in _LIVE

    @property
    def waiting(self) -> bool:
        """A turn waits for a person's decision."""
        return self.state is SessionState.WAITING

    @property
    def live(self) -> bool:
        """Running, or waiting for a person: a close or a suspend moves on from here."""
        return self.state is SessionState.RUNNING or self.state is SessionState.WAITING

    @property
    def over(self) -> bool:
        """``closed`` or ``suspended``: this object runs nothing again."""
        return self.state in (SessionState.CLOSED, SessionState.SUSPENDED)

    def set_ended(self) -> None:
        if self.ended is not None:
            self.ended.set()

    def set_finished(self) -> None:
        if self.finished is not None:
            self.finished.set()
