"""The rule for the ids a host names things by (Agents, wake-ups), checked where an id comes
in: one rule, so an id that is fine in one place is fine in every other (a path, a file name,
a URL, a log line)."""

from __future__ import annotations

import re

from xai.exceptions import ConfigurationError

__all__ = ["ID_RULE", "check_id", "is_id"]

ID_RULE = "1-64 of letters, digits, _ . - (not starting with .)"
"""The rule in words, for error messages and docs."""

_ID = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9_.-]{0,63}")

_SHOWN = 80
"""An id longer than this is cut short in an error message (it may be 5,000 characters)."""


def is_id(value: str) -> bool:
    """Whether ``value`` follows the rule: safe as one file name, never ``.``, ``..`` or hidden."""
    return _ID.fullmatch(value) is not None


def check_id(kind: str, value: str) -> str:
    """``value``, or ``ConfigurationError`` naming ``kind`` (``"agent id"``) and the rule."""
    if is_id(value):
        return value
    shown = value if len(value) <= _SHOWN else f"{value[:_SHOWN]}... ({len(value)} characters)"
    raise ConfigurationError(f"{kind} {shown!r}: use {ID_RULE}")
