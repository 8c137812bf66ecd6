"""Time for the scheduler, injectable: the real clock, and a fake one tests move by hand."""

from __future__ import annotations

import time
from typing import Protocol, runtime_checkable

import anyio

__all__ = ["Clock", "FakeClock", "SystemClock"]


@runtime_checkable
class Clock(Protocol):
    def now(self) -> float:
        """Seconds since the epoch (wall time: schedules are about the calendar)."""
        ...

    async def sleep_until(self, deadline: float) -> None: ...


class SystemClock:
    """The machine's clock."""

    def now(self) -> float:
        return time.time()

    async def sleep_until(self, deadline: float) -> None:
        # Re-check in slices: wall time can jump (NTP, suspend), monotonic sleeps do not see it.
        while (remaining := deadline - time.time()) > 0:  # noqa: ASYNC110 - polling wall time is the point
            await anyio.sleep(min(remaining, 60.0))


class FakeClock:
    """A clock that only moves when told to: ``await clock.advance(3600)``.

    Sleepers whose deadline has passed are woken, and ``advance`` returns once
    every task has run as far as it can, so a test never sleeps for real.
    """

    def __init__(self, start: float = 1_800_000_000.0) -> None:
        self._now = start
        self._sleepers: list[tuple[float, anyio.Event]] = []

    def now(self) -> float:
        return self._now

    def __call__(self) -> float:
        return self._now

    async def sleep_until(self, deadline: float) -> None:
        if deadline <= self._now:
            await anyio.lowlevel.checkpoint()
            return
        event = anyio.Event()
        entry = (deadline, event)
        self._sleepers.append(entry)
        try:
            await event.wait()
        finally:
            if entry in self._sleepers:
                self._sleepers.remove(entry)

    async def advance(self, seconds: float) -> None:
        """Move time forward, step by step through every deadline on the way."""
        target = self._now + seconds
        while True:
            await anyio.wait_all_tasks_blocked()
            due = [d for d, _ in self._sleepers if d <= target]
            if not due:
                break
            self._now = max(self._now, min(due))
            for deadline, event in list(self._sleepers):
                if deadline <= self._now:
                    self._sleepers.remove((deadline, event))
                    event.set()
        self._now = target
        await anyio.wait_all_tasks_blocked()

    async def settle(self) -> None:
        """Let every task run until all are waiting (without moving time)."""
        await anyio.wait_all_tasks_blocked()
