"""The Session journal: one append-only file of msgspec JSON lines per Session, and
``JournalView``, the one way to read it (the record types stay private to ``xai.session``).

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
    mood          what a turn changed in the user's and the Agent's mood (after its end)
    usage         requests outside a turn (summaries, extraction)
    approval_asked    a call of the open turn waits for a person's decision
    approval_decided  the decision (before it is applied)
    tool_start        an approved call is about to run (a restart never runs it twice)
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

import contextlib
import functools
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import assert_never

import anyio
import msgspec

from xai._files import read_jsonl, space_checked
from xai.exceptions import JournalError, NotOpenError
from xai.logs import get_logger
from xai.messages import (
    ApprovalDecision,
    CloseReason,
    Episode,
    MemoryCandidate,
    Message,
    PendingApproval,
    TurnOutcome,
    TurnStatus,
    Usage,
    UserMessage,
)
from xai.mood import MoodDelta
from xai.session._history import place, unanswered_calls
from xai.session._prompt import SystemPrompt
from xai.session._records import (
    AcceptedRecord,
    ApprovalAskedRecord,
    ApprovalDecidedRecord,
    CandidatesRecord,
    ClosedRecord,
    ClosingRecord,
    CompactedRecord,
    DroppedRecord,
    FsyncPolicy,
    HeaderRecord,
    InputRecord,
    MessageRecord,
    MoodRecord,
    Record,
    ReportedRecord,
    ToolStartRecord,
    TurnEndRecord,
    TurnStartRecord,
    UsageRecord,
    decode_record,
    encode_record,
)
from xai.session._totals import JournalTotals, read_totals
from xai.session._transcript import Transcript

__all__ = [
    "Journal",
    "JournalState",
    "JournalView",
    "TurnView",
    "append_records",
    "aread_journal",
    "now",
    "read_journal",
    "read_records",
]

_log = get_logger(__name__)


class Journal:
    """An open journal file. Appends are single ``write`` calls to an ``O_APPEND`` descriptor.

    ``on_append`` (the recorder's running totals) is told of every record appended and
    its size in bytes.
    """

    __slots__ = ("_fd", "fsync", "on_append", "path")

    def __init__(
        self,
        path: Path,
        *,
        fsync: FsyncPolicy = "turn",
        on_append: Callable[[Record, int], None] | None = None,
    ) -> None:
        self.path = path
        self.fsync: FsyncPolicy = fsync
        self.on_append = on_append
        path.parent.mkdir(parents=True, exist_ok=True)
        self._fd: int | None = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)

    def append(self, record: Record) -> int:
        """Write ``record``; returns where it ends in the file (its position: a byte offset,
        the same for as long as the journal exists, so it names the record)."""
        fd = self._fd
        if fd is None:
            raise NotOpenError(f"journal {self.path}")
        data = encode_record(record) + b"\n"
        size = len(data)
        start = os.lseek(fd, 0, os.SEEK_END)
        try:
            written = os.write(fd, data)  # one call writes it all but on a full disk
            if written < size:
                rest = memoryview(data)[written:]
                while rest:
                    rest = rest[os.write(fd, rest) :]
        except OSError:
            # Cut a half-written record back off (a full disk): the journal stays a
            # clean prefix of what was said, readable and appendable once space is freed.
            with contextlib.suppress(OSError):
                os.ftruncate(fd, start)
            with space_checked(self.path):  # (raised as DiskFullError when it is that)
                raise
        if self.on_append is not None:
            self.on_append(record, size)
        return start + size

    async def commit(self, record: Record) -> int:
        """Append, then sync if the policy syncs every record; returns its position."""
        position = self.append(record)
        if self.fsync == "commit":
            await self.sync()
        return position

    async def sync(self, then: Callable[[], object] | None = None) -> None:
        """fsync (unless the policy is ``off``), then call ``then`` in the same worker
        thread. Shielded: a cancel waits for the disk (a bounded wait) rather than leave a
        written record unsynced while the caller believes it failed."""
        if self._fd is not None and self.fsync != "off":
            fd = self._fd

            def work() -> None:
                with space_checked(self.path):
                    os.fsync(fd)
                if then is not None:
                    then()

            with anyio.CancelScope(shield=True):
                await anyio.to_thread.run_sync(work)
        elif then is not None:
            then()

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


class TurnView(msgspec.Struct, kw_only=True):
    """One turn as its journal recorded it, compacted or not."""

    turn: int
    input: UserMessage | None = None
    """The input the turn began with (``None``: a continued turn)."""
    messages: list[Message] = msgspec.field(default_factory=list)
    """What the turn produced, in the order it was recorded (assistant rounds, tool results,
    synthetic results a reopen gave calls a crash left unanswered)."""
    outcomes: list[TurnOutcome] = msgspec.field(default_factory=list)
    """Every end recorded under this number, in order: usually one; a crash repair's
    ``interrupted`` and an input the turn budget refused add theirs."""

    @property
    def outcome(self) -> TurnOutcome | None:
        """How the turn ended (the last end recorded); ``None``: it never ended."""
        return self.outcomes[-1] if self.outcomes else None

    @property
    def status(self) -> TurnStatus | None:
        """The last end's status (``None``: the turn never ended: the process died in it)."""
        return self.outcomes[-1].status if self.outcomes else None


class JournalView(msgspec.Struct, kw_only=True):
    """A Session journal, read: the one read model of it outside ``xai.session``.

    ``read`` (or ``aread``) replays a journal; ``salvage`` reads what it can of a damaged
    one; ``read_totals`` gives what a Session spent without reading its journal again.
    """

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
    """Ids of the candidates the owner acknowledged."""
    mood: list[MoodDelta] = msgspec.field(default_factory=list)
    """Every mood delta the Session's turns recorded, in order."""
    mood_turns: set[int] = msgspec.field(default_factory=set)
    """The turns whose mood was recorded (a ``mood`` record, deltas or none)."""
    closing: CloseReason | None = None
    """Closed with candidates the owner had not acknowledged (``closing`` record, no
    ``closed`` after it): the owner must ``close(closing)`` the reopened Session."""
    closed: CloseReason | None = None
    episodes: list[Episode] = msgspec.field(default_factory=list)
    """Everything said, compacted turns included (see ``Transcript``)."""
    turn_log: list[TurnView] = msgspec.field(default_factory=list)
    """Every turn, by number, with everything it recorded (compacted turns included)."""
    record: list[Message] = msgspec.field(default_factory=list)
    """Every message recorded (inputs included), in order: the complete conversation."""
    totals: JournalTotals | None = None
    """What the journal adds up to (``read_totals`` gives these without a replay)."""
    approvals: list[PendingApproval] = msgspec.field(default_factory=list)
    """Calls held for a person and still without a result in the history (decided or not)."""
    decisions: dict[str, ApprovalDecision] = msgspec.field(default_factory=dict)
    """Every decision recorded, by call id (the first one of each): a repeat of one is
    answered with it, even once its call has its result."""
    tools_started: set[str] = msgspec.field(default_factory=set)
    """Approved calls recorded as started (``tool_start``)."""

    @property
    def session_id(self) -> str:
        return self.header.session_id

    @property
    def parent_id(self) -> str | None:
        return self.header.parent_id

    @property
    def created_at(self) -> float:
        return self.header.created_at

    @property
    def depth(self) -> int:
        return self.header.depth

    @property
    def system(self) -> SystemPrompt:
        return self.header.system

    @property
    def unacknowledged(self) -> list[MemoryCandidate]:
        """Candidates the owner has not acknowledged."""
        return [c for c in self.candidates if c.id not in self.reported]

    @property
    def inputs(self) -> list[UserMessage]:
        """The inputs turns began with, in order."""
        return [t.input for t in self.turn_log if t.input is not None]

    @classmethod
    def read(cls, path: Path, *, repair: bool = True) -> JournalView:
        """Replay the journal at ``path``. Blocking (see ``aread``). A torn last line (a kill
        mid-write) is skipped with a warning and, with ``repair``, cut off the file so later
        appends start on a clean line; a bad line anywhere else raises ``JournalError``
        naming the file and line."""
        records = read_jsonl(path, decode_record, repair=repair, what="journal")
        if not records or not isinstance(records[0], HeaderRecord):
            raise JournalError("the journal does not start with a header", path=str(path), line=1)
        return _replay(records, path, size=_size(path))

    @classmethod
    async def aread(cls, path: Path, *, repair: bool = True) -> JournalView:
        """``read`` in a worker thread: reading a journal is blocking file I/O."""
        return await anyio.to_thread.run_sync(functools.partial(cls.read, path, repair=repair))

    @classmethod
    def salvage(cls, path: Path) -> JournalView:
        """Every line of a damaged journal that still decodes, the others skipped (no header:
        the directory's name is the Session's id). Never raises for the content. Blocking."""
        try:
            raw = path.read_bytes()
        except OSError:
            raw = b""
        records: list[Record] = []
        for line in raw.split(b"\n"):
            if line.strip():
                try:
                    records.append(decode_record(line))
                except (msgspec.DecodeError, msgspec.ValidationError):
                    continue
        headers = [r for r in records if isinstance(r, HeaderRecord)]
        header = headers[-1] if headers else None
        if header is None:
            header = HeaderRecord(
                session_id=path.parent.name, created_at=0.0, system=SystemPrompt()
            )
        rest = [r for r in records if not isinstance(r, HeaderRecord)]
        return _replay([header, *rest], path, size=len(raw))

    @staticmethod
    def read_totals(directory: Path) -> JournalTotals | None:
        """What the Session in ``directory`` spent, by day, and how it stands (turns, closed),
        from the totals its writer keeps beside the journal; only what the journal gained
        since is read. ``None``: no journal there, or an unreadable one. Blocking."""
        return read_totals(directory)


JournalState = JournalView
"""The former name of ``JournalView`` (a Session rebuilt from its journal)."""


def read_journal(path: Path, *, repair: bool = True) -> JournalView:
    """``JournalView.read``."""
    return JournalView.read(path, repair=repair)


async def aread_journal(path: Path, *, repair: bool = True) -> JournalView:
    """``JournalView.aread``."""
    return await JournalView.aread(path, repair=repair)


def read_records(path: Path) -> list[Record]:
    """Every whole record of a journal, in order (a torn last line is left out). Private
    to ``xai.session`` (outside it, ``JournalView.read(path).record`` is the same story)."""
    return read_jsonl(path, decode_record, repair=False, what="journal")


def append_records(path: Path, *records: Record) -> None:
    """Append to the journal of a Session that is no longer running (one ``O_APPEND``
    write per record, no sync)."""
    journal = Journal(path, fsync="off")
    try:
        for record in records:
            journal.append(record)
    finally:
        journal.close()


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def _replay(records: list[Record], path: Path, *, size: int) -> JournalView:
    header = records[0]
    assert isinstance(header, HeaderRecord)
    state = JournalView(header=header, history=[])
    totals = JournalTotals.start(header, 0)
    transcript = Transcript(header.session_id, header.created_at)
    pending = state.pending
    turns: dict[int, TurnView] = {}

    def turn_of(number: int) -> TurnView:
        found = turns.get(number)
        if found is None:
            found = turns[number] = TurnView(turn=number)
        return found

    for number, record in enumerate(records[1:], start=2):
        totals.absorb(record, 0)
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
            state.record.append(record.message)
            turn_of(record.turn).input = record.message
            transcript.add(record.turn, record.message)
            state.open_turn = record.turn
            state.turns = max(state.turns, record.turn)
        elif isinstance(record, TurnStartRecord):
            turn_of(record.turn)
            state.open_turn = record.turn
            state.turns = max(state.turns, record.turn)
        elif isinstance(record, MessageRecord):
            if record.turn > state.turns:
                # A turn with no record of its start: a continued turn of a journal written
                # before ``turn_start`` existed. It is open until its end says otherwise.
                state.open_turn = state.turns = record.turn
            state.record.append(record.message)
            turn_of(record.turn).messages.append(record.message)
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
            turn_of(outcome.turn).outcomes.append(outcome)
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
        elif isinstance(record, MoodRecord):
            state.mood.extend(record.deltas)
            state.mood_turns.add(record.turn)
        elif isinstance(record, ReportedRecord):
            state.reported.update(record.candidate_ids)
        elif isinstance(record, UsageRecord):
            state.usage = state.usage + record.usage
        elif isinstance(record, ApprovalAskedRecord):
            state.approvals.append(record.pending)
        elif isinstance(record, ApprovalDecidedRecord):
            state.decisions.setdefault(record.decision.call_id, record.decision)
        elif isinstance(record, ToolStartRecord):
            state.tools_started.add(record.call_id)
        elif isinstance(record, ClosingRecord):
            state.closing = record.reason
        elif isinstance(record, ClosedRecord):
            state.closed = record.reason
            state.closing = None
        else:
            assert_never(record)
    if state.approvals:  # only those whose call is still unanswered wait
        waiting = {call.id for call in unanswered_calls(state.history)}
        state.approvals = [a for a in state.approvals if a.call.id in waiting]
        state.tools_started &= {a.call.id for a in state.approvals}
    else:
        state.tools_started.clear()
    state.episodes = transcript.episodes
    state.turn_log = [turns[n] for n in sorted(turns)]
    totals.journal_bytes = size
    state.totals = totals
    return state


def _unqueue(pending: list[UserMessage], ids: tuple[str, ...]) -> None:
    if pending:
        gone = set(ids)
        pending[:] = [m for m in pending if m.id not in gone]


def now() -> float:
    return time.time()
