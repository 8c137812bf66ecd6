"""Logging: structlog with one configuration entry point.

``configure_logging("console" | "json")`` sets up human-readable or JSON-lines
output. Ids of the running agent / session / query are bound with context
variables (``bind_ids``), so every line logged inside a Query names it, even
from inside a tool running in its own task. Every line passes through the
redaction net in ``xai._redact``: API keys never reach a log. What each level
shows, event by event: docs/logging.md.
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

__all__ = ["LogFormat", "bind_ids", "configure_logging", "get_logger"]

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


def _processors(renderer: Any) -> list[Any]:
    """Context, level, time, traceback, secrets masked, then ``renderer``."""
    return [
        structlog.contextvars.merge_contextvars,
        structlog.processors.add_log_level,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
        structlog.processors.format_exc_info,
        _redact_processor,
        renderer,
    ]


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
        processors=_processors(renderer),
        wrapper_class=structlog.make_filtering_bound_logger(numeric),
        logger_factory=structlog.PrintLoggerFactory(out),
        cache_logger_on_first_use=False,
    )


_fallback: Any = None


def _fallback_logger() -> Any:
    """Used while nobody configured structlog: warnings and up, on stderr, redacted.

    (structlog's own default prints everything to stdout, which would mix a
    library's log lines into a program's output.)
    """
    global _fallback
    if _fallback is None:
        _fallback = structlog.wrap_logger(
            structlog.PrintLogger(sys.stderr),
            processors=_processors(structlog.dev.ConsoleRenderer(colors=False)),
            wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING),
        )
    return _fallback


_FLOORS = {
    structlog.make_filtering_bound_logger(level): level
    for level in (logging.NOTSET, logging.DEBUG, logging.INFO, logging.WARNING, logging.ERROR)
}


def _floor() -> int:
    """The lowest level that is written now. An application's own wrapper class is not
    known here: everything goes to it, and it filters."""
    if not structlog.is_configured():
        return logging.WARNING
    return _FLOORS.get(structlog.get_config()["wrapper_class"], logging.NOTSET)


class _Logger:
    """xai's logger: the application's structlog setup if it has one, else the fallback.

    ``debug`` and ``info`` return at once when their level is filtered out (no
    structlog logger is built); guard fields that cost something to compute
    with ``enabled``.
    """

    __slots__ = ("_component",)

    def __init__(self, component: str) -> None:
        self._component = component

    def _target(self) -> Any:
        if structlog.is_configured():
            return structlog.get_logger(component=self._component)
        return _fallback_logger().bind(component=self._component)

    def enabled(self, level: Literal["debug", "info"]) -> bool:
        """Whether a line at ``level`` would be written (build costly fields only then)."""
        return _floor() <= (logging.DEBUG if level == "debug" else logging.INFO)

    def debug(self, event: str, **fields: Any) -> None:
        if _floor() <= logging.DEBUG:
            self._target().debug(event, **fields)

    def info(self, event: str, **fields: Any) -> None:
        if _floor() <= logging.INFO:
            self._target().info(event, **fields)

    def warning(self, event: str, **fields: Any) -> None:
        self._target().warning(event, **fields)

    def error(self, event: str, **fields: Any) -> None:
        self._target().error(event, **fields)

    def exception(self, event: str, **fields: Any) -> None:
        self._target().exception(event, **fields)


def get_logger(name: str) -> _Logger:
    """A logger bound with ``component=name`` that follows whatever structlog setup exists."""
    return _Logger(name)


@contextmanager
def bind_ids(**ids: str) -> Iterator[None]:
    """Bind ``agent_id`` / ``session_id`` / ``query_id`` (…) to every log line in this context."""
    with structlog.contextvars.bound_contextvars(**ids):
        yield
