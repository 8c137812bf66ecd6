"""The events log of one streamed Session: its stream, on disk, so it outlives the process.

``<agent dir>/streams/<session id>.jsonl``, one JSON value a line, appended with one
``write`` per batch of events (no fsync: a killed process loses nothing it wrote, the
page cache keeps it; only a machine crash can). A line is either a ``SessionEvent`` (an
object) or a mark (an array): ``["opened", boot, start]`` each time a process takes the
log up (``boot``: the machine's boot id; ``start``: the number before the stream's first
event), ``["sealed"]`` when its writer let go of it cleanly (the Agent suspended:
fsynced, another machine may take it up; the Session closed: nothing more comes),
``["journal", position]`` where a log begins (made, or compacted): the position in the
Session's journal the stream begins after (``Session.announced`` when the stream was
made: the records up to there were announced before it). With the ``journal`` position
each journal-backed event carries, it tells how far in the journal the log has
announced (``Found.journal``), so that a restart knows exactly which records of the
journal the stream must still announce. (``["turns", ...]`` marks of older logs are
read and ignored: such a log's place in the journal is unknown.)

Reopening (``open_log``) keeps the numbering when nothing the old writer wrote can be
missing: the log is sealed, or its last writer ran on this machine since its last boot
(a killed process: its writes are in the page cache). Otherwise (the machine crashed,
or another machine's writer stopped without sealing, e.g. its node died) the tail may
be lost, and a number a reader holds may be past it: the log starts again as a new
stream, numbered from past any number the old one could have reached (after the wall
clock in microseconds), so an old number is refused, never taken for a new event's.
A torn or unreadable tail (a kill mid-write, a crash) is cut off.
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import os
import socket
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Literal, NamedTuple

import msgspec

from xai._files import space_checked
from xai.events import SessionClosed, SessionEvent, SessionEventBody
from xai.logs import get_logger

__all__ = [
    "CLOSED_LOG_GRACE",
    "STREAMS_DIR",
    "EventLog",
    "Found",
    "begin_log",
    "boot_id",
    "clock_start",
    "complete_log",
    "open_log",
    "read_log",
    "sweep_logs",
]

_log = get_logger(__name__)

STREAMS_DIR = "streams"
"""Under an Agent's directory: the events log of each Session a host streams."""

CLOSED_LOG_GRACE = 600.0
"""Seconds the log of a Session no longer open stays for readers catching up, at least."""

_encode = msgspec.json.Encoder().encode
_decode_event = msgspec.json.Decoder(SessionEvent).decode
_decode_mark = msgspec.json.Decoder(list[str | int]).decode


def clock_start() -> int:
    """A new stream's start: the wall clock in microseconds (a stream would need more than
    one event per microsecond to reach a later stream's numbers)."""
    return time.time_ns() // 1000


@functools.cache
def boot_id() -> str:
    """This machine's current boot: the same for every process until it reboots."""
    try:
        with open("/proc/sys/kernel/random/boot_id") as f:
            return f.read().strip()
    except OSError:  # not Linux: the host name and the boot time (to the minute)
        booted = int(time.time() - time.monotonic()) // 60
        return f"{socket.gethostname()}@{booted}"


def _journal(event: SessionEvent, position: int | None) -> int | None:
    """``position`` (how far in the journal a log has announced) moved on by ``event``."""
    at = event.journal
    if at is None:
        return position
    return at if position is None else max(position, at)


def _mark_line(position: int) -> bytes:
    return _encode(("journal", position)) + b"\n"


class Found(NamedTuple):
    """What a log holds."""

    start: int
    """The number before the stream's first event."""
    first: int
    """The number of the oldest event kept (``last + 1`` when none is)."""
    last: int
    """The number of the newest event (``start`` when none)."""
    events: int
    """How many events the file holds."""
    boot: str
    """The boot id of its last writer."""
    sealed: bool
    """Its last writer let go of it cleanly."""
    good: int
    """The length of its readable part (a torn tail is past it)."""
    journal: int | None = None
    """How far in the Session's journal it has announced: the position of the last
    record it announced or began after (``None``: a log from before ``journal`` marks)."""
    closed: bool = False
    """It holds its Session's ``session_closed``."""


