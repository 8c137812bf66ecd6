"""A Session's side of its journal: what it writes when, and what it says last.

The journal is opened on first use (a new Session writes its header then; an
input sent before the Session runs opens it early). Records are written as the
fsync policy says. At the close it writes its last word: ``closed``, or
``closing`` while memory candidates the owner has not acknowledged remain; an
acknowledgement that comes after the close is appended to the file, and the
last one completes the close.

It keeps the journal's running totals (``JournalTotals``: usage by day, turns,
the close) as it writes, and saves them beside the journal at the close and at
the end of a turn once the journal has grown by ``SAVE_EVERY`` bytes since the
last save (in the worker thread of the journal's sync when there is one): readers
get a Session's usage by reading the totals and at most that much of the journal
(``JournalView.read_totals``). Saving at every turn's end would cost a file open
per turn, 0.2-0.3 ms of CPU on this project's container, more than the rest of
the turn's journaling.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from pathlib import Path

from xai.logs import get_logger
from xai.messages import CloseReason
from xai.session._journal import Journal, append_records, now
from xai.session._records import (
    JOURNAL_FILE,
    ClosedRecord,
    ClosingRecord,
    FsyncPolicy,
    HeaderRecord,
    Record,
    ReportedRecord,
)
from xai.session._totals import JournalTotals, read_totals, write_totals

__all__ = ["Recorder"]

_log = get_logger(__name__)

SAVE_EVERY = 16 * 1024
"""Journal bytes after which a turn's end saves the totals (the close always does)."""


class Recorder:
    """Writes one Session's journal (nothing at all without a directory).

    ``unclosed`` is the reason of a close the journal records as ``closing``
    (also when reopened from such a journal).
    """

    __slots__ = (
        "_exists",
        "_header",
        "_saved_at",
        "_saved_length",
        "fsync",
        "journal",
        "path",
        "totals",
        "unclosed",
    )

    def __init__(
        self,
        directory: Path | None,
        fsync: FsyncPolicy,
        header: Callable[[], HeaderRecord],
        *,
        exists: bool,
        unclosed: CloseReason | None,
        totals: JournalTotals | None = None,
    ) -> None:
        self.path = directory / JOURNAL_FILE if directory is not None else None
        self.fsync: FsyncPolicy = fsync
        self.journal: Journal | None = None
        self.unclosed = unclosed
        self._header = header
        self._exists = exists  # the file has its header
        self.totals = totals
        """The journal's running totals (``None`` until it is opened, or without one)."""
        self._saved_length: int | None = None  # of totals.json, once written by this object
        self._saved_at = 0  # the journal's length at the last save (by this object)

    def open(self) -> Journal | None:
        """The open journal, opened now if need be (``None`` without a directory)."""
        if self.journal is None and self.path is not None:
            if not self._exists:
                header = self._header()
                self.totals = JournalTotals.start(header, 0)
                self.journal = self._open(self.totals)
                try:
                    self.journal.append(header)
                except OSError:  # (a full disk) no empty journal left to look damaged later
                    self.close()
                    self.path.unlink(missing_ok=True)
                    with contextlib.suppress(OSError):
                        self.path.parent.rmdir()
                    raise
                self._exists = True
            else:
                if self.totals is None:  # reopened without the journal's totals: read them
                    self.totals = read_totals(self.path.parent)
                self.journal = self._open(self.totals)
        return self.journal

    def _open(self, totals: JournalTotals | None) -> Journal:
        assert self.path is not None
        tally = totals.absorb if totals is not None else None
        return Journal(self.path, fsync=self.fsync, on_append=tally)

    def save_totals(self) -> None:
        """Write the running totals beside the journal (a cache of it: a failure is only
        logged, readers then read the journal's tail)."""
        totals, path = self.totals, self.path
        if totals is None or path is None:
            return
        try:
            self._saved_length = write_totals(path.parent, totals, pad_to=self._saved_length)
            self._saved_at = totals.journal_bytes
        except OSError as exc:
            _log.warning("session.totals_not_saved", error=str(exc))

    @property
    def exists(self) -> bool:
        return self._exists

    def write(self, record: Record) -> int | None:
        """Append to the open journal; its position there (``None``: no journal open)."""
        if self.journal is not None:
            return self.journal.append(record)
        return None

    async def commit(self, record: Record) -> int | None:
        """Append, and sync if the policy syncs every record; its position, as ``write``."""
        position = self.write(record)
        await self.sync_commit()
        return position

    async def sync_commit(self) -> None:
        if self.journal is not None and self.fsync == "commit":
            await self.journal.sync()

    async def sync_turn(self) -> None:
        """The end of a turn: sync if the policy syncs turns, and save the totals if due."""
        journal, totals = self.journal, self.totals
        if journal is None:
            return
        due = totals is not None and totals.journal_bytes - self._saved_at >= SAVE_EVERY
        if self.fsync == "turn":
            await journal.sync(then=self.save_totals if due else None)
        elif due:
            self.save_totals()

    async def sync(self) -> None:
        """Sync now (unless the policy is ``off``), and save the totals."""
        if self.journal is not None:
            await self.journal.sync(then=self.save_totals)

    def last_word(
        self, reason: CloseReason, *, waiting: int, hooks_took_all: bool
    ) -> tuple[ClosedRecord | ClosingRecord, int | None]:
        """``closed``, or ``closing`` while ``waiting`` candidates wait for an acknowledgement
        the hooks did not give: the record written and its position (it is announced)."""
        record: ClosedRecord | ClosingRecord
        if hooks_took_all or not waiting:
            record = ClosedRecord(reason=reason, at=now())
            self.unclosed = None
        else:
            record = ClosingRecord(reason=reason, at=now())
            self.unclosed = reason
            _log.warning("session.closing_pending", unacknowledged=waiting)
        return record, self.write(record)

    def close(self) -> None:
        if self.journal is not None:
            self.journal.close()
            self.journal = None

    def acknowledged(self, ids: tuple[str, ...], *, waiting: int, closed: bool) -> None:
        """The owner took candidates ``ids`` (``waiting`` still wait). While the journal is
        not open (before the Session runs, after it closed) the record is appended to the
        file; after a close that said ``closing``, with ``closed`` if nothing waits now."""
        record = ReportedRecord(candidate_ids=ids)
        if self.journal is not None:
            self.journal.append(record)
        elif self._exists and self.path is not None:
            records: list[Record] = [record]
            if closed and self.unclosed is not None and not waiting:
                records.append(ClosedRecord(reason=self.unclosed, at=now(), late=True))
                self.unclosed = None
            append_records(self.path, *records)
