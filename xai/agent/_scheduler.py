"""The Agent's scheduler: proactive wake-ups that open Sessions with agent-origin input.

One task sleeps until the earliest due wake-up (or until the schedule
changes, an event is notified or the Agent goes idle), fires what is due, and
re-arms. Schedules persist in ``schedules.json`` under the Agent's directory
and are re-armed on restart, missed firings handled by each wake-up's misfire
policy. The file is read when the Agent starts and written atomically after
every change by one writer task, in a worker thread (never on the event loop):
a burst of changes is one write; ``await scheduler.flush()`` waits until every
change made so far is on disk. While an Agent hosted by an ``AgentHost`` is not running,
its host watches the file instead (``_host_wakeups``) and starts it when a wake-up is due.
"""

from __future__ import annotations

import inspect
import math
import random
from collections.abc import Awaitable, Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeAlias

import anyio
import anyio.abc
import msgspec

from xai._files import write_atomic
from xai.agent._clock import Clock
from xai.agent._ids import check_id
from xai.agent._wakeups import Idle, OnEvent, Wakeup, WakeupState, next_time
from xai.events import WakeupFired, WakeupSkipped
from xai.exceptions import ConfigurationError, WakeupNotFoundError
from xai.logs import bind_ids, get_logger
from xai.memory import LongTermMemory

if TYPE_CHECKING:
    from xai.messages import Origin
    from xai.session import Session
    from xai.telemetry import Telemetry

__all__ = [
    "Builder",
    "Scheduler",
    "WakeTarget",
    "next_scheduled",
    "read_schedules",
    "schedule_path",
]

_log = get_logger(__name__)

Builder: TypeAlias = Callable[[LongTermMemory, Any], "Awaitable[str | None] | str | None"]
"""Makes a wake-up's first input from the Agent's memory and the event payload.
Returning ``None`` (or empty text) skips the firing."""

_encode = msgspec.json.Encoder().encode
_decode = msgspec.json.Decoder(list[WakeupState]).decode


class WakeTarget(Protocol):
    """What the scheduler needs of the Agent it wakes (the Agent hands it a view of itself)."""

    @property
    def agent_id(self) -> str: ...

    @property
    def memory(self) -> LongTermMemory: ...

    def has_sessions(self) -> bool:
        """Whether any Session is open (the Agent is not idle)."""
        ...

    def publish(self, session_id: str | None, body: Any) -> None:
        """Tell the Agent's observers."""
        ...

    def telemetry(self) -> Telemetry | None: ...

    async def open_session(self, purpose: str, *, origin: Origin) -> Session: ...