def _scan(data: bytes, after: int | None) -> tuple[Found | None, list[SessionEvent]]:
    """The log's summary (``None``: no readable opening mark) and, if ``after`` is given,
    its events numbered above ``after``."""
    start = first = last = -1
    count = 0
    boot = ""
    sealed = False
    good = 0
    journal: int | None = None
    closed = False
    events: list[SessionEvent] = []
    offset = 0
    for line in data.split(b"\n")[:-1]:  # (the part after the last newline is torn)
        end = offset + len(line) + 1
        try:
            if line.startswith(b"["):
                mark = _decode_mark(line)
                if mark[:1] == ["opened"] and len(mark) == 3 and isinstance(mark[2], int):
                    if start < 0:
                        start = last = mark[2]
                    boot = str(mark[1])
                    sealed = False
                elif mark == ["sealed"] and start >= 0:
                    sealed = True
                elif (
                    mark[:1] == ["journal"]
                    and len(mark) == 2
                    and isinstance(mark[1], int)
                    and start >= 0
                ):
                    journal = mark[1] if journal is None else max(journal, mark[1])
                elif mark[:1] == ["turns"] and start >= 0:
                    pass  # (an older log's place in the turns: not a place in the journal)
                else:
                    raise msgspec.DecodeError(f"unknown mark {mark!r}")
            elif start >= 0:
                event = _decode_event(line)
                seq = event.seq
                if seq != last + 1 and (first >= 0 or seq <= last):  # (compacted: a later first)
                    raise msgspec.DecodeError(f"event {seq} after {last}")
                if first < 0:
                    first = seq
                last = seq
                count += 1
                sealed = False
                journal = _journal(event, journal)
                closed = closed or isinstance(event.event, SessionClosed)
                if after is not None and seq > after:
                    events.append(event)
            else:
                raise msgspec.DecodeError("an event before the opening mark")
        except (msgspec.DecodeError, msgspec.ValidationError):
            break  # the rest is torn or garbage (a crash): cut off from here
        offset = good = end
    if start < 0:
        return None, []
    found = Found(
        start=start,
        first=first if first >= 0 else last + 1,
        last=last,
        events=count,
        boot=boot,
        sealed=sealed,
        good=good,
        journal=journal,
        closed=closed,
    )
    return found, events


def read_log(path: Path, after: int) -> tuple[Found | None, list[SessionEvent]]:
    """What the log at ``path`` holds (``None``: nothing readable, or no file) and its
    events numbered above ``after``. Blocking."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None, []
    return _scan(data, after)


class EventLog:
    """A log taken up for appending, by the one process that streams its Session. Its file
    is open only while events come (``release`` closes it between turns: an idle Session
    holds no descriptor for it)."""

    __slots__ = ("_fd", "events", "journal", "path", "start")

    def __init__(self, path: Path, start: int, events: int, journal: int | None) -> None:
        self.path = path
        self._fd: int | None = None
        self.start = start
        self.events = events
        """Events in the file (past twice the window, ``compact`` keeps the window)."""
        self.journal = journal
        """How far in the journal the file has announced (``Found.journal``)."""

    def _open(self) -> int:
        if self._fd is None:
            self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND)
        return self._fd

    def _write(self, data: bytes) -> None:
        """One append; a failed one (a full disk) is cut back off, so the next starts on a
        clean line (``DiskFullError`` for a full disk)."""
        fd = self._open()
        view = memoryview(data)
        start = os.lseek(fd, 0, os.SEEK_END)
        with space_checked(self.path):
            try:
                while view:
                    view = view[os.write(fd, view) :]
            except OSError:
                with contextlib.suppress(OSError):
                    os.ftruncate(fd, start)
                raise

    def append(self, events: Sequence[SessionEvent]) -> None:
        """Append ``events`` in one write. Blocking, but no fsync: page-cache fast."""
        if events:
            self._write(b"".join(_encode(e) + b"\n" for e in events))
            self.events += len(events)
            for event in events:
                self.journal = _journal(event, self.journal)

    def compact(self, keep: int) -> None:
        """Keep only the last ``keep`` events: a new file, renamed over the old (readers
        that opened the old one read it whole). Blocking (a few MB at most)."""
        data = self.path.read_bytes()
        lines = [line for line in data.split(b"\n")[:-1] if line.startswith(b"{")]
        tmp = self.path.with_name(f".{self.path.name}.tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            kept = lines[-keep:]
            head = _encode(("opened", boot_id(), self.start)) + b"\n"
            if self.journal is not None:  # (where the file is now: the events cut say it)
                head += _mark_line(self.journal)
            view = memoryview(head + b"".join(line + b"\n" for line in kept))
            while view:
                view = view[os.write(fd, view) :]
        except BaseException:
            os.close(fd)
            tmp.unlink(missing_ok=True)
            raise
        os.close(fd)
        os.replace(tmp, self.path)
        self.release()  # (the old file's)
        self.events = len(kept)

    def seal(self) -> None:
        """Say the writer let go cleanly (then ``sync`` and ``close``). Blocking, small."""
        self._write(_encode(("sealed",)) + b"\n")

    def sync(self) -> None:
        """fsync. Blocking: call it in a worker thread."""
        os.fsync(self._open())

    def release(self) -> None:
        """Close the file until the next write."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


