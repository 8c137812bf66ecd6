"""Durable files: atomic whole-file writes and append-only JSON-lines logs read back safely.

Sessions' journals, the memory ledger, schedules, personas and the runner's
artifacts all rely on the same two guarantees, kept here once.
"""

from __future__ import annotations

import errno
import hashlib
import os
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

import msgspec

from xai.exceptions import DiskFullError, JournalError
from xai.logs import get_logger

__all__ = [
    "QUOTED_LENGTH",
    "erased_mark",
    "is_disk_full",
    "read_jsonl",
    "scrub_file",
    "scrub_value",
    "space_checked",
    "write_atomic",
]

_log = get_logger(__name__)

T = TypeVar("T")


_NO_SPACE = frozenset({errno.ENOSPC, errno.EDQUOT})


def is_disk_full(exc: BaseException) -> bool:
    """``exc`` says the disk (or the user's quota on it) is full."""
    return isinstance(exc, OSError) and exc.errno in _NO_SPACE


@contextmanager
def space_checked(path: Path | str) -> Iterator[None]:
    """Raise a full disk (``ENOSPC``/``EDQUOT``) met inside as ``DiskFullError(path)``:
    one typed error the callers (a Session, the memory, the gateway's 507) can tell from a
    bug. Other ``OSError``s pass unchanged."""
    try:
        yield
    except DiskFullError:
        raise
    except OSError as exc:
        if exc.errno in _NO_SPACE:
            _log.error("disk.full", path=str(path), error=exc.strerror)
            raise DiskFullError(str(path), errno=exc.errno) from exc
        raise


def write_atomic(path: Path, data: bytes) -> None:
    """Write so that a kill leaves the old file or the new one, never half of one. A full
    disk is a ``DiskFullError`` and leaves the old file (the temporary one is removed)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    with space_checked(path):
        try:
            with tmp.open("wb") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
        except OSError:
            tmp.unlink(missing_ok=True)
            raise
        os.replace(tmp, path)


def read_jsonl(path: Path, decode: Callable[[bytes], T], *, repair: bool, what: str) -> list[T]:
    """Every record of an append-only JSON-lines file.

    A torn last line (a kill mid-write) is skipped with a ``<what>.torn_tail_skipped``
    warning and, with ``repair``, cut off the file; a whole last record that only lacks
    its newline gets one, so later appends start on a clean line. A bad line anywhere
    else raises ``JournalError`` naming the file and line.
    """
    raw = path.read_bytes()
    lines = raw.split(b"\n")
    records: list[T] = []
    good_end = 0
    offset = 0
    for number, line in enumerate(lines, start=1):
        end = offset + len(line) + 1
        offset = end
        if line.strip():
            try:
                records.append(decode(line))
            except (msgspec.DecodeError, msgspec.ValidationError) as exc:
                is_last = number == len(lines) or (number == len(lines) - 1 and lines[-1] == b"")
                if not is_last:
                    raise JournalError(
                        f"corrupt record ({exc})", path=str(path), line=number
                    ) from None
                _log.warning(
                    f"{what}.torn_tail_skipped", path=str(path), line=number, bytes=len(line)
                )
                break
        good_end = min(end, len(raw))
    if repair and good_end < len(raw):
        os.truncate(path, good_end)
    elif repair and raw and not raw.endswith(b"\n"):
        with path.open("ab") as f:
            f.write(b"\n")
    return records


QUOTED_LENGTH = 12
"""A needle at least this long is erased wherever it is quoted, inside other strings too."""


def erased_mark(text: str) -> str:
    """What stands where ``text`` was erased: its SHA-256 (to recognise it, never to read it)."""
    return f"[erased sha256:{hashlib.sha256(text.encode()).hexdigest()}]"


def scrub_value(value: Any, needles: Sequence[str]) -> Any:
    """``value`` (decoded JSON) with every occurrence of each needle in each of its strings
    (keys too) replaced by its ``erased_mark``; the same object when nothing was found.
    A needle shorter than ``QUOTED_LENGTH`` is erased only where it is a whole string (a
    short "yes" is not looked for inside every other text)."""
    if isinstance(value, str):
        out = value
        for needle in needles:
            if out == needle:
                return erased_mark(needle)
            if len(needle) >= QUOTED_LENGTH and needle in out:
                out = out.replace(needle, erased_mark(needle))
        return out
    if isinstance(value, list):
        items = [scrub_value(v, needles) for v in value]
        return value if all(a is b for a, b in zip(items, value, strict=True)) else items
    if isinstance(value, dict):
        pairs = [(scrub_value(k, needles), scrub_value(v, needles)) for k, v in value.items()]
        same = all(
            k is k0 and v is v0 for (k, v), (k0, v0) in zip(pairs, value.items(), strict=True)
        )
        return value if same else dict(pairs)
    return value


def scrub_file(path: Path, needles: Sequence[str]) -> bool:
    """Erase the needles from a JSON or JSON-lines file (every string of every record),
    rewritten atomically; lines that hold none stay byte for byte. A line that is not JSON
    (a torn tail) and holds a needle is dropped. Returns whether the file changed.
    Blocking: call in a worker thread."""
    raw = path.read_bytes()
    wanted = [n for n in needles if n]
    if not wanted:
        return False
    try:  # one JSON value (a pretty one too), else JSON lines
        whole = msgspec.json.decode(raw)
    except msgspec.DecodeError:
        pass
    else:
        scrubbed = scrub_value(whole, wanted)
        if scrubbed is whole:
            return False
        write_atomic(path, msgspec.json.encode(scrubbed) + (b"\n" if raw.endswith(b"\n") else b""))
        return True
    lines = raw.split(b"\n")
    changed = False
    for number, line in enumerate(lines):
        if not line.strip():
            continue
        try:
            record = msgspec.json.decode(line)
        except msgspec.DecodeError:
            if any(n.encode() in line for n in wanted):
                lines[number], changed = b"", True
            continue
        scrubbed = scrub_value(record, wanted)
        if scrubbed is not record:
            lines[number], changed = msgspec.json.encode(scrubbed), True
    if changed:
        write_atomic(path, b"\n".join(lines))
    return changed
