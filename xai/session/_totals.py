"""A Session's running totals, kept as its journal is written: what it cost, by day.

Reading every journal to learn what each Session spent costs a full parse per
Session per request. Instead the journal's writer folds every record it
appends into ``JournalTotals`` and, at the end of each turn and at the close,
writes them beside the journal (``totals.json``) together with the journal's
length they account for. A reader (``read_totals``) takes them as they
are when the journal has that length, folds only the tail when the journal has
grown since (a record appended after the close, a kill before the next
checkpoint), and folds the whole journal when the file is missing or does not
match (or is torn: a kill in the middle of its write). So the sidecar is a cache
of the journal, never a second truth: it needs no fsync and no atomic rename of
its own, and nothing is lost when it is. It is rewritten in place, padded with
blanks to the length it had, because a rename costs more than the rest of a
turn's journaling: 0.66 ms of CPU per write+rename against 0.006 ms for
open/pwrite/close, measured on ext4 in this project's container.
"""

from __future__ import annotations

import contextlib
import os
import time
from pathlib import Path

import msgspec

from xai.messages import CloseReason, Origin, Usage
from xai.session._records import (
    JOURNAL_FILE,
    AcceptedRecord,
    ClosedRecord,
    HeaderRecord,
    InputRecord,
    MessageRecord,
    Record,
    TurnEndRecord,
    UsageRecord,
    decode_record,
)

__all__ = ["LABEL_CHARS", "TOTALS_FILE", "JournalTotals", "read_totals", "write_totals"]

TOTALS_FILE = "totals.json"
LABEL_CHARS = 200
"""How much of the Session's first input ``label`` keeps."""


class JournalTotals(msgspec.Struct, kw_only=True):
    """What one Session's journal adds up to, without its messages.

    Each usage (a turn's, or a request outside a turn) counts on the UTC day the
    last message before it was said (the Session's creation day when none is stamped).
    """

    session_id: str
    parent_id: str | None = None
    created_at: float
    origin: Origin | None = None
    """Who sent the first input (``None``: no input yet)."""
    label: str = ""
    """The first input's text, cut to ``LABEL_CHARS``."""
    turns: int = 0
    usage: Usage = Usage()
    days: dict[str, Usage] = msgspec.field(default_factory=dict)
    """UTC date (``YYYY-MM-DD``) → usage spent that day."""
    closed: CloseReason | None = None
    last_at: float = 0.0
    """When the last message recorded was said."""
    journal_bytes: int = 0
    """The length of the journal these totals account for."""

    @classmethod
    def start(cls, header: HeaderRecord, journal_bytes: int) -> JournalTotals:
        return cls(
            session_id=header.session_id,
            parent_id=header.parent_id,
            created_at=header.created_at,
            last_at=header.created_at,
            journal_bytes=journal_bytes,
        )

    def copy(self) -> JournalTotals:
        return msgspec.structs.replace(self, days=dict(self.days))

    def absorb(self, record: Record, size: int) -> None:
        """Fold in one record of ``size`` bytes (its newline included)."""
        self.journal_bytes += size
        if isinstance(record, AcceptedRecord | InputRecord) and self.origin is None:
            self.origin = record.message.origin
            self.label = record.message.content[:LABEL_CHARS]
        if isinstance(record, InputRecord | MessageRecord):
            if record.message.at is not None:
                self.last_at = record.message.at
        elif isinstance(record, TurnEndRecord):
            self.turns = max(self.turns, record.outcome.turn)
            self._spent(record.outcome.usage)
        elif isinstance(record, UsageRecord):
            self._spent(record.usage)
        elif isinstance(record, ClosedRecord):
            self.closed = record.reason

    def _spent(self, usage: Usage) -> None:
        self.usage = self.usage + usage
        day = time.strftime("%Y-%m-%d", time.gmtime(self.last_at))
        self.days[day] = self.days.get(day, Usage()) + usage


_encode = msgspec.json.Encoder().encode
_decode = msgspec.json.Decoder(JournalTotals).decode


def write_totals(directory: Path, totals: JournalTotals, *, pad_to: int | None = None) -> int:
    """Write ``totals.json`` in place (a cache, see the module) and return its length.
    ``pad_to``: the length the file has (blanks fill the rest); ``None`` truncates it first."""
    data = _encode(totals)
    flags = os.O_WRONLY | os.O_CREAT
    if pad_to is None:
        flags |= os.O_TRUNC
    elif len(data) < pad_to:
        data = data.ljust(pad_to)
    fd = os.open(directory / TOTALS_FILE, flags, 0o644)
    try:
        os.pwrite(fd, data, 0)
    finally:
        os.close(fd)
    return len(data)


def read_totals(directory: Path) -> JournalTotals | None:
    """The totals of the journal in ``directory``: the sidecar when it matches, its tail
    folded in when the journal grew since. ``None``: no journal, or one whose lines
    cannot be read (a torn last line is left out, as a reopen would). Blocking."""
    journal = directory / JOURNAL_FILE
    try:
        size = journal.stat().st_size
    except FileNotFoundError:
        return None
    totals: JournalTotals | None = None
    with contextlib.suppress(OSError, msgspec.DecodeError, msgspec.ValidationError):
        totals = _decode((directory / TOTALS_FILE).read_bytes())
    if totals is not None and totals.journal_bytes == size:
        return totals
    if totals is None or totals.journal_bytes > size:
        totals, start = None, 0  # missing, or not this journal's: fold all of it
    else:
        start = totals.journal_bytes
    try:
        with journal.open("rb") as f:
            f.seek(start)
            tail = f.read(size - start)
    except OSError:
        return None
    lines = tail.split(b"\n")
    for number, line in enumerate(lines):
        if not line.strip():
            continue
        try:
            record = decode_record(line)
        except (msgspec.DecodeError, msgspec.ValidationError):
            last = number == len(lines) - 1 or (number == len(lines) - 2 and not lines[-1])
            if last:  # a torn last line (being written, or killed mid-write)
                break
            return None
        if totals is None:
            if not isinstance(record, HeaderRecord):
                return None
            totals = JournalTotals.start(record, 0)
        totals.absorb(record, len(line) + 1)
    return totals