Opened = Literal["continued", "new", "restarted"]


def open_log(path: Path, journal: int | None = None) -> tuple[EventLog, Found, Opened]:
    """Take up the log at ``path`` for appending: ``continued`` (its numbering goes on),
    ``restarted`` (its tail may be lost: a new stream), or ``new`` (there was none). A log
    made here begins after ``journal`` (the position in the Session's journal the stream
    takes it up at, ``Session.announced``). Blocking."""
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        data = None
    found = _scan(data, None)[0] if data is not None else None
    how: Opened = "new" if data is None else "restarted"
    if found is not None and (found.sealed or found.boot == boot_id()):
        how = "continued"
        fd = os.open(path, os.O_WRONLY | os.O_APPEND)
        try:
            if found.good < len(data or b""):
                _log.warning(
                    "events_log.torn_tail_cut", path=str(path), bytes=len(data or b"") - found.good
                )
                os.truncate(fd, found.good)
            os.write(fd, _encode(("opened", boot_id(), found.start)) + b"\n")
        finally:
            os.close(fd)
        return EventLog(path, found.start, found.events, found.journal), found, how
    if found is not None:
        _log.warning(
            "events_log.restarted",
            path=str(path),
            last=found.last,
            reason="the last writer stopped without sealing it on another machine or boot",
        )
    start = max(clock_start(), found.last + 1 if found is not None else 0)
    tmp = path.with_name(f".{path.name}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        head = _encode(("opened", boot_id(), start)) + b"\n"
        os.write(fd, head + (_mark_line(journal) if journal is not None else b""))
    finally:
        os.close(fd)
    os.replace(tmp, path)
    fresh = Found(
        start=start,
        first=start + 1,
        last=start,
        events=0,
        boot=boot_id(),
        sealed=False,
        good=0,
        journal=journal,
    )
    return EventLog(path, start, 0, journal), fresh, how


def begin_log(path: Path, journal: int) -> bool:
    """Make the log at ``path``, begun after ``journal`` (``Session.announced``), unless
    there is one; True if made. Called as a stream is made for a running Session, before
    the Session can write a record past ``journal``: from then on a kill leaves a log that
    says where the stream began, so the next life tells what the journal has past it.
    (Left to ``load``, in a worker thread, the log could still be missing when a kill
    came after the Session's next record: the next life, finding no log, made a new
    stream at its reopened Session's ``announced``, the journal's end, and that record
    was told to no reader.) Blocking, but small: one short write, no fsync."""
    if path.exists():
        return False
    open_log(path, journal)  # (``new``: its file is closed)
    return True


def complete_log(
    path: Path, session_id: str, missing: Callable[[int], Sequence[tuple[int, SessionEventBody]]]
) -> None:
    """Complete the log of a Session that closed from its journal: ``missing(position)``
    gives the journal-backed events past the position the log has announced (with their
    positions), which a kill between a record and its event left out (inside the close's
    own sync, say); they are numbered on and appended, and the log sealed. Nothing is
    done when the log told its close, cannot say where it is in the journal, or may have
    lost its tail (an unsealed log of another boot). Under an exclusive lock on the file,
    so two readers that come for it at once add them once. Blocking."""
    try:
        fd = os.open(path, os.O_RDWR | os.O_APPEND)
    except FileNotFoundError:
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # (released when closed)
        data = path.read_bytes()
        found = _scan(data, None)[0]
        if found is None or found.closed or found.journal is None:
            return
        if not found.sealed and found.boot != boot_id():
            return
        told = missing(found.journal)
        if not told:
            return
        if found.good < len(data):
            os.ftruncate(fd, found.good)
        lines = [
            _encode(SessionEvent(session_id, found.last + n, body, at)) + b"\n"
            for n, (at, body) in enumerate(told, start=1)
        ]
        _log.warning(
            "events_log.completed_from_journal",
            path=str(path),
            events=[f"{type(body).__name__}@{at}" for at, body in told],
        )
        os.write(fd, b"".join(lines) + _encode(("sealed",)) + b"\n")
    finally:
        os.close(fd)


def sweep_logs(directory: Path, keep: set[str], before: float) -> list[str]:
    """Delete the logs in ``directory`` of Sessions not in ``keep`` (by id) last written
    before ``before`` (a wall-clock time); return their ids. Blocking."""
    gone: list[str] = []
    try:
        entries = list(os.scandir(directory))
    except FileNotFoundError:
        return gone
    for entry in entries:
        session_id = entry.name.removesuffix(".jsonl")
        if session_id == entry.name or session_id in keep:
            continue
        try:
            if entry.stat().st_mtime < before:
                os.unlink(entry.path)
                gone.append(session_id)
        except FileNotFoundError:
            continue
    return gone
