"""Backoff for retryable provider failures, honouring the server's ``Retry-After``."""

from __future__ import annotations

import email.utils
import random
import time
from collections.abc import Mapping

import msgspec

__all__ = ["RetryPolicy", "parse_retry_after"]


class RetryPolicy(msgspec.Struct, frozen=True, kw_only=True):
    """Exponential backoff with equal jitter (half fixed, half random), capped; a sane server hint wins."""

    max_retries: int = 2
    initial_delay: float = 0.5
    max_delay: float = 30.0
    max_retry_after: float = 120.0
    """A ``Retry-After`` longer than this is not waited for: the error is raised instead."""

    def delay(self, attempt: int, retry_after: float | None) -> float | None:
        """Seconds to wait before retry number ``attempt`` (1-based); ``None`` = give up."""
        if attempt > self.max_retries:
            return None
        if retry_after is not None:
            return retry_after if retry_after <= self.max_retry_after else None
        ceiling = min(self.max_delay, self.initial_delay * 2 ** (attempt - 1))
        return random.uniform(ceiling / 2, ceiling)


def parse_retry_after(headers: Mapping[str, str]) -> float | None:
    """Seconds to wait from ``retry-after-ms`` or ``Retry-After`` (seconds or an HTTP date)."""
    millis = headers.get("retry-after-ms")
    if millis is not None:
        try:
            return max(0.0, float(millis) / 1000.0)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        parsed = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, parsed.timestamp() - time.time())
