"""``xai doctor DIR``: check an Agent directory offline, and with ``--repair`` mend it.

Read-only by default: every finding says what ``--repair`` would do. A repair never
guesses at what a damaged line said: it cuts a torn last line (a kill mid-write), sets a
damaged Session journal aside (``.quarantined``, as the Agent does at its start), removes
an empty directory that stands where ``agent.lock`` should be, and moves a memory index
that cannot be read or disagrees with the ledger aside (the memory rebuilds its index from
the ledger the next time it opens). A ledger or episodes file damaged before its last line
is reported, not changed: restore it from a backup. Repairs take the Agent's lock first,
so a running Agent is never changed under it.

Exit codes: 0 nothing left to fix, 1 problems remain (a dry run that found any, or ones a
repair cannot fix), 2 the directory is not there or is in use.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import os
import sqlite3
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Literal

import msgspec

from xai._files import read_jsonl
from xai.cli._errors import EXIT_FAILED, EXIT_OK
from xai.exceptions import AgentLockedError, ConfigurationError, JournalError
from xai.session import JOURNAL_FILE, read_journal

__all__ = ["Finding", "add_doctor_parser", "check", "doctor_command"]

Severity = Literal["ok", "note", "problem"]


class Finding(msgspec.Struct, frozen=True, kw_only=True):
    """One file's state: ``what`` is wrong (or ``ok``), ``action`` what a repair does
    (empty: nothing it can do), ``fixed`` whether this run did it."""

    file: str
    severity: Severity
    what: str
    action: str = ""
    advice: str = ""
    """What to do by hand (a repair cannot)."""
    fixed: bool = False

    @property
    def remains(self) -> bool:
        return self.severity == "problem" and not self.fixed


def add_doctor_parser(
    sub: argparse._SubParsersAction[argparse.ArgumentParser], common: argparse.ArgumentParser
) -> None:
    doctor = sub.add_parser(
        "doctor",
        parents=[common],
        help="check an Agent directory offline (and repair it with --repair)",
        description="Check an Agent directory while no process runs it: identity, lock, "
        "memory ledger, episodes, Session journals, memory index against the ledger. Says "
        "what it would change; --repair changes it. Exit code 1 while problems remain.",
    )
    doctor.add_argument("directory", type=Path, metavar="DIR", help="the Agent's directory")
    doctor.add_argument("--repair", action="store_true", help="make the changes it reports")
    doctor.add_argument("--json", action="store_true", help="one JSON finding per line")


def doctor_command(args: argparse.Namespace) -> int:
    directory = Path(args.directory).expanduser()
    findings = check(directory, repair=args.repair)
    for finding in findings:
        if args.json:
            print(msgspec.json.encode(finding).decode())
        else:
            print(_line(finding, repair=args.repair))
    left = sum(f.remains for f in findings)
    if not args.json:
        print(f"{left} problem(s) left" if left else "nothing left to fix")
    return EXIT_FAILED if left else EXIT_OK


def _line(finding: Finding, *, repair: bool) -> str:
    if finding.severity == "ok":
        return f"ok       {finding.file}: {finding.what}"
    if finding.fixed:
        return f"fixed    {finding.file}: {finding.what} -> {finding.action}"
    label = "note    " if finding.severity == "note" else "problem "
    text = f"{label} {finding.file}: {finding.what}"
    if finding.action and not repair:
        text += f" (--repair would: {finding.action})"
    if finding.advice:
        text += f": {finding.advice}"
    return text


def check(directory: Path, *, repair: bool = False) -> list[Finding]:
    """Every finding about the Agent directory ``directory``; with ``repair``, under its
    lock, the repairs made. ``ConfigurationError`` if it is not a directory,
    ``AgentLockedError`` if a process runs it (repairs only)."""
    if not directory.is_dir():
        raise ConfigurationError(f"{directory} is not a directory (an Agent's directory?)")
    findings: list[Finding | None] = [_lock(directory, repair)]
    with _held(directory, repair):
        findings.append(_identity(directory))
        memory = directory / "memory"
        findings.extend(_ledger(memory / "ledger.jsonl", memory / "episodes.jsonl", repair))
        findings.append(_lines(memory / "episodes.jsonl", "episodes", repair))
        findings.extend(_journals(directory / "sessions", repair))
        findings.append(_index(memory, repair))
    return [f for f in findings if f is not None]


# -- the lock ------------------------------------------------------------------------


def _lock(directory: Path, repair: bool) -> Finding:
    path = directory / "agent.lock"
    name = "agent.lock"
    if path.is_dir():
        empty = not any(path.iterdir())
        finding = Finding(
            file=name,
            severity="problem",
            what="a directory stands where the lock file should be",
            action="remove the empty directory" if empty else "",
            advice="" if empty else "it is not empty: look inside, then remove it",
        )
        if repair and empty:
            path.rmdir()
            return msgspec.structs.replace(finding, fixed=True)
        return finding
    if not path.exists():
        return Finding(file=name, severity="ok", what="not held (no lock file yet)")
    pid = _holder(path)
    if pid is not None:
        return Finding(file=name, severity="note", what=f"held by a running process ({pid})")
    return Finding(file=name, severity="ok", what="not held")


def _holder(path: Path) -> int | str | None:
    """The pid of the process holding the lock (``"?"`` if unknown), or ``None``."""
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            text = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
            return int(text) if text.isdigit() else "?"
        fcntl.flock(fd, fcntl.LOCK_UN)
        return None
    finally:
        os.close(fd)


@contextlib.contextmanager
def _held(directory: Path, repair: bool) -> Iterator[None]:
    """With ``repair``: the Agent's lock, for the repairs (refused while an Agent runs)."""
    path = directory / "agent.lock"
    if not repair or path.is_dir():
        yield
        return
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            text = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
            raise AgentLockedError(str(directory), int(text) if text.isdigit() else None) from None
        yield
    finally:
        os.close(fd)  # releases the lock


