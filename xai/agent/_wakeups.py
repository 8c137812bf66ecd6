"""Wake-up definitions: triggers and policies, as msgspec values that persist as JSON."""

from __future__ import annotations

from datetime import datetime
from datetime import time as dtime
from typing import Literal, TypeAlias, assert_never
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import msgspec

from xai.exceptions import ConfigurationError

__all__ = [
    "At",
    "Cron",
    "Every",
    "Idle",
    "OnEvent",
    "QuietHours",
    "Trigger",
    "Wakeup",
    "WakeupState",
]


class Every(msgspec.Struct, frozen=True, kw_only=True, tag="every"):
    """Every ``seconds``, the first time at ``start_at`` (default: one interval from now)."""

    seconds: float
    start_at: float | None = None


class At(msgspec.Struct, frozen=True, kw_only=True, tag="at"):
    """Once, at ``time`` (seconds since the epoch)."""

    time: float


class Cron(msgspec.Struct, frozen=True, kw_only=True, tag="cron"):
    """A cron expression (``"0 8 * * *"``: every day at 08:00) in ``timezone``."""

    expression: str
    timezone: str = "UTC"


class Idle(msgspec.Struct, frozen=True, kw_only=True, tag="idle"):
    """Once the Agent has had no open Session for ``seconds`` (again after each new idle spell)."""

    seconds: float


class OnEvent(msgspec.Struct, frozen=True, kw_only=True, tag="event"):
    """When the application calls ``agent.notify(name, ...)``."""

    name: str


Trigger: TypeAlias = Every | At | Cron | Idle | OnEvent


class QuietHours(msgspec.Struct, frozen=True, kw_only=True):
    """Firings between ``start`` and ``end`` (``"HH:MM"``, may wrap midnight) are skipped."""

    start: str
    end: str
    timezone: str = "UTC"

    def contains(self, when: float) -> bool:
        local = datetime.fromtimestamp(when, _zone(self.timezone)).time()
        start, end = _hhmm(self.start), _hhmm(self.end)
        if start <= end:
            return start <= local < end
        return local >= start or local < end


def _hhmm(text: str) -> dtime:
    try:
        hours, minutes = text.split(":")
        return dtime(int(hours), int(minutes))
    except ValueError:
        raise ConfigurationError(f"quiet hours take 'HH:MM', got {text!r}") from None


def _zone(name: str) -> ZoneInfo:
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise ConfigurationError(f"unknown time zone {name!r}") from None


class Wakeup(msgspec.Struct, frozen=True, kw_only=True):
    """A proactive wake-up: when to fire, what to say first, and the policies.

    The first input is ``text``, or what the builder registered under
    ``builder`` returns (it receives the Agent's memory and the event payload).
    The Session it opens runs like any other, except that its first input has
    origin ``agent``.
    """

    id: str
    trigger: Trigger
    text: str | None = None
    builder: str | None = None
    purpose: str | None = None
    """What the Session is for (chooses its memory prefix); defaults to the first input."""
    overlap: Literal["skip", "queue"] = "skip"
    """When the previous run's Session is still open: skip this firing, or run it after."""
    jitter: float = 0.0
    """Up to this many seconds are added at random to each scheduled time."""
    max_runs: int | None = None
    quiet_hours: QuietHours | None = None
    misfire: Literal["skip", "run_once"] = "run_once"
    """Firings missed while the process was down: forget them, or run once on start."""
    close_after: bool = True
    """Close the Session once the wake-up's first turn is answered."""

    def __post_init__(self) -> None:
        if (self.text is None) == (self.builder is None):
            raise ConfigurationError(f"wake-up {self.id!r}: give exactly one of text= or builder=")
        trigger = self.trigger
        if isinstance(trigger, (Every, Idle)) and trigger.seconds <= 0:
            raise ConfigurationError(f"wake-up {self.id!r}: the interval must be positive")
        if isinstance(trigger, Cron):
            from croniter import croniter

            if not croniter.is_valid(trigger.expression):
                raise ConfigurationError(
                    f"wake-up {self.id!r}: {trigger.expression!r} is not a cron expression"
                )
            _zone(trigger.timezone)
        if self.quiet_hours is not None:
            self.quiet_hours.contains(0.0)  # validates the fields
        if self.jitter < 0 or (self.max_runs is not None and self.max_runs < 1):
            raise ConfigurationError(f"wake-up {self.id!r}: jitter >= 0 and max_runs >= 1")


class WakeupState(msgspec.Struct, kw_only=True):
    """What the scheduler remembers about a wake-up across restarts."""

    wakeup: Wakeup
    paused: bool = False
    runs: int = 0
    next_at: float | None = None
    last_fired_at: float | None = None
    finished: bool = False
    """No more firings (a one-shot that ran, or ``max_runs`` reached)."""


def next_time(trigger: Trigger, after: float) -> float | None:
    """The next scheduled time strictly after ``after`` (``None`` for event-driven triggers)."""
    if isinstance(trigger, Every):
        if trigger.start_at is not None and trigger.start_at > after:
            return trigger.start_at
        base = trigger.start_at if trigger.start_at is not None else after
        steps = int((after - base) // trigger.seconds) + 1
        return base + steps * trigger.seconds
    if isinstance(trigger, At):
        return trigger.time if trigger.time > after else None
    if isinstance(trigger, Cron):
        from croniter import croniter

        start = datetime.fromtimestamp(after, _zone(trigger.timezone))
        return float(croniter(trigger.expression, start).get_next(float))
    if isinstance(trigger, (Idle, OnEvent)):
        return None  # fired by what happens, not by the clock
    assert_never(trigger)
