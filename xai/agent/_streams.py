"""A Session's events kept replayable by the host: renumbered, buffered, resumable.

A Session numbers its events from 1 each time it starts (a suspended Agent's
Sessions start again when the host reopens it), and keeps none once published.
The host keeps, per Session it streams, the last ``capacity`` events under its
own sequence numbers, which go on counting across suspends and reopens. A reader
says after which number it wants to go on (``0``: from the stream's first event)
and gets every later event exactly once, in order; it is refused with
``EventsExpiredError`` when the events it asks for are no longer kept, never given
a silent gap.

The numbers are consecutive, and the first is not 1: a stream starts after the
wall clock in microseconds when it was made (``start``). The window lives in
memory, so a host that restarts makes a new stream, and its numbers start past
any the old one could have reached (it would have needed more than one event per
microsecond): a number a reader kept from before the restart is below the new
window, refused, never taken for one of the new stream's. (Numbers stay below
2**53: exact in JavaScript too.)
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import AsyncIterator, Callable

import anyio

from xai.events import SessionClosed, SessionEvent, SessionEventBody
from xai.exceptions import EventsExpiredError
from xai.session import Session

__all__ = ["DEFAULT_REPLAY_EVENTS", "SessionStream"]

DEFAULT_REPLAY_EVENTS = 4096
"""Events a host keeps per streamed Session for readers that reconnect."""


class SessionStream:
    """The replay buffer of one Session; ``attach`` it to each running incarnation."""

    __slots__ = (
        "_events",
        "_stop",
        "_waiter",
        "capacity",
        "closed",
        "seq",
        "session_id",
        "start",
    )

    def __init__(
        self, session_id: str, capacity: int = DEFAULT_REPLAY_EVENTS, *, start: int | None = None
    ) -> None:
        self.session_id = session_id
        self.capacity = capacity
        self.start = time.time_ns() // 1000 if start is None else start
        """The number before the stream's first event (``after=0`` means after it)."""
        self.seq = self.start
        """The number of the last event (``start``: none yet)."""
        self.closed = False
        """The Session's ``session_closed`` event is in the stream: no more will come."""
        self._events: deque[SessionEvent] = deque(maxlen=capacity)
        self._stop: Callable[[], None] | None = None
        self._waiter: anyio.Event | None = None

    @property
    def attached(self) -> bool:
        return self._stop is not None

    def attach(self, session: Session) -> None:
        """Record the events of ``session`` (a running Session) from now on, each as it is
        published (synchronously: none is lost or recorded late)."""
        self.detach()
        if not self.closed:
            self._stop = session.listen(self._record)

    def detach(self) -> None:
        stop, self._stop = self._stop, None
        if stop is not None:
            stop()

    def _record(self, event: SessionEvent) -> None:
        self.add(event.event)

    def add(self, body: SessionEventBody) -> SessionEvent:
        """Keep ``body`` as the next event and wake the readers."""
        self.seq += 1
        event = SessionEvent(self.session_id, self.seq, body)
        self._events.append(event)
        if isinstance(body, SessionClosed):
            self.closed = True
            self.detach()
        waiter, self._waiter = self._waiter, None
        if waiter is not None:
            waiter.set()
        return event

    @property
    def first(self) -> int:
        """The number of the oldest event kept (``seq + 1`` when none is)."""
        return self._events[0].seq if self._events else self.seq + 1

    def check(self, after: int) -> int:
        """``after`` as a number of this stream (``0``: ``start``); ``EventsExpiredError``
        unless every event after it is kept."""
        position = self.start if after == 0 else after
        if position < self.first - 1 or position > self.seq:
            raise EventsExpiredError(self.session_id, after, first=self.first, last=self.seq)
        return position

    async def since(self, after: int) -> AsyncIterator[SessionEvent]:
        """Every event numbered above ``after``, then each new one, until the Session closes.

        Raises ``EventsExpiredError`` at once when the window no longer holds
        ``after + 1``, and later if the reader falls so far behind that it would miss one.
        """
        after = self.check(after)
        while True:
            if after < self.seq:
                self.check(after)
                start = after - self.first + 1
                event = self._events[start]
                after = event.seq
                yield event
                continue
            if self.closed:
                return
            waiter = self._waiter
            if waiter is None:
                waiter = self._waiter = anyio.Event()
            await waiter.wait()