# -- identity --------------------------------------------------------------------------


class _Identity(msgspec.Struct):
    agent_id: str
    created_at: float


def _identity(directory: Path) -> Finding:
    path = directory / "agent.json"
    if not path.exists():
        return Finding(file="agent.json", severity="note", what="missing (made at next start)")
    try:
        info = msgspec.json.decode(path.read_bytes(), type=_Identity)
    except (msgspec.DecodeError, msgspec.ValidationError) as exc:
        return Finding(
            file="agent.json",
            severity="problem",
            what=f"damaged ({exc})",
            advice="restore it from a backup (it names the Agent's id)",
        )
    return Finding(file="agent.json", severity="ok", what=f"agent {info.agent_id}")


# -- append-only files -----------------------------------------------------------------


def _torn(path: Path, decode: Callable[[bytes], object], what: str) -> tuple[int, int]:
    """(records, bytes past the last whole record). ``JournalError`` for damage before the
    last line."""
    raw = path.read_bytes()
    records = read_jsonl(path, decode, repair=False, what=what)
    good = 0
    seen = 0
    for line in raw.split(b"\n")[:-1] if raw.endswith(b"\n") else raw.split(b"\n"):
        if seen == len(records):
            break
        good += len(line) + 1
        if line.strip():
            seen += 1
    return len(records), max(0, len(raw) - good)


def _lines(path: Path, what: str, repair: bool) -> Finding | None:
    """A JSON-lines file: whole, torn at its end (cut on repair) or damaged (reported)."""
    name = f"memory/{path.name}"
    if not path.exists():
        return None
    try:
        records, torn = _torn(path, msgspec.json.decode, what)
    except JournalError as exc:
        return Finding(
            file=name,
            severity="problem",
            what=f"damaged at line {exc.line}",
            advice="restore it from a backup (a repair does not guess what the line said)",
        )
    if not torn:
        return Finding(file=name, severity="ok", what=f"{records} record(s)")
    finding = Finding(
        file=name,
        severity="problem",
        what=f"a torn last line ({torn} bytes, a write cut short)",
        action="cut it off",
    )
    if repair:
        read_jsonl(path, msgspec.json.decode, repair=True, what=what)
        return msgspec.structs.replace(finding, fixed=True)
    return finding


class _Seq(msgspec.Struct):
    seq: int


def _ledger(path: Path, episodes: Path, repair: bool) -> Iterator[Finding]:
    if not path.exists():
        if episodes.exists() and episodes.stat().st_size:
            yield Finding(
                file="memory/ledger.jsonl",
                severity="note",
                what="missing though episodes were recorded: if it was deleted, restore it "
                "from a backup (every fact is in it)",
            )
        return
    finding = _lines(path, "ledger", repair)
    if finding is None:
        return
    if finding.remains and not finding.action:
        yield finding  # damaged: its numbering cannot be read past the damage
        return
    decode = msgspec.json.Decoder(_Seq).decode
    numbers = read_jsonl(path, decode, repair=False, what="ledger")  # (whole lines: read)
    for line, number in enumerate(numbers, start=1):
        if number.seq != line:
            yield Finding(
                file="memory/ledger.jsonl",
                severity="problem",
                what=f"decision {line} is missing (line {line} holds decision {number.seq})",
                advice="restore it from a backup",
            )
            break
    yield finding


