"""Logging: structlog with one configuration entry point.

``configure_logging("console" | "json")`` sets up human-readable or JSON-lines
output. Ids of the running agent / session / query are bound with context
variables (``bind_ids``), so every line logged inside a Query names it, even
from inside a tool running in its own task. Every line passes through the
redaction net in ``xai._redact``: API keys never reach a log.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Iterator, Mapping, MutableMapping
from contextlib import contextmanager
from typing import Any, Literal, TextIO

import structlog

from xai._redact import redact
from xai.exceptions import ConfigurationError

__all__ = ["bind_ids", "configure_logging", "get_logger"]

LogFormat = Literal["console", "json"]


def _redact_processor(
    _logger: Any, _method: str, event_dict: MutableMapping[str, Any]
) -> Mapping[str, Any]:
    for key, value in event_dict.items():
        if isinstance(value, str):
            event_dict[key] = redact(value)
        elif isinstance(value, BaseException):
            event_dict[key] = redact(repr(value))
    return event_dict


def configure_logging(
    format: LogFormat = "console",
    *,
    level: str | int = "info",
    stream: TextIO | None = None,
) -> None:
    """Configure structlog for the whole process (call once, at start-up).

    ``json`` writes one JSON object per line (for machines); ``console`` writes
    aligned, coloured-when-a-tty lines (for people). Both redact secrets.
    """
    out = stream if stream is not None else sys.stderr
    numeric = logging.getLevelName(level.upper()) if isinstance(level, str) else level
    if not isinstance(numeric, int):
        raise ConfigurationError(f"unknown log level {level!r}")
    renderer: Any
    if format == "json":
        renderer = structlog.processors.JSONRenderer()
    elif format == "console":
        renderer = structlog.dev.ConsoleRenderer(colors=out.isatty())
    else:  # pragma: no cover - guarded by the Literal type
        raise ConfigurationError(f"unknown log format {format!r}")
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            structlog.processors.format_exc_info,
            _redact_processor,
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(numeric),
        logger_factory=structlog.PrintLoggerFactory(out),
        cache_logger_on_first_use=False,
    )


def get_logger(name: str) -> Any:
    """A structlog logger bound with ``component=name``."""
    return structlog.get_logger(component=name)


@contextmanager
def bind_ids(**ids: str) -> Iterator[None]:
    """Bind ``agent_id`` / ``session_id`` / ``query_id`` (…) to every log line in this context."""
    with structlog.contextvars.bound_contextvars(**ids):
        yield
