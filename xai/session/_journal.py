"""The Session journal: one append-only file of msgspec JSON lines per Session.

Everything a Session announces as final (an accepted input, a committed
message, the end of a turn, a compaction, memory candidates, the close) is
written here *before* any observer hears of it, so a process killed at any
point loses nothing it announced. Reading it back rebuilds the Session.

Durability (``fsync``): ``"commit"`` syncs after every record (survives power
loss, costs a disk flush per message: ~0.1-10 ms depending on the disk),
``"turn"`` syncs at the end of each turn (a power cut may lose the turn in
progress, never a finished one; the default), ``"off"`` leaves it to the OS
(a process crash still loses nothing: the data is in the page cache).
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Literal, TypeAlias

import anyio
import msgspec

from xai._files import read_jsonl
from xai.exceptions import JournalError
from xai.logs import get_logger
from xai.messages import (
    CloseReason,
    MemoryCandidate,
    Message,
    TurnOutcome,
    Usage,
    UserMessage,
)
from xai.session._prompt import SystemPrompt

__all__ = [
    "FsyncPolicy",
    "Journal",
    "JournalState",
    "Record",
    "read_journal",
    "read_records",
]

_log = get_logger(__name__)

FsyncPolicy: TypeAlias = Literal["commit", "turn", "off"]
JOURNAL_FILE = "journal.jsonl"
VERSION = 1


class _Record(msgspec.Struct, frozen=True, kw_only=True, tag_field="kind"):
    pass


class HeaderRecord(_Record, frozen=True, tag="header"):
    session_id: str
    created_at: float
    system: SystemPrompt
    parent_id: str | None = None
    depth: int = 0
    version: int = VERSION


class InputRecord(_Record, frozen=True, tag="input"):
    turn: int
    message: UserMessage


class MessageRecord(_Record, frozen=True, tag="message"):
    turn: int
    message: Message


class TurnEndRecord(_Record, frozen=True, tag="turn_end"):
    outcome: TurnOutcome


class CompactedRecord(_Record, frozen=True, tag="compacted"):
    summary: str
    removed: int
    """How many messages were dropped from the front of the history."""
    method: str


class CandidatesRecord(_Record, frozen=True, tag="candidates"):
    candidates: tuple[MemoryCandidate, ...]


class ReportedRecord(_Record, frozen=True, tag="reported"):
    candidate_ids: tuple[str, ...]


class UsageRecord(_Record, frozen=True, tag="usage"):
    """Usage outside a turn's Query: summaries and memory extraction."""

    usage: Usage
    purpose: str


class ClosedRecord(_Record, frozen=True, tag="closed"):
    reason: CloseReason
    at: float


Record: TypeAlias = (
    HeaderRecord
    | InputRecord
    | MessageRecord
    | TurnEndRecord
    | CompactedRecord
    | CandidatesRecord
    | ReportedRecord
    | UsageRecord
    | ClosedRecord
)

_encode = msgspec.json.Encoder().encode
_decode = msgspec.json.Decoder(Record).decode


class Journal:
    """An open journal file. Appends are single ``write`` calls to an ``O_APPEND`` descriptor."""

    __slots__ = ("_fd", "fsync", "path")

    def __init__(self, path: Path, *, fsync: FsyncPolicy = "turn") -> None:
        self.path = path
        self.fsync: FsyncPolicy = fsync
        path.parent.mkdir(parents=True, exist_ok=True)
        self._fd: int | None = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)

    def append(self, record: Record) -> None:
        if self._fd is None:
            raise RuntimeError(f"journal {self.path} is closed")
        data = memoryview(_encode(record) + b"\n")
        while data:
            written = os.write(self._fd, data)
            data = data[written:]

    async def commit(self, record: Record) -> None:
        """Append, then sync if the policy syncs every record."""
        self.append(record)
        if self.fsync == "commit":
            await self.sync()

    async def sync(self) -> None:
        if self._fd is not None and self.fsync != "off":
            fd = self._fd
            await anyio.to_thread.run_sync(os.fsync, fd)

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


class JournalState(msgspec.Struct, kw_only=True):
    """A Session rebuilt from its journal."""

    header: HeaderRecord
    history: list[Message]
    summary: str = ""
    usage: Usage = Usage()
    turns: int = 0
    open_turn: int | None = None
    """A turn that began and never ended: the process died during it."""
    candidates: list[MemoryCandidate] = msgspec.field(default_factory=list)
    reported: set[str] = msgspec.field(default_factory=set)
    closed: CloseReason | None = None
    closing: CloseReason | None = None
    """Close began (for this reason) but not every candidate was acknowledged."""


def read_journal(path: Path, *, repair: bool = True) -> JournalState:
    """Replay a journal. A torn last line (a kill mid-write) is skipped with a warning and,
    with ``repair``, cut off the file so later appends start on a clean line; a bad line
    anywhere else raises ``JournalError`` naming the file and line.
    """
    records = read_jsonl(path, _decode, repair=repair, what="journal")
    if not records or not isinstance(records[0], HeaderRecord):
        raise JournalError("the journal does not start with a header", path=str(path), line=1)
    return _replay(records)


def read_records(path: Path) -> list[Record]:
    """Every whole record of a journal, in order (a torn last line is left out).

    Unlike the replayed state, this keeps messages a compaction removed from
    the history: the complete record of the conversation.
    """
    return read_jsonl(path, _decode, repair=False, what="journal")


def _replay(records: list[Record]) -> JournalState:
    header = records[0]
    assert isinstance(header, HeaderRecord)
    state = JournalState(header=header, history=[])
    for record in records[1:]:
        if isinstance(record, InputRecord):
            state.history.append(record.message)
            state.open_turn = record.turn
            state.turns = max(state.turns, record.turn)
        elif isinstance(record, MessageRecord):
            state.history.append(record.message)
        elif isinstance(record, TurnEndRecord):
            state.usage = state.usage + record.outcome.usage
            state.turns = max(state.turns, record.outcome.turn)
            state.open_turn = None
        elif isinstance(record, CompactedRecord):
            state.summary = record.summary
            del state.history[: record.removed]
        elif isinstance(record, CandidatesRecord):
            state.candidates.extend(record.candidates)
        elif isinstance(record, ReportedRecord):
            state.reported.update(record.candidate_ids)
        elif isinstance(record, UsageRecord):
            state.usage = state.usage + record.usage
        elif isinstance(record, ClosedRecord):
            state.closed = record.reason
    return state


def now() -> float:
    return time.time()
