"""The host's wake-up timer: wakes the Agents a host owns when one of their wake-ups is due,
those it suspended and those not started since the host began.

A running Agent fires its own wake-ups (its ``Scheduler``). For every Agent that is not
running, the timer holds one number, the next time one of its wake-ups is due, read from
its ``schedules.json`` and nothing else (no Agent, no memory opened): for every Agent
under the root when the host starts, and again for one Agent each time the host stops it
(its scheduler has written the file by then: whatever the running Agent changed in its
schedule is in it). One task sleeps until the earliest of those times, then has the host
start the Agent, whose own scheduler fires the wake-up as it always does; the host's
usual eviction suspends it again afterwards. So 10,000 idle Agents cost one task and a
number each.

Wake-ups that came due while the host was watching fire as scheduled when the Agent
starts (``Scheduler.watched_since``); those that came due before the host started were
missed while nothing ran and follow each wake-up's ``misfire`` policy, as on any start.
"""

from __future__ import annotations

import heapq
import os
from collections.abc import Awaitable, Callable
from pathlib import Path

import anyio
import anyio.abc

from xai.agent._clock import Clock
from xai.agent._scheduler import next_scheduled, read_schedules, schedule_path
from xai.exceptions import XaiError
from xai.logs import get_logger

__all__ = ["HostWakeups"]

_log = get_logger(__name__)

SCHEDULES = schedule_path(Path()).name


class HostWakeups:
    """The timer of one host: ``wake(agent_id)`` starts an Agent (the host's ``agent``);
    ``owns(agent_id)`` says which directories under ``root`` are this host's to watch."""

    def __init__(
        self,
        root: Path,
        clock: Clock,
        wake: Callable[[str], Awaitable[object]],
        owns: Callable[[str], bool],
    ) -> None:
        self.root = root
        self.clock = clock
        self._wake = wake
        self._owns = owns
        self.since: float | None = None
        """When the timer started watching (the host's start), by ``clock``."""
        self._due: dict[str, float] = {}  # the Agents not running that have a time, and it
        self._heap: list[tuple[float, str]] = []  # the same, ordered; stale entries skipped
        self._changed: anyio.Event | None = None
        self._scope: anyio.CancelScope | None = None

    def next_at(self, agent_id: str) -> float | None:
        """When the timer will start ``agent_id`` (``None``: it is running, or nothing is due
        by the clock)."""
        return self._due.get(agent_id)

    def __len__(self) -> int:
        return len(self._due)

    def since_for(self, agent_id: str) -> float | None:
        """Since when the timer watched ``agent_id``'s schedule (``None``: not this host's)."""
        return self.since if self._owns(agent_id) else None

    def started(self, agent_id: str) -> None:
        """The host started the Agent: its own scheduler fires its wake-ups now."""
        self._due.pop(agent_id, None)

    async def stopped(self, agent_id: str) -> None:
        """The host stopped (suspended, closed) the Agent: watch its schedule again."""
        if not self._owns(agent_id):
            return
        self._set(agent_id, await anyio.to_thread.run_sync(self._read, agent_id))

    def stop(self) -> None:
        if self._scope is not None:
            self._scope.cancel()

    def _read(self, agent_id: str, directory: str | None = None) -> float | None:
        """Blocking: the next due time in the Agent's schedule file (``None`` if damaged: the
        Agent itself reports that when it starts)."""
        if directory is None:
            directory = os.path.join(self.root, agent_id)
        try:
            return next_scheduled(read_schedules(os.path.join(directory, SCHEDULES)))
        except (XaiError, OSError) as exc:
            _log.warning("host.schedule_unreadable", agent_id=agent_id, error=str(exc))
            return None

    def _scan(self) -> dict[str, float]:
        """Blocking: the next due time of every Agent under the root that this host owns."""
        found: dict[str, float] = {}
        try:
            entries = os.scandir(self.root)
        except FileNotFoundError:
            return found
        with entries:
            for entry in entries:
                if not self._owns(entry.name) or not entry.is_dir():
                    continue
                at = self._read(entry.name, entry.path)
                if at is not None:
                    found[entry.name] = at
        return found

    def _set(self, agent_id: str, at: float | None) -> None:
        if at is None:
            self._due.pop(agent_id, None)
            return
        self._due[agent_id] = at
        heapq.heappush(self._heap, (at, agent_id))
        if len(self._heap) > 2 * len(self._due) + 64:  # drop the stale entries
            self._heap = [(t, a) for a, t in self._due.items()]
            heapq.heapify(self._heap)
        if self._changed is not None:
            self._changed.set()

    def _earliest(self) -> float | None:
        heap = self._heap
        while heap and self._due.get(heap[0][1]) != heap[0][0]:
            heapq.heappop(heap)  # changed or started since it was pushed
        return heap[0][0] if heap else None

    def _pop_due(self, now: float) -> list[str]:
        due: list[str] = []
        while (at := self._earliest()) is not None and at <= now:
            _, agent_id = heapq.heappop(self._heap)
            del self._due[agent_id]
            due.append(agent_id)
        return due

    async def run(
        self, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED
    ) -> None:
        """Read every schedule under the root, then wake Agents as they come due, until
        ``stop``."""
        self.since = self.clock.now()
        for agent_id, at in (await anyio.to_thread.run_sync(self._scan)).items():
            self._set(agent_id, at)
        _log.debug("host.wakeups_read", agents=len(self._due))
        with anyio.CancelScope() as self._scope:
            task_status.started()
            while True:
                self._changed = anyio.Event()
                for agent_id in self._pop_due(self.clock.now()):
                    try:
                        await self._wake(agent_id)
                    except Exception as exc:  # e.g. its directory is locked elsewhere
                        _log.warning("host.wakeup_failed", agent_id=agent_id, error=repr(exc))
                deadline = self._earliest()
                if deadline is None:
                    await self._changed.wait()
                elif deadline > self.clock.now():
                    await self._sleep_until(deadline, self._changed)

    async def _sleep_until(self, deadline: float, changed: anyio.Event) -> None:
        """Until ``deadline``, or until a schedule changes (it may be due sooner)."""
        async with anyio.create_task_group() as waiters:

            async def wake_on_change() -> None:
                await changed.wait()
                waiters.cancel_scope.cancel()

            waiters.start_soon(wake_on_change)
            await self.clock.sleep_until(deadline)
            waiters.cancel_scope.cancel()