class Scheduler:
    """Owned by an Agent (``agent.scheduler``); safe to call from any task of its loop."""

    def __init__(
        self,
        target: WakeTarget,
        directory: Path,
        clock: Clock,
        *,
        rng: random.Random | None = None,
    ) -> None:
        self._agent = target
        self.clock = clock
        self._rng = rng  # made on first use: its state is 2.5 KiB an idle Agent need not hold
        self._path = directory / "schedules.json"
        self._states: dict[str, WakeupState] = {}
        self._builders: dict[str, Builder] = {}
        self._running: dict[str, int] = {}  # wake-up id -> runs whose Session is still open
        self._starting = 0  # runs not yet past their first turn (and its close, if they close)
        self.watched_since: float | None = None
        """Set by an ``AgentHost`` before the Agent starts: the host watched this schedule from
        then on, so a wake-up that came due since then is not missed but late (it fires as
        scheduled when the Agent starts); ``None``: only the running Agent watches it."""
        self._queued: dict[str, list[Any]] = {}  # wake-up id -> payloads of queued firings
        self._changed: anyio.Event | None = None
        self._group: anyio.abc.TaskGroup | None = None
        self._idle_since: float | None = None
        self._idle_fired: set[str] = set()
        self._changes = 0  # every change counts; `_saved` is the count on disk
        self._saved = 0
        self._writes: anyio.Lock | None = None
        self._want_write: anyio.Event | None = None
        self._scope: anyio.CancelScope | None = None

    # -- the schedule ----------------------------------------------------------------

    async def load(self) -> None:
        """Read ``schedules.json`` (the Agent calls this once it holds its directory).
        Wake-ups added before keep their new definition."""
        self._writes = anyio.Lock()
        stored = await anyio.to_thread.run_sync(self._read)
        added, self._states = self._states, {s.wakeup.id: s for s in stored}
        self._states.update(added)
        if added:
            self._save()

    def _read(self) -> list[WakeupState]:
        return read_schedules(self._path)

    def _save(self) -> None:
        """The schedule changed: the writer task saves it."""
        self._changes += 1
        if self._want_write is not None:
            self._want_write.set()

    async def flush(self) -> None:
        """Wait until every change made so far is in ``schedules.json`` (a no-op before the
        Agent runs: it saves them when it starts)."""
        if self._writes is None:
            return
        async with self._writes:
            changes = self._changes
            if changes == self._saved:
                return
            data = _encode(list(self._states.values()))
            await anyio.to_thread.run_sync(write_atomic, self._path, data)
            self._saved = max(self._saved, changes)

    async def _writer(self) -> None:
        while True:
            self._want_write = anyio.Event()
            if self._changes == self._saved:
                await self._want_write.wait()
            await self.flush()

    def register_builder(self, name: str, builder: Builder) -> None:
        """Builders are code, so they are registered by name (again after each restart)."""
        self._builders[name] = builder

    def add(self, wakeup: Wakeup) -> WakeupState:
        """Add (or replace) a wake-up; it is armed at once and saved by the writer task
        (``await flush()`` to wait for the file). Its id follows the rule of Agent ids
        (``ConfigurationError`` otherwise): it names the wake-up in URLs, logs and events."""
        check_id("wake-up id", wakeup.id)
        state = WakeupState(wakeup=wakeup)
        state.next_at = self._arm(wakeup, self.clock.now())
        self._states[wakeup.id] = state
        self._save()
        self._poke()
        return state

    def remove(self, wakeup_id: str) -> None:
        """Remove a wake-up. A run already going finishes; nothing more fires."""
        if self._states.pop(wakeup_id, None) is None:
            raise WakeupNotFoundError(wakeup_id)
        self._queued.pop(wakeup_id, None)
        self._save()
        self._poke()

    def pause(self, wakeup_id: str) -> None:
        self._get(wakeup_id).paused = True
        self._save()
        self._poke()

    def resume(self, wakeup_id: str) -> None:
        state = self._get(wakeup_id)
        state.paused = False
        if state.next_at is None or state.next_at < self.clock.now():
            state.next_at = self._arm(state.wakeup, self.clock.now())
        self._save()
        self._poke()

    def list(self) -> list[WakeupState]:
        return [msgspec.structs.replace(s) for s in self._states.values()]

    @property
    def busy(self) -> bool:
        """A wake-up run is starting: from its firing until its first turn is answered (and
        its Session closed, with ``close_after``). A host does not suspend the Agent then."""
        return self._starting > 0

    def _get(self, wakeup_id: str) -> WakeupState:
        try:
            return self._states[wakeup_id]
        except KeyError:
            raise WakeupNotFoundError(wakeup_id) from None

    def _arm(self, wakeup: Wakeup, after: float) -> float | None:
        at = next_time(wakeup.trigger, after)
        if at is not None and wakeup.jitter:
            if self._rng is None:
                self._rng = random.Random()
            at += self._rng.uniform(0, wakeup.jitter)
        return at

    def _poke(self) -> None:
        if self._changed is not None:
            self._changed.set()

    # -- signals from the Agent ------------------------------------------------------

    def notify(self, name: str, payload: Any = None) -> int:
        """An external event: fire every wake-up waiting for ``name``. Returns how many."""
        fired = 0
        for state in list(self._states.values()):
            trigger = state.wakeup.trigger
            if isinstance(trigger, OnEvent) and trigger.name == name:
                self._spawn(state, f"event {name!r}", payload)
                fired += 1
        if fired:
            self._save()
        return fired

    def sessions_changed(self, open_sessions: int, *, user_opened: bool = False) -> None:
        """The Agent's number of open Sessions changed (idle triggers watch this).

        Only a Session the user opened starts a new idle spell for the idle
        wake-ups; the Sessions they open themselves do not, so an idle
        wake-up fires once per stretch of the user's absence.
        """
        if user_opened:
            self._idle_fired.clear()
        if open_sessions == 0 and self._idle_since is None:
            self._idle_since = self.clock.now()
            self._poke()
        elif open_sessions > 0:
            self._idle_since = None

    # -- the loop --------------------------------------------------------------------

    async def run(
        self, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED
    ) -> None:
        """Fire wake-ups as they come due, until ``stop`` (or cancelled)."""
        with anyio.CancelScope() as self._scope:
            await self._run(task_status)

    def stop(self) -> None:
        """End ``run`` (what it saves is flushed first)."""
        if self._scope is not None:
            self._scope.cancel()

    async def _run(self, task_status: anyio.abc.TaskStatus[None]) -> None:
        async with anyio.create_task_group() as group:
            self._group = group
            group.start_soon(self._writer)
            self._misfires()
            if not self._agent.has_sessions():
                self._idle_since = self.clock.now()
            task_status.started()
            try:
                while True:
                    self._changed = anyio.Event()
                    self._fire_due()
                    deadline = self._next_deadline()
                    if deadline is None or not math.isfinite(deadline):
                        # Nothing due ever: wait for a change alone (no timer task to hold).
                        await self._changed.wait()
                        continue
                    async with anyio.create_task_group() as waiters:

                        async def wake_on_change(
                            scope: anyio.CancelScope = waiters.cancel_scope,
                        ) -> None:
                            assert self._changed is not None
                            await self._changed.wait()
                            scope.cancel()

                        waiters.start_soon(wake_on_change)
                        await self.clock.sleep_until(deadline)
                        waiters.cancel_scope.cancel()
            finally:
                self._group = None
                self._want_write = None
                with anyio.CancelScope(shield=True):
                    await self.flush()

    def _misfires(self) -> None:
        now, since = self.clock.now(), self.watched_since
        missed = False
        for state in self._states.values():
            if state.finished or state.next_at is None or state.next_at > now:
                continue
            if since is not None and state.next_at >= since:
                continue  # late, not missed: `_fire_due` fires it as scheduled
            missed = True
            self._advance(state, now)
            if state.wakeup.misfire == "run_once" and not state.paused:
                self._spawn(state, "missed while the process was down")
            else:
                self._skip(state, "missed while the process was down")
        if missed:
            self._save()

    def _next_deadline(self) -> float | None:
        scheduled = next_scheduled(self._states.values())
        times = [] if scheduled is None else [scheduled]
        if self._idle_since is not None:
            for state in self._states.values():
                trigger = state.wakeup.trigger
                if isinstance(trigger, Idle) and state.wakeup.id not in self._idle_fired:
                    times.append(self._idle_since + trigger.seconds)
        return min(times) if times else None

    def _fire_due(self) -> None:
        now = self.clock.now()
        fired = False
        for state in list(self._states.values()):
            if state.finished:
                continue
            trigger = state.wakeup.trigger
            if isinstance(trigger, Idle):
                due = (
                    self._idle_since is not None
                    and state.wakeup.id not in self._idle_fired
                    and now >= self._idle_since + trigger.seconds
                )
                if due:
                    fired = True
                    self._idle_fired.add(state.wakeup.id)
                    self._spawn(state, f"idle for {trigger.seconds:g}s")
            elif state.next_at is not None and state.next_at <= now:
                fired = True
                self._advance(state, now)
                self._spawn(state, "scheduled time")
        if fired:
            self._save()

    def _advance(self, state: WakeupState, now: float) -> None:
        state.next_at = self._arm(state.wakeup, now)
        if state.next_at is None and not isinstance(state.wakeup.trigger, (Idle, OnEvent)):
            state.finished = True

    # -- firing ----------------------------------------------------------------------

    def _skip(self, state: WakeupState, reason: str) -> None:
        self._skipped(state.wakeup.id, reason)

    def _skipped(self, wakeup_id: str, reason: str) -> None:
        _log.info("scheduler.wakeup_skipped", wakeup_id=wakeup_id, reason=reason)
        self._agent.publish(None, WakeupSkipped(wakeup_id=wakeup_id, reason=reason))

    def _spawn(self, state: WakeupState, why: str, payload: Any = None) -> None:
        wakeup = state.wakeup
        if state.paused:
            return self._skip(state, "paused")
        if state.finished and not isinstance(wakeup.trigger, (Idle, OnEvent)) and state.runs:
            return None
        now = self.clock.now()
        if wakeup.quiet_hours is not None and wakeup.quiet_hours.contains(now):
            return self._skip(state, "quiet hours")
        if wakeup.max_runs is not None and state.runs >= wakeup.max_runs:
            state.finished = True
            return self._skip(state, f"max_runs ({wakeup.max_runs}) reached")
        if self._running.get(wakeup.id):
            if wakeup.overlap == "skip":
                return self._skip(state, "the previous run is still going")
            self._queued.setdefault(wakeup.id, []).append(payload)
            return None
        if self._group is None:
            return self._skip(state, "the scheduler is not running")
        state.runs += 1
        state.last_fired_at = now
        if wakeup.max_runs is not None and state.runs >= wakeup.max_runs:
            state.finished = True
        self._running[wakeup.id] = self._running.get(wakeup.id, 0) + 1
        self._starting += 1
        with bind_ids(agent_id=self._agent.agent_id):  # (``notify`` comes from any task)
            self._group.start_soon(self._run_once, wakeup, why, payload)
        return None

    async def _run_once(self, wakeup: Wakeup, why: str, payload: Any) -> None:
        starting = True
        try:
            telemetry = self._agent.telemetry()
            if telemetry is None:
                session = await self._fire(wakeup, why, payload)
            else:
                with telemetry.wakeup(wakeup.id, why) as span:
                    session = await self._fire(wakeup, why, payload)
                    span.set("xai.wakeup.fired", session is not None)
            if session is None:
                return
            if wakeup.close_after:
                await session.close()
            else:
                starting = False  # the Session stays open for the user, like any other
                self._starting -= 1
                await session.wait_closed()
        except Exception as exc:  # one bad run never stops the scheduler
            _log.exception("scheduler.run_failed", wakeup_id=wakeup.id)
            self._agent.publish(
                None, WakeupSkipped(wakeup_id=wakeup.id, reason=f"run failed: {exc}")
            )
        finally:
            if starting:
                self._starting -= 1
            self._running[wakeup.id] -= 1
            queued = self._queued.get(wakeup.id)
            if queued and wakeup.id in self._states:
                self._spawn(
                    self._states[wakeup.id], "queued behind the previous run", queued.pop(0)
                )
                self._save()

    async def _fire(self, wakeup: Wakeup, why: str, payload: Any) -> Session | None:
        """Open the wake-up's Session and run its first turn (``None``: nothing to say)."""
        text = await self._first_input(wakeup, payload)
        if text is None:
            return None
        agent = self._agent
        session = await agent.open_session(wakeup.purpose or text, origin="agent")
        agent.publish(session.id, WakeupFired(wakeup_id=wakeup.id, reason=why, input=text))
        _log.info("scheduler.wakeup_fired", wakeup_id=wakeup.id, reason=why, session_id=session.id)
        await session.send(text, origin="agent").result()
        return session

    async def _first_input(self, wakeup: Wakeup, payload: Any) -> str | None:
        if wakeup.text is not None:
            return wakeup.text
        assert wakeup.builder is not None
        builder = self._builders.get(wakeup.builder)
        if builder is None:
            raise ConfigurationError(f"no builder registered as {wakeup.builder!r}")
        try:
            value = builder(self._agent.memory, payload)
            if inspect.isawaitable(value):
                value = await value
        except Exception as exc:
            _log.warning("scheduler.builder_failed", wakeup_id=wakeup.id, error=str(exc))
            self._agent.publish(
                None,
                WakeupSkipped(
                    wakeup_id=wakeup.id, reason=f"builder failed: {type(exc).__name__}: {exc}"
                ),
            )
            return None
        if not value or not str(value).strip():
            self._skipped(wakeup.id, "the builder had nothing to say")
            return None
        return str(value)


def schedule_path(directory: Path) -> Path:
    return directory / "schedules.json"


def read_schedules(path: str | Path) -> list[WakeupState]:
    """The wake-ups stored in ``path`` (a ``schedules.json``; none if there is no file).
    Blocking. ``ConfigurationError`` if the file is damaged."""
    try:
        with open(path, "rb") as file:
            data = file.read()
    except FileNotFoundError:
        return []
    try:
        return _decode(data)
    except (msgspec.DecodeError, msgspec.ValidationError) as exc:
        raise ConfigurationError(f"{path} is damaged: {exc}") from None


def next_scheduled(states: Iterable[WakeupState]) -> float | None:
    """The earliest time at which one of ``states`` is due by the clock (``Every``, ``At``,
    ``Cron``; not paused, not finished), ``None`` if none is. ``Idle`` and ``OnEvent``
    wake-ups have no such time: they fire on what the running Agent sees."""
    times = [s.next_at for s in states if s.next_at is not None and not s.paused and not s.finished]
    return min(times) if times else None
