"""What an Agent finds under ``sessions/`` when it starts: every journal read once, in one
worker thread, sorted into what the Agent must do with it.

- ``Reopen``: a journal that did not end with a close. A top-level Session is
  resumed as it was. A delegated child (``parent_id`` set) and a Session whose
  close had begun (``closing``) are reopened only to be closed at once, so that
  their finalising hooks hand their candidates to the Agent: the parent's
  ``delegate`` call was answered "interrupted" when the parent was repaired, so
  nothing would ever continue the child.
- ``LeftOver``: a closed journal that still holds candidates it never saw
  acknowledged (written before closes waited for acknowledgement): the Agent
  decides those the memory has not decided.
- ``Unrecorded``: a closed journal whose episodes the memory does not have (the
  Agent stopped before it recorded them, or the directory predates episodes):
  the Agent records them. Every journal is the truth of what was said in it.
- ``Damaged``: a journal that cannot be read. Its readable lines are salvaged
  (candidates, and the user inputs that ground them) and the file is set aside
  as ``journal.jsonl.quarantined`` once they are decided.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple, TypeAlias

import msgspec

from xai.exceptions import JournalError
from xai.messages import Episode, MemoryCandidate, Message, UserMessage
from xai.session import (
    JOURNAL_FILE,
    CandidatesRecord,
    HeaderRecord,
    InputRecord,
    JournalState,
    MessageRecord,
    Record,
    ReportedRecord,
    Transcript,
    read_journal,
)

__all__ = [
    "Damaged",
    "Found",
    "LeftOver",
    "Reopen",
    "Unrecorded",
    "scan_sessions",
    "set_aside",
]

QUARANTINE_SUFFIX = ".quarantined"


class Reopen(NamedTuple):
    directory: Path
    state: JournalState


class LeftOver(NamedTuple):
    session_id: str
    candidates: tuple[MemoryCandidate, ...]
    history: tuple[Message, ...]
    episodes: tuple[Episode, ...]


class Unrecorded(NamedTuple):
    session_id: str
    episodes: tuple[Episode, ...]


class Damaged(NamedTuple):
    journal: Path
    error: str
    session_id: str
    candidates: tuple[MemoryCandidate, ...]
    """The unacknowledged candidates of the lines that could be read."""
    history: tuple[Message, ...]
    """The user inputs that could be read (what candidates' evidence points to)."""
    episodes: tuple[Episode, ...]


Found: TypeAlias = Reopen | LeftOver | Unrecorded | Damaged


def scan_sessions(root: Path, known: Callable[[str], bool] = lambda _: False) -> list[Found]:
    """Every journal under ``root`` that needs the Agent's attention. Blocking.

    ``known`` says whether the memory has an episode (by id): a closed journal whose
    last episode it has needs nothing (a Session's episodes are recorded together)."""
    if not root.is_dir():
        return []
    found: list[Found] = []
    for directory in sorted(root.iterdir()):
        journal = directory / JOURNAL_FILE
        if not journal.is_file():
            continue
        try:
            state = read_journal(journal)
        except (JournalError, OSError) as exc:
            found.append(_salvage(journal, f"{type(exc).__name__}: {exc}"))
            continue
        if state.closed is None:
            found.append(Reopen(directory, state))
        elif pending := tuple(state.unacknowledged):
            found.append(
                LeftOver(
                    state.header.session_id, pending, tuple(state.history), tuple(state.episodes)
                )
            )
        elif state.episodes and not known(state.episodes[-1].id):
            found.append(Unrecorded(state.header.session_id, tuple(state.episodes)))
    return found


_decode = msgspec.json.Decoder(Record).decode


def _salvage(journal: Path, error: str) -> Damaged:
    """Every line of ``journal`` that still decodes, skipping those that do not."""
    session_id = journal.parent.name
    candidates: dict[str, MemoryCandidate] = {}
    reported: set[str] = set()
    history: list[Message] = []
    transcript = Transcript(session_id, 0.0)
    try:
        raw = journal.read_bytes()
    except OSError:
        raw = b""
    for line in raw.split(b"\n"):
        if not line.strip():
            continue
        try:
            record = _decode(line)
        except (msgspec.DecodeError, msgspec.ValidationError):
            continue
        if isinstance(record, HeaderRecord):
            session_id = record.session_id
            transcript = Transcript(session_id, record.created_at)
        elif isinstance(record, CandidatesRecord):
            candidates.update((c.id, c) for c in record.candidates)
        elif isinstance(record, ReportedRecord):
            reported.update(record.candidate_ids)
        elif isinstance(record, InputRecord) and isinstance(record.message, UserMessage):
            history.append(record.message)
            transcript.add(record.turn, record.message)
        elif isinstance(record, MessageRecord):
            transcript.add(record.turn, record.message)
    pending = tuple(c for i, c in candidates.items() if i not in reported)
    episodes = tuple(transcript.episodes)
    return Damaged(journal, error, session_id, pending, tuple(history), episodes)


def set_aside(journal: Path) -> Path:
    """Rename ``journal`` beside itself (``.quarantined``, numbered if taken). Blocking."""
    target = journal.with_name(journal.name + QUARANTINE_SUFFIX)
    number = 1
    while target.exists():
        number += 1
        target = journal.with_name(f"{journal.name}{QUARANTINE_SUFFIX}.{number}")
    os.rename(journal, target)
    return target