def _journals(sessions: Path, repair: bool) -> Iterator[Finding]:
    if not sessions.is_dir():
        return
    for folder in sorted(p for p in sessions.iterdir() if p.is_dir()):
        journal = folder / JOURNAL_FILE
        if not journal.is_file():
            continue
        name = f"sessions/{folder.name}/{JOURNAL_FILE}"
        try:
            read_journal(journal, repair=False)
            _, torn = _torn(journal, msgspec.json.decode, "journal")
        except (JournalError, OSError) as exc:
            finding = Finding(
                file=name,
                severity="problem",
                what=f"damaged ({exc})",
                action="set it aside as journal.jsonl.quarantined (the Agent does so at its "
                "start too, recovering its memory candidates first: prefer starting it)",
            )
            if repair:
                _set_aside(journal)
                finding = msgspec.structs.replace(finding, fixed=True)
            yield finding
            continue
        if torn:
            finding = Finding(
                file=name,
                severity="problem",
                what=f"a torn last line ({torn} bytes)",
                action="cut it off",
            )
            if repair:
                read_journal(journal, repair=True)
                finding = msgspec.structs.replace(finding, fixed=True)
            yield finding


def _set_aside(journal: Path) -> Path:
    target = journal.with_name(journal.name + ".quarantined")
    number = 1
    while target.exists():
        number += 1
        target = journal.with_name(f"{journal.name}.quarantined.{number}")
    os.rename(journal, target)
    return target


# -- the memory index ------------------------------------------------------------------


def _index(memory: Path, repair: bool) -> Finding | None:
    """The memory's own index (``memory/index``; an index shared under a host's root is
    the host's to check) against the ledger's active facts."""
    index = memory / "index"
    database = index / "chroma.sqlite3"
    if not database.exists():
        return None
    name = "memory/index/chroma.sqlite3"
    problem = _unreadable(database)
    if problem is None:
        indexed = _indexed_facts(database)
        active = _active_facts(memory / "ledger.jsonl")
        if indexed is not None and active is not None and indexed != active:
            problem = f"holds {indexed} facts where the ledger has {active} active"
    if problem is None:
        return Finding(file=name, severity="ok", what="readable, agrees with the ledger")
    finding = Finding(
        file=name,
        severity="problem",
        what=problem,
        action="move memory/index aside (rebuilt from the ledger when the memory next opens)",
    )
    if repair:
        os.rename(index, memory / f"index.set-aside-{int(time.time())}")
        return msgspec.structs.replace(finding, fixed=True)
    return finding


def _unreadable(database: Path) -> str | None:
    try:
        with contextlib.closing(sqlite3.connect(f"file:{database}?mode=ro", uri=True)) as db:
            result = db.execute("PRAGMA quick_check").fetchone()
    except sqlite3.DatabaseError as exc:
        return f"cannot be read ({exc})"
    if result is None or result[0] != "ok":
        return f"damaged ({result[0] if result else 'no answer'})"
    return None


def _indexed_facts(database: Path) -> int | None:
    """How many facts the ``facts`` collection holds (``None``: a layout not known)."""
    query = (
        "SELECT COUNT(*) FROM embeddings e JOIN segments s ON e.segment_id = s.id "
        "JOIN collections c ON s.collection = c.id WHERE c.name = 'facts'"
    )
    try:
        with contextlib.closing(sqlite3.connect(f"file:{database}?mode=ro", uri=True)) as db:
            row = db.execute(query).fetchone()
    except sqlite3.DatabaseError:
        return None
    return int(row[0]) if row else None


class _Status(msgspec.Struct):
    id: str
    status: str = "active"  # (a change omits its default)


class _LedgerFacts(msgspec.Struct):
    facts: list[_Status] = []
    changes: list[_Status] = []


def _active_facts(ledger: Path) -> int | None:
    """Active facts by the ledger (``None`` if it cannot be read)."""
    if not ledger.exists():
        return 0
    try:
        lines = read_jsonl(
            ledger, msgspec.json.Decoder(_LedgerFacts).decode, repair=False, what="ledger"
        )
    except (JournalError, OSError):
        return None
    status: dict[str, str] = {}
    for line in lines:
        for fact in (*line.facts, *line.changes):
            status[fact.id] = fact.status
    return sum(1 for s in status.values() if s == "active")
