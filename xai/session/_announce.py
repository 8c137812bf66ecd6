"""One commit point: a journal record, then the event that announces it, made from it.

A journal-backed event (a turn's start and end, each committed message, a compaction,
memory candidates, the close) is announced by its record: ``SessionHub.announce``
publishes ``record.announce()`` with the record's position in the journal (where it
ends, a byte offset) on the envelope (``SessionEvent.journal``). ``journal_events``
reads the same events back from the journal, with the same positions, for the records
between two positions: what a stream missed when a kill fell between a record and its
event. So the live event and the one read back are the same event, with the same
identity, and a stream that knows the last position it announced knows exactly what it
still owes its readers.

A record type joins by having an ``announce()`` method (``Announcing``) and being
announced with ``SessionHub.announce`` after it is written.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple, Protocol

import msgspec

from xai.events import SessionEvent, SessionEventBody
from xai.logs import get_logger
from xai.session._observers import Hub
from xai.session._records import decode_record

__all__ = ["Announcing", "JournalEvent", "SessionHub", "journal_events"]

_log = get_logger(__name__)


class Announcing(Protocol):
    """A journal record a Session announces: the event that says it was written."""

    def announce(self) -> SessionEventBody | None: ...


class SessionHub(Hub[SessionEvent]):
    """A Session's event hub. ``announced``: the position of the last record it announced
    (a reopened Session starts at its journal's end then: the records before are its
    last life's, it announces none of them again)."""

    __slots__ = ("announced", "session_id")

    def __init__(self, session_id: str, announced: int = 0) -> None:
        super().__init__(self._envelope)
        self.session_id = session_id
        self.announced = announced

    def _envelope(self, seq: int, body: SessionEventBody) -> SessionEvent:
        return SessionEvent(self.session_id, seq, body)

    def announce(self, record: Announcing, position: int | None) -> None:
        """Publish the event of ``record``, written at ``position`` (``None``: a Session
        without a journal)."""
        if position is not None:
            self.announced = max(self.announced, position)
        body = record.announce()
        if body is None:
            return
        self.seq += 1
        if self._has_audience():
            self.deliver(SessionEvent(self.session_id, self.seq, body, position))


class JournalEvent(NamedTuple):
    position: int
    """Where its record ends in the journal (``SessionEvent.journal``)."""
    event: SessionEventBody


def journal_events(path: Path, after: int, upto: int) -> list[JournalEvent]:
    """The events announcing the records of the journal at ``path`` that end past
    ``after`` and at ``upto`` or before, in journal order. ``after`` must be a record's
    position (or 0); ``[]`` when it is not one of this journal's (a journal that lost
    its tail, or another journal), or the file cannot be read. Blocking: it reads only
    that part of the file."""
    if upto <= after:
        return []
    try:
        with open(path, "rb") as f:
            if after > 0:
                f.seek(after - 1)
                data = f.read(upto - after + 1)
                if data[:1] != b"\n":
                    raise ValueError(f"{after} is not where a record ends")
                data = data[1:]
            else:
                data = f.read(upto)
    except (OSError, ValueError) as exc:
        _log.warning("journal.events_unreadable", path=str(path), after=after, error=str(exc))
        return []
    out: list[JournalEvent] = []
    position = after
    for line in data.split(b"\n")[:-1]:  # (past ``upto``, or torn: not a record yet)
        position += len(line) + 1
        try:
            record = decode_record(line)
        except (msgspec.DecodeError, msgspec.ValidationError) as exc:
            _log.warning("journal.events_unreadable", path=str(path), at=position, error=str(exc))
            break
        announce: Callable[[], SessionEventBody | None] | None = getattr(record, "announce", None)
        body = announce() if announce is not None else None
        if body is not None:
            out.append(JournalEvent(position, body))
    return out
