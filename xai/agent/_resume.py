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
- ``Done``: a closed journal that needs nothing (its candidates acknowledged, its
  episodes recorded): the Agent lists it in ``closed.list``.
- ``Damaged``: a journal that cannot be read. Its readable lines are salvaged
  (candidates, and the user inputs that ground them) and the file is set aside
  as ``journal.jsonl.quarantined`` once they are decided.

``closed.list`` (under ``sessions/``, one id a line, append-only) names the Sessions that are
completely done: closed record written, every candidate acknowledged, episodes recorded.
Their journals are not read again, so a start costs what the open Sessions cost, not the
whole history. A line is appended only after all of that is on disk; a line lost (a kill
right after the close) only means that journal is read, found done and listed again.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import NamedTuple, TypeAlias

from xai.exceptions import JournalError
from xai.messages import Episode, MemoryCandidate, Message
from xai.session import JOURNAL_FILE, JournalView, read_journal

__all__ = [
    "CLOSED_LIST",
    "Damaged",
    "Done",
    "Found",
    "LeftOver",
    "Reopen",
    "Unrecorded",
    "list_done",
    "scan_sessions",
    "set_aside",
]

QUARANTINE_SUFFIX = ".quarantined"
CLOSED_LIST = "closed.list"


class Reopen(NamedTuple):
    directory: Path
    state: JournalView


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


class Done(NamedTuple):
    session_id: str


Found: TypeAlias = Reopen | LeftOver | Unrecorded | Damaged | Done


def scan_sessions(root: Path, known: Callable[[str], bool] = lambda _: False) -> list[Found]:
    """Every journal under ``root`` not listed in ``closed.list``, sorted by what the Agent
    must do with it. Blocking.

    ``known`` says whether the memory has an episode (by id): a closed journal whose
    last episode it has needs nothing (a Session's episodes are recorded together)."""
    if not root.is_dir():
        return []
    done = read_done(root)
    found: list[Found] = []
    for directory in sorted(root.iterdir()):
        if directory.name in done:
            continue
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
                LeftOver(state.session_id, pending, tuple(state.history), tuple(state.episodes))
            )
        elif state.episodes and not known(state.episodes[-1].id):
            found.append(Unrecorded(state.session_id, tuple(state.episodes)))
        else:
            found.append(Done(directory.name))
    return found


def read_done(root: Path) -> set[str]:
    """The ids ``closed.list`` names (a torn last line names nothing). Blocking."""
    try:
        text = (root / CLOSED_LIST).read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        return set()
    return {line for line in text.split("\n") if line}


def list_done(root: Path, session_ids: Sequence[str]) -> None:
    """Append ``session_ids`` to ``closed.list``: one ``O_APPEND`` write, no fsync (a line
    lost only costs a read of that journal next start). Blocking, but one small write."""
    if not session_ids:
        return
    # A line torn by a crash is ended by the newline written first.
    data = ("\n" + "\n".join(session_ids) + "\n").encode()
    fd = os.open(root / CLOSED_LIST, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, data)
    finally:
        os.close(fd)


def _salvage(journal: Path, error: str) -> Damaged:
    """Every line of ``journal`` that still decodes, skipping those that do not."""
    view = JournalView.salvage(journal)
    return Damaged(
        journal,
        error,
        view.session_id,
        tuple(view.unacknowledged),
        tuple(view.inputs),
        tuple(view.episodes),
    )


def set_aside(journal: Path) -> Path:
    """Rename ``journal`` beside itself (``.quarantined``, numbered if taken). Blocking."""
    target = journal.with_name(journal.name + QUARANTINE_SUFFIX)
    number = 1
    while target.exists():
        number += 1
        target = journal.with_name(f"{journal.name}{QUARANTINE_SUFFIX}.{number}")
    os.rename(journal, target)
    return target
