"""Every error that ends an ``xai`` command, turned into one line for a person: what went
wrong and what to fix. The one place that does it; no command prints its own.

    explain(error) -> Explained(message, code)

Typed errors (``xai.exceptions``) carry their own wording; an ``OSError`` from the file
system or a socket is worded here, naming the path or the address. Anything else is a bug
of xai: one line too, and ``--log-level debug`` shows where it happened.
"""

from __future__ import annotations

import errno
import socket
from pathlib import Path

import msgspec

from xai.exceptions import ConfigurationError, RunError, UsageError

__all__ = [
    "EXIT_FAILED",
    "EXIT_INTERRUPTED",
    "EXIT_OK",
    "EXIT_USAGE",
    "MODEL_VARIABLES",
    "Explained",
    "explain",
    "no_model",
    "port_error",
    "single_error",
]

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2  # bad usage or configuration: a setting, a directory or a port to fix
EXIT_INTERRUPTED = 130

MODEL_VARIABLES = ("LLM_BASE_URL", "LLM_MODEL", "LLM_API_KEY")

# Errors that mean "the environment is set up wrong" (fix a path or a permission), as
# opposed to a run that failed: exit 2 like any other configuration error.
_SETUP_ERRNOS = frozenset(
    {errno.EACCES, errno.EPERM, errno.ENOTDIR, errno.EISDIR, errno.EEXIST, errno.EROFS}
)


class Explained(msgspec.Struct, frozen=True):
    """One line (without the ``xai: `` prefix; empty: print nothing) and the exit code."""

    message: str
    code: int


def no_model(detail: str | None = None) -> ConfigurationError:
    """The error of every command that needs a model and has none: one wording everywhere."""
    why = f" ({detail})" if detail else ""
    return ConfigurationError(
        f"no model configured{why}: set LLM_API_KEY, LLM_BASE_URL and LLM_MODEL (any "
        "OpenAI-compatible API; an endpoint on this machine needs no key), or run "
        "`xai demo` for an offline tour",
        variable="LLM_MODEL",
    )


def port_error(error: OSError, host: str, port: int, option: str) -> Exception:
    """``error`` from binding ``host:port``, as a ``ConfigurationError`` naming ``option``
    when it says the address cannot be had (else ``error`` itself)."""
    address = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    if isinstance(error, socket.gaierror):
        return ConfigurationError(
            f"{option}: {host!r} is not an address of this machine ({error.strerror})",
            variable=option,
        )
    if error.errno == errno.EADDRINUSE:
        why = "is in use by another program"
    elif error.errno == errno.EADDRNOTAVAIL:
        why = "is not an address of this machine"
    elif error.errno == errno.EACCES:
        why = "needs privileges to bind (ports below 1024)"
    else:
        return error
    return ConfigurationError(
        f"{address} {why}: choose another with {option} (port 0 picks a free one)",
        variable=option,
    )


def single_error(error: BaseException) -> BaseException:
    """The error a (nested) exception group was raised for: its first leaf."""
    while isinstance(error, BaseExceptionGroup) and error.exceptions:
        error = error.exceptions[0]
    return error


def explain(error: BaseException) -> Explained | None:
    """The line and exit code for ``error``; ``None`` for an error xai does not know (a
    bug: the caller prints its type and message, and its traceback when debugging)."""
    error = single_error(error)
    if isinstance(error, KeyboardInterrupt):
        return Explained("", EXIT_INTERRUPTED)
    if isinstance(error, ConfigurationError) and _is_missing_model(error):
        # The library's own wording names one variable and `model=...`; a command's user
        # gets the same sentence from every command.
        detail = str(error).partition(" (set")[0] if error.variable == "LLM_API_KEY" else None
        return Explained(str(no_model(detail or "LLM_MODEL is not set")), EXIT_USAGE)
    if isinstance(error, UsageError):
        return Explained(str(error), EXIT_USAGE)
    if isinstance(error, RunError):
        return Explained(f"the run failed: {error}", EXIT_FAILED)
    if isinstance(error, ModuleNotFoundError):
        return Explained(
            f"{error.name or 'a module'} is not installed: install the extra this command "
            "needs (`xai COMMAND --help` names it)",
            EXIT_USAGE,
        )
    if isinstance(error, OSError):
        return _os_error(error)
    return None


def _is_missing_model(error: ConfigurationError) -> bool:
    text = str(error)
    return text.startswith("no model configured") or (
        error.variable == "LLM_API_KEY" and text.startswith("LLM_API_KEY is not set")
    )


def _os_error(error: OSError) -> Explained:
    """A file-system error, naming the path to fix (the first one that is not a directory,
    or cannot be written)."""
    path = error.filename
    if path is None:
        return Explained(f"{error.strerror or error}", EXIT_FAILED)
    where = Path(str(path))
    if error.errno == errno.ENOSPC:
        return Explained(f"no space left on the disk of {where}: free some space", EXIT_FAILED)
    if error.errno == errno.EDQUOT:
        return Explained(f"the disk quota of {where} is used up: free some space", EXIT_FAILED)
    blocker = _not_a_directory(where)
    if blocker is not None:
        return Explained(
            f"cannot use {where}: {blocker} is a file, not a directory; choose another "
            "directory (or move the file)",
            EXIT_USAGE,
        )
    if error.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
        return Explained(
            f"cannot write {where}: {error.strerror}; choose a directory you can write",
            EXIT_USAGE,
        )
    code = EXIT_USAGE if error.errno in _SETUP_ERRNOS else EXIT_FAILED
    return Explained(f"{where}: {error.strerror or error}", code)


def _not_a_directory(path: Path) -> Path | None:
    """The nearest ancestor of ``path`` (itself excluded) that exists and is a file."""
    for parent in path.parents:
        try:
            if parent.exists():
                return parent if not parent.is_dir() else None
        except OSError:
            return None
    return None
