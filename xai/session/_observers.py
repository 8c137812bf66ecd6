"""Fan-out of events to any number of subscribers, none of which can stall the publisher.

Used by Sessions (``SessionEvent``) and Agents (``AgentEvent``) alike.

Each subscription has its own bounded buffer. Publishing never waits: when a
buffer is full the overflow policy decides what is lost (``drop_oldest``, the
default, keeps the newest events; ``drop_newest`` keeps the oldest), and the
subscriber is told how many it missed by an ``EventsDropped`` event placed
where the gap is. Sequence numbers let it check for itself too.
"""

from __future__ import annotations

import contextlib
import weakref
from collections import deque
from collections.abc import Awaitable, Callable
from typing import Any, Generic, Literal, Protocol, TypeAlias, TypeVar

import anyio

from xai.events import EventsDropped, SessionEvent
from xai.exceptions import ConfigurationError

__all__ = ["EventCallback", "Hub", "OverflowPolicy", "Subscription"]

OverflowPolicy: TypeAlias = Literal["drop_oldest", "drop_newest"]
EventCallback: TypeAlias = Callable[[SessionEvent], Awaitable[None] | None]


class _Envelope(Protocol):
    @property
    def seq(self) -> int: ...


E = TypeVar("E", bound=_Envelope)


class Subscription(Generic[E]):
    """One subscriber's view of the events: an async iterator with a bounded buffer.

    Iterate it (``async for event in subscription``); it ends after the
    Session's ``closed`` event. Leaving the loop early, ``close()``, a ``with``
    block or simply dropping the object unsubscribes it; the Session goes on.
    """

    __slots__ = (
        "__weakref__",
        "_buffer",
        "_closed",
        "_ended",
        "_first_missed",
        "_gap_at",
        "_hub",
        "_last_missed",
        "_missed",
        "_waiter",
        "capacity",
        "policy",
    )

    def __init__(self, hub: Hub[E], capacity: int, policy: OverflowPolicy) -> None:
        if capacity < 1:
            raise ConfigurationError(
                f"a subscription needs room for at least one event, got {capacity}"
            )
        self._hub: Hub[E] | None = hub
        self._buffer: deque[E] = deque()
        self._waiter: anyio.Event | None = None
        self._missed = 0
        self._first_missed = 0
        self._last_missed = 0
        self._gap_at = 0  # drop_newest: buffered events that come before the gap
        self._closed = False
        self._ended = False
        self.capacity = capacity
        self.policy: OverflowPolicy = policy

    @property
    def missed(self) -> int:
        """Events lost to overflow and not yet reported by an ``EventsDropped``."""
        return self._missed

    def _lose(self, event: E) -> None:
        if self._missed == 0:
            self._first_missed = event.seq
            self._gap_at = len(self._buffer)
        self._missed += 1
        self._last_missed = event.seq

    def push(self, event: E) -> None:
        """Called by the hub; never blocks."""
        buffer = self._buffer
        if len(buffer) >= self.capacity:
            if self.policy == "drop_newest":
                self._lose(event)
                return
            self._lose(buffer.popleft())
        buffer.append(event)
        waiter = self._waiter
        if waiter is not None:
            self._waiter = None
            waiter.set()

    def end(self) -> None:
        """No more events will come (the Session closed)."""
        self._ended = True
        waiter = self._waiter
        if waiter is not None:
            self._waiter = None
            waiter.set()

    def get_nowait(self) -> E | None:
        """The next event if one is buffered (a gap first comes as ``EventsDropped``)."""
        if self._missed and (self.policy == "drop_oldest" or self._gap_at == 0):
            # drop_oldest loses events older than all it keeps: the gap comes first.
            # drop_newest loses events newer than those it kept: after them.
            dropped = EventsDropped(
                count=self._missed, first_seq=self._first_missed, last_seq=self._last_missed
            )
            self._missed = 0
            hub = self._hub
            return hub.wrap(self._first_missed, dropped) if hub is not None else None
        if self._buffer:
            if self._missed:
                self._gap_at -= 1
            return self._buffer.popleft()
        return None

    def __aiter__(self) -> Subscription[E]:
        return self

    async def __anext__(self) -> E:
        while True:
            event = self.get_nowait()
            if event is not None:
                return event
            if self._ended or self._closed:
                raise StopAsyncIteration
            waiter = self._waiter = anyio.Event()
            await waiter.wait()

    def close(self) -> None:
        """Unsubscribe. Safe to call more than once."""
        if not self._closed:
            self._closed = True
            if self._hub is not None:
                self._hub.remove(self)
                self._hub = None
            self.end()

    def __enter__(self) -> Subscription[E]:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


class Hub(Generic[E]):
    """The observer list: wraps each event in an envelope with the next sequence number.

    It holds its subscriptions weakly, so a subscription nobody holds any more
    (an ``async for`` left with ``break``) is gone at once. ``wrap`` makes the
    envelope (it stamps the session or agent id).
    """

    __slots__ = ("_refs", "seq", "wrap")

    def __init__(self, wrap: Callable[[int, Any], E]) -> None:
        self.wrap = wrap
        self.seq = 0
        self._refs: list[weakref.ref[Subscription[E]]] = []

    def subscribe(self, capacity: int, policy: OverflowPolicy) -> Subscription[E]:
        subscription = Subscription(self, capacity, policy)
        self._refs.append(weakref.ref(subscription, self._forget))
        return subscription

    def _forget(self, ref: weakref.ref[Subscription[E]]) -> None:
        with contextlib.suppress(ValueError):
            self._refs.remove(ref)

    def remove(self, subscription: Subscription[E]) -> None:
        for ref in self._refs:
            if ref() is subscription:
                self._refs.remove(ref)
                return

    @property
    def count(self) -> int:
        return sum(1 for ref in self._refs if ref() is not None)

    def publish(self, body: Any) -> E | None:
        self.seq += 1
        if not self._refs:  # nobody listens: no envelope to build
            return None
        event = self.wrap(self.seq, body)
        for ref in self._refs:
            subscription = ref()
            if subscription is not None:
                subscription.push(event)
        return event

    def end(self) -> None:
        for ref in self._refs:
            subscription = ref()
            if subscription is not None:
                subscription.end()
