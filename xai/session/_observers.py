"""Fan-out of events to any number of subscribers, none of which can stall the publisher.

Used by Sessions (``SessionEvent``) and Agents (``AgentEvent``) alike.

Each subscription has its own bounded buffer. Publishing never waits: when a
buffer is full the overflow policy decides what is lost (``drop_oldest``, the
default, keeps the newest events; ``drop_newest`` keeps the oldest), and the
subscriber is told by an ``EventsDropped`` event placed exactly where the gap
is: its ``first_seq``..``last_seq`` are events it will never receive, and it
receives every other one. Sequence numbers let it check for itself too.
"""

from __future__ import annotations

import contextlib
import inspect
import weakref
from collections import deque
from collections.abc import Awaitable, Callable
from contextvars import ContextVar
from typing import Any, Generic, Literal, Protocol, TypeAlias, TypeVar

import anyio

from xai.events import EventsDropped, SessionEvent
from xai.exceptions import ConfigurationError
from xai.logs import get_logger

__all__ = ["GAP_SEQ", "EventCallback", "Hub", "OverflowPolicy", "Subscription", "pump", "pumping"]

_log = get_logger(__name__)

OverflowPolicy: TypeAlias = Literal["drop_oldest", "drop_newest"]
EventCallback: TypeAlias = Callable[[SessionEvent], Awaitable[None] | None]

GAP_SEQ = 0
"""The ``seq`` of an ``EventsDropped`` envelope: it is a note to one subscriber, not a
published event, so it takes no number of the published sequence (which counts from 1)."""


class _Envelope(Protocol):
    @property
    def seq(self) -> int: ...


E = TypeVar("E", bound=_Envelope)


class _Gap:
    """A run of consecutive lost events, kept in the buffer where the run is."""

    __slots__ = ("count", "first", "last")

    def __init__(self, seq: int) -> None:
        self.count = 1
        self.first = self.last = seq


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
        "_events",
        "_hub",
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
        # Events and gap markers in order; only events count against the capacity.
        self._buffer: deque[E | _Gap] = deque()
        self._events = 0
        self._missed = 0
        self._waiter: anyio.Event | None = None
        self._closed = False
        self._ended = False
        self.capacity = capacity
        self.policy: OverflowPolicy = policy

    @property
    def missed(self) -> int:
        """Events lost to overflow and not yet reported by an ``EventsDropped``."""
        return self._missed

    def push(self, event: E) -> None:
        """Called by the hub; never blocks."""
        buffer = self._buffer
        if self._events >= self.capacity:
            if self.policy == "drop_newest":
                self._lose_at_end(event.seq)
                return
            self._lose_oldest()
        buffer.append(event)
        self._events += 1
        waiter = self._waiter
        if waiter is not None:
            self._waiter = None
            waiter.set()

    def _lose_at_end(self, seq: int) -> None:
        buffer = self._buffer
        self._missed += 1
        last = buffer[-1] if buffer else None
        if isinstance(last, _Gap) and last.last == seq - 1:
            last.count += 1
            last.last = seq
        else:
            buffer.append(_Gap(seq))

    def _lose_oldest(self) -> None:
        # The oldest buffered event goes; it joins the gap right before it, if there is one.
        buffer = self._buffer
        gaps: list[_Gap] = []
        while True:
            event = buffer.popleft()
            if not isinstance(event, _Gap):
                break
            gaps.append(event)
        self._events -= 1
        self._missed += 1
        seq = event.seq
        if gaps and gaps[-1].last == seq - 1:
            gaps[-1].count += 1
            gaps[-1].last = seq
        else:
            gaps.append(_Gap(seq))
        buffer.extendleft(reversed(gaps))

    def end(self) -> None:
        """No more events will come (the Session closed)."""
        self._ended = True
        waiter = self._waiter
        if waiter is not None:
            self._waiter = None
            waiter.set()

    def get_nowait(self) -> E | None:
        """The next event if one is buffered (a gap comes as ``EventsDropped`` where it is)."""
        buffer = self._buffer
        while buffer:
            item = buffer.popleft()
            if not isinstance(item, _Gap):
                self._events -= 1
                return item
            self._missed -= item.count
            hub = self._hub
            if hub is not None:
                dropped = EventsDropped(count=item.count, first_seq=item.first, last_seq=item.last)
                _log.debug("events.dropped", count=item.count, first_seq=item.first)
                return hub.wrap(GAP_SEQ, dropped)
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

    __slots__ = ("_listeners", "_refs", "seq", "wrap")

    def __init__(self, wrap: Callable[[int, Any], E]) -> None:
        self.wrap = wrap
        self.seq = 0
        self._refs: list[weakref.ref[Subscription[E]]] = []
        self._listeners: list[Callable[[E], None]] = []

    def listen(self, callback: Callable[[E], None]) -> Callable[[], None]:
        """Call ``callback`` synchronously with every event as it is published (no buffer,
        nothing lost; it must be quick and must not raise). Returns the way to stop."""
        self._listeners.append(callback)

        def stop() -> None:
            with contextlib.suppress(ValueError):
                self._listeners.remove(callback)

        return stop

    def subscribe(self, capacity: int, policy: OverflowPolicy) -> Subscription[E]:
        subscription = Subscription(self, capacity, policy)
        self._refs.append(weakref.ref(subscription, self._forget))
        return subscription

    def _forget(self, ref: weakref.ref[Subscription[E]]) -> None:
        with contextlib.suppress(ValueError):
            self._refs.remove(ref)

    def remove(self, subscription: Subscription[E]) -> None:
        for ref in tuple(self._refs):
            if ref() is subscription:
                self._refs.remove(ref)
                return

    @property
    def count(self) -> int:
        return sum(1 for ref in self._refs if ref() is not None)

    def publish(self, body: Any) -> E | None:
        self.seq += 1
        if not self._has_audience():  # nobody listens: no envelope to build
            return None
        return self.deliver(self.wrap(self.seq, body))

    def _has_audience(self) -> bool:
        return bool(self._refs or self._listeners)

    def deliver(self, event: E) -> E:
        """Give ``event`` (numbered ``seq`` already) to every listener and subscriber."""
        for listener in tuple(self._listeners):
            try:
                listener(event)
            except Exception:
                _log.exception("events.listener_failed", listener=repr(listener))
        # A snapshot: a subscription collected meanwhile removes itself from the list.
        for ref in tuple(self._refs):
            subscription = ref()
            if subscription is not None:
                subscription.push(event)
        return event

    def end(self) -> None:
        for ref in tuple(self._refs):
            subscription = ref()
            if subscription is not None:
                subscription.end()


_pumping: ContextVar[object | None] = ContextVar("xai_pumping", default=None)


def pumping() -> object | None:
    """The owner whose callback this task is pumping (``None`` outside a pump)."""
    return _pumping.get()


async def pump(
    owner: object, subscription: Subscription[Any], callback: Callable[[Any], Any]
) -> None:
    """Feed ``subscription`` to ``callback`` (sync or async) until it ends; a failing call is
    logged and the next event still comes."""
    _pumping.set(owner)
    async for event in subscription:
        try:
            value = callback(event)
            if value is not None and inspect.isawaitable(value):
                await value
        except Exception:
            _log.exception("session.callback_failed", callback=repr(callback))
