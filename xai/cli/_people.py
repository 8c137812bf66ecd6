"""Values as a person reads them in the terminal: times as local dates and "in 5 min", token
usage as tokens in and out, wake-up triggers in words, errors without Python's quotes or
class names. The REPL and the renderer print these, never a ``repr``."""

from __future__ import annotations

import datetime as dt
from typing import assert_never

from xai.agent import At, Cron, Every, Idle, OnEvent, Trigger
from xai.messages import ErrorInfo, Usage

__all__ = ["duration", "error_line", "moment", "problem", "trigger_line", "usage_line"]


def duration(seconds: float) -> str:
    """``45 s``, ``5 min``, ``2 h 30 min``, ``3 days``: rounded to what a person cares about."""
    seconds = abs(seconds)
    if seconds < 90:
        return f"{seconds:.0f} s"
    minutes = round(seconds / 60)
    if minutes < 60:
        return f"{minutes} min"
    hours, minutes = divmod(minutes, 60)
    if hours < 48:
        return f"{hours} h {minutes} min" if minutes else f"{hours} h"
    days = round(hours / 24)
    return f"{days} days"


def moment(at: float, now: float) -> str:
    """``2026-12-02 08:05 (in 5 min)`` in local time, or ``(3 h ago)`` for the past."""
    local = dt.datetime.fromtimestamp(at).astimezone()
    today = dt.datetime.fromtimestamp(now).astimezone().date()
    shown = local.strftime("%H:%M") if local.date() == today else local.strftime("%Y-%m-%d %H:%M")
    if local.date() == today:
        shown = f"today {shown}"
    delta = at - now
    relative = f"in {duration(delta)}" if delta >= 0 else f"{duration(delta)} ago"
    return f"{shown} ({relative})"


def trigger_line(trigger: Trigger, now: float) -> str:
    """When a wake-up fires, in words."""
    if isinstance(trigger, At):
        return f"once, {moment(trigger.time, now)}"
    if isinstance(trigger, Every):
        return f"every {duration(trigger.seconds)}"
    if isinstance(trigger, Cron):
        return f"on cron {trigger.expression} ({trigger.timezone})"
    if isinstance(trigger, Idle):
        return f"after {duration(trigger.seconds)} with no conversation"
    if isinstance(trigger, OnEvent):
        return f"on the event {trigger.name}"
    assert_never(trigger)


def usage_line(usage: Usage | None) -> str:
    """``1,234 tokens in, 56 out (2 model calls)``; ``about`` when some were estimated."""
    if usage is None or usage.requests == 0:
        return "no tokens yet (no model calls)"
    about = "about " if usage.estimated else ""
    parts = [f"{about}{usage.prompt_tokens:,} tokens in, {usage.completion_tokens:,} out"]
    extra = []
    if usage.cached_tokens:
        extra.append(f"{usage.cached_tokens:,} of those in cached")
    if usage.reasoning_tokens:
        extra.append(f"{usage.reasoning_tokens:,} of those out reasoning")
    calls = "1 model call" if usage.requests == 1 else f"{usage.requests:,} model calls"
    extra.append(calls)
    return f"{parts[0]} ({', '.join(extra)})"


def error_line(error: BaseException) -> str:
    """An error's message without the quotes ``str(KeyError(...))`` adds."""
    if isinstance(error, KeyError) and len(error.args) == 1:
        return str(error.args[0])
    return str(error)


def problem(error: ErrorInfo, base_url: str | None = None) -> str:
    """What is wrong, for a person, from an error a Session reported (the model's endpoint
    named when it is the endpoint that failed)."""
    where = f" at {base_url}" if base_url else ""
    if error.type == "ProviderConnectionError" or "could not reach the model" in error.message:
        return f"cannot reach the model{where}: is it running? (LLM_BASE_URL)"
    if error.type == "AuthenticationError":
        return f"the model{where} refused the key (LLM_API_KEY)"
    if error.type == "ProviderTimeoutError":
        return f"the model{where} did not answer in time"
    return error.message
