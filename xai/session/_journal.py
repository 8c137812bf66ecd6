"""The Session journal: one append-only file of msgspec JSON lines per Session.

Everything a Session announces as final (an accepted input, the start of a
turn, a committed message, the end of a turn, a compaction, memory
candidates, the close) is written here *before* any observer hears of it, so
a process killed at any point loses nothing it announced. Reading it back
rebuilds the Session.

Records, in the order a Session writes them (``kind`` tags each line)::

    header        once, first: id, system prompt, parent, depth
    accepted      send() took an input (not yet started; ``interrupt``: it goes first)
    input         a turn begins with an input (the accepted one, now in the history)
    turn_start    a turn begins without one (``continue_turn``)
    message       a message of the turn is final (assistant round, tool result)
    turn_end      the turn's outcome (also an input refused by the turn budget)
    dropped       accepted inputs a close dropped: never to be run
    compacted     older history replaced by a summary
    candidates    memory candidates proposed   reported   the owner acknowledged some
    usage         requests outside a turn (summaries, extraction)
    closing       closed, but candidates the owner has not acknowledged remain
    closed        closed for good

Durability (``fsync``): ``"commit"`` syncs after every record (survives power
loss, costs a disk flush per message: ~0.1-10 ms depending on the disk),
``"turn"`` syncs at the end of each turn (a power cut may lose the turn in
progress, never a finished one; the default), ``"off"`` leaves it to the OS
(a process crash still loses nothing: the data is in the page cache).
Records written outside the Session's task (``accepted`` from ``send()``,
``reported`` and a late ``closed`` from ``acknowledge_candidates``) are single
``O_APPEND`` writes and are synced with the next commit or turn end.
"""

from __future__ import annotations

import functools
import os
import time
from pathlib import Path
from typing import Literal, TypeAlias, assert_never

import anyio
import msgspec

from xai._files import read_jsonl
from xai.events import CompactionMethod
from xai.exceptions import JournalError
from xai.logs import get_logger
from xai.messages import (
    CloseReason,
    Episode,
    MemoryCandidate,
    Message,
    TurnOutcome,
    Usage,
    UserMessage,
)
from xai.session._history import place
from xai.session._prompt import SystemPrompt
from xai.session._transcript import Transcript

