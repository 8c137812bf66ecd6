"""An Agent's lifecycle: one state, moved only along the transitions drawn here.

::

    NEW ──run──▶ STARTING ──started──▶ RUNNING ──close──▶ CLOSING ───▶ STOPPED
                    │  ╲                  ╲                              ▲   │
                    │   close/suspend      suspend──▶ SUSPENDING ────────┘   │
                    │   (noted: acted on once started)                       │
                    └──failed to start──────────────────────────────────────▶┘
                                                                  run again ─┘

``close`` or ``suspend`` during ``STARTING`` moves to ``CLOSING``/``SUSPENDING`` at once
(no Session opens from then on) and the start finishes first: every Session it resumes
is reopened and then closed (or suspended) with the others, so a short-lived process
still decides what it recovered.
"""

from __future__ import annotations

import enum

import anyio

from xai.exceptions import ConfigurationError

__all__ = ["TRANSITIONS", "AgentState", "Lifecycle"]


class AgentState(enum.Enum):
    NEW = "new"
    STARTING = "starting"
    RUNNING = "running"
    CLOSING = "closing"
    SUSPENDING = "suspending"
    STOPPED = "stopped"


_S = AgentState
TRANSITIONS: dict[AgentState, frozenset[AgentState]] = {
    _S.NEW: frozenset({_S.STARTING}),
    _S.STARTING: frozenset({_S.RUNNING, _S.CLOSING, _S.SUSPENDING, _S.STOPPED}),
    _S.RUNNING: frozenset({_S.CLOSING, _S.SUSPENDING, _S.STOPPED}),
    _S.CLOSING: frozenset({_S.STOPPED}),
    _S.SUSPENDING: frozenset({_S.STOPPED}),
    _S.STOPPED: frozenset({_S.STARTING}),
}
"""Every allowed move (``STOPPED`` from ``RUNNING``: the Agent's task was cancelled)."""


class Lifecycle:
    """The state, and the events a stop waits on (made when a run starts: they bind to
    its event loop)."""

    __slots__ = ("_stop", "_stopped", "name", "state")

    def __init__(self, name: str) -> None:
        self.name = name
        self.state = AgentState.NEW
        self._stop: anyio.Event | None = None
        self._stopped: anyio.Event | None = None

    def move(self, to: AgentState) -> None:
        if to not in TRANSITIONS[self.state]:
            raise ConfigurationError(
                f"agent {self.name} cannot go from {self.state.value} to {to.value}"
            )
        if to is AgentState.STARTING:
            self._stop, self._stopped = anyio.Event(), anyio.Event()
        self.state = to
        if to in (AgentState.CLOSING, AgentState.SUSPENDING) and self._stop is not None:
            self._stop.set()
        if to is AgentState.STOPPED and self._stopped is not None:
            self._stopped.set()

    @property
    def live(self) -> bool:
        """Started or starting, and not told to stop: Sessions may open."""
        return self.state in (AgentState.STARTING, AgentState.RUNNING)

    @property
    def stopping(self) -> bool:
        return self.state in (AgentState.CLOSING, AgentState.SUSPENDING)

    @property
    def active(self) -> bool:
        """A run is under way (a stop too): ``close`` and ``suspend`` have something to do."""
        return self.state not in (AgentState.NEW, AgentState.STOPPED)

    async def wait_for_stop(self) -> None:
        assert self._stop is not None
        await self._stop.wait()

    async def wait_stopped(self) -> None:
        if self._stopped is not None:
            await self._stopped.wait()