__all__ = [
    "AcceptedRecord",
    "CandidatesRecord",
    "ClosedRecord",
    "ClosingRecord",
    "CompactedRecord",
    "DroppedRecord",
    "FsyncPolicy",
    "HeaderRecord",
    "InputRecord",
    "Journal",
    "JournalState",
    "MessageRecord",
    "Record",
    "ReportedRecord",
    "TurnEndRecord",
    "TurnStartRecord",
    "UsageRecord",
    "append_records",
    "aread_journal",
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


class AcceptedRecord(_Record, frozen=True, tag="accepted"):
    """``send()`` accepted an input; it waits for its turn (a restart runs it)."""

    message: UserMessage
    interrupt: bool = False
    """Sent with ``policy="interrupt"``: it goes before the inputs already waiting."""


class InputRecord(_Record, frozen=True, tag="input"):
    """A turn begins with ``message`` (accepted earlier, or by a journal older than
    ``accepted`` records); from here on it is part of the history."""

    turn: int
    message: UserMessage


class TurnStartRecord(_Record, frozen=True, tag="turn_start"):
    """A turn begins without an input (``continue_turn``)."""

    turn: int


class MessageRecord(_Record, frozen=True, tag="message"):
    turn: int
    message: Message


class TurnEndRecord(_Record, frozen=True, tag="turn_end"):
    """A turn's outcome; also an input refused at once by the turn budget (its
    ``outcome.input_id`` names the accepted input it consumed)."""

    outcome: TurnOutcome


class DroppedRecord(_Record, frozen=True, tag="dropped"):
    """Accepted inputs a close dropped before they started: a restart never runs them."""

    input_ids: tuple[str, ...]


class CompactedRecord(_Record, frozen=True, tag="compacted"):
    summary: str
    removed: int
    """How many messages were dropped from the front of the history."""
    method: CompactionMethod


class CandidatesRecord(_Record, frozen=True, tag="candidates"):
    candidates: tuple[MemoryCandidate, ...]


class ReportedRecord(_Record, frozen=True, tag="reported"):
    candidate_ids: tuple[str, ...]


class UsageRecord(_Record, frozen=True, tag="usage"):
    """Usage outside a turn's Query: summaries and memory extraction."""

    usage: Usage
    purpose: str


class ClosingRecord(_Record, frozen=True, tag="closing"):
    """The Session closed while the owner had not acknowledged all its candidates (a hook
    failed or timed out): it is closed only once they are (a later ``reported`` line
    then ends with ``closed``). A restart hands them to the owner again."""

    reason: CloseReason
    at: float


class ClosedRecord(_Record, frozen=True, tag="closed"):
    reason: CloseReason
    at: float


Record: TypeAlias = (
    HeaderRecord
    | AcceptedRecord
    | InputRecord
    | TurnStartRecord
    | MessageRecord
    | TurnEndRecord
    | DroppedRecord
    | CompactedRecord
    | CandidatesRecord
    | ReportedRecord
    | UsageRecord
    | ClosingRecord
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
        """fsync (unless the policy is ``off``). Shielded: a cancel waits for the disk (a
        bounded wait) rather than leave a written record unsynced while the caller
        believes it failed."""
        if self._fd is not None and self.fsync != "off":
            fd = self._fd
            with anyio.CancelScope(shield=True):
                await anyio.to_thread.run_sync(os.fsync, fd)

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


class JournalState(msgspec.Struct, kw_only=True):
    """A Session rebuilt from its journal."""

    header: HeaderRecord
    history: list[Message]
    """The conversation as the next request would see it: each tool result right after its
    call (orphans and second answers left out). Calls still without a result are answered
    by the reopened Session when it starts."""
    summary: str = ""
    usage: Usage = Usage()
    turns: int = 0
    """The highest turn number used so far (a new turn takes the next one)."""
    begun_inputs: int = 0
    """Inputs a turn began with (``input`` records; continued turns have none)."""
    open_turn: int | None = None
    """A turn that began and never ended: the process died during it."""
    pending: list[UserMessage] = msgspec.field(default_factory=list)
    """Inputs ``send()`` accepted that never started and were not dropped, in the order
    they would have run: a reopened Session runs them."""
    candidates: list[MemoryCandidate] = msgspec.field(default_factory=list)
    reported: set[str] = msgspec.field(default_factory=set)
    closing: CloseReason | None = None
    """Closed with candidates the owner had not acknowledged (``closing`` record, no
    ``closed`` after it): the owner must ``close(closing)`` the reopened Session."""
    closed: CloseReason | None = None
    episodes: list[Episode] = msgspec.field(default_factory=list)
    """Everything said, compacted turns included (see ``Transcript``)."""

    @property
    def unacknowledged(self) -> list[MemoryCandidate]:
        """Candidates the owner has not acknowledged."""
        return [c for c in self.candidates if c.id not in self.reported]


def read_journal(path: Path, *, repair: bool = True) -> JournalState:
    """Replay a journal. A torn last line (a kill mid-write) is skipped with a warning and,
    with ``repair``, cut off the file so later appends start on a clean line; a bad line
    anywhere else raises ``JournalError`` naming the file and line.
    """
    records = read_jsonl(path, _decode, repair=repair, what="journal")
    if not records or not isinstance(records[0], HeaderRecord):
        raise JournalError("the journal does not start with a header", path=str(path), line=1)
    return _replay(records, path)


async def aread_journal(path: Path, *, repair: bool = True) -> JournalState:
    """``read_journal`` in a worker thread: reading a journal is blocking file I/O."""
    return await anyio.to_thread.run_sync(functools.partial(read_journal, path, repair=repair))


def read_records(path: Path) -> list[Record]:
    """Every whole record of a journal, in order (a torn last line is left out).

    Unlike the replayed state, this keeps messages a compaction removed from
    the history: the complete record of the conversation.
    """
    return read_jsonl(path, _decode, repair=False, what="journal")


def append_records(path: Path, *records: Record) -> None:
    """Append to the journal of a Session that is no longer running (one ``O_APPEND``
    write per record, no sync)."""
    journal = Journal(path, fsync="off")
    try:
        for record in records:
            journal.append(record)
    finally:
        journal.close()


def _replay(records: list[Record], path: Path) -> JournalState:
    header = records[0]
    assert isinstance(header, HeaderRecord)
    state = JournalState(header=header, history=[])
    transcript = Transcript(header.session_id, header.created_at)
    pending = state.pending
    for number, record in enumerate(records[1:], start=2):
        if isinstance(record, HeaderRecord):
            raise JournalError("a second header", path=str(path), line=number)
        elif isinstance(record, AcceptedRecord):
            if record.interrupt:
                pending.insert(0, record.message)
            else:
                pending.append(record.message)
        elif isinstance(record, InputRecord):
            _unqueue(pending, (record.message.id,))
            state.begun_inputs += 1
            state.history.append(record.message)
            transcript.add(record.turn, record.message)
            state.open_turn = record.turn
            state.turns = max(state.turns, record.turn)
        elif isinstance(record, TurnStartRecord):
            state.open_turn = record.turn
            state.turns = max(state.turns, record.turn)
        elif isinstance(record, MessageRecord):
            if record.turn > state.turns:
                # A turn with no record of its start: a continued turn of a journal written
                # before ``turn_start`` existed. It is open until its end says otherwise.
                state.open_turn = state.turns = record.turn
            transcript.add(record.turn, record.message)
            if not place(state.history, record.message):
                _log.warning(
                    "journal.tool_result_left_out",
                    path=str(path),
                    message_id=record.message.id,
                    reason="its call is not in the history or already has a result",
                )
        elif isinstance(record, TurnEndRecord):
            outcome = record.outcome
            state.usage = state.usage + outcome.usage
            state.turns = max(state.turns, outcome.turn)
            state.open_turn = None
            if outcome.input_id is not None:  # an input the turn budget refused
                _unqueue(pending, (outcome.input_id,))
        elif isinstance(record, DroppedRecord):
            _unqueue(pending, record.input_ids)
        elif isinstance(record, CompactedRecord):
            state.summary = record.summary
            del state.history[: record.removed]
        elif isinstance(record, CandidatesRecord):
            state.candidates.extend(record.candidates)
        elif isinstance(record, ReportedRecord):
            state.reported.update(record.candidate_ids)
        elif isinstance(record, UsageRecord):
            state.usage = state.usage + record.usage
        elif isinstance(record, ClosingRecord):
            state.closing = record.reason
        elif isinstance(record, ClosedRecord):
            state.closed = record.reason
            state.closing = None
        else:
            assert_never(record)
    state.episodes = transcript.episodes
    return state


def _unqueue(pending: list[UserMessage], ids: tuple[str, ...]) -> None:
    if pending:
        gone = set(ids)
        pending[:] = [m for m in pending if m.id not in gone]


def now() -> float:
    return time.time()
