"""The records of a Session journal: one msgspec JSON line each, tagged by ``kind``.

Private to ``xai.session``: code outside it reads a journal through ``JournalView``.
See ``_journal`` for the order a Session writes them in and what each means.
"""

from __future__ import annotations

from typing import Literal, TypeAlias

import msgspec

from xai.events import CompactionMethod
from xai.messages import CloseReason, MemoryCandidate, Message, TurnOutcome, Usage, UserMessage
from xai.mood import MoodDelta
from xai.session._prompt import SystemPrompt

__all__ = [
    "JOURNAL_FILE",
    "AcceptedRecord",
    "CandidatesRecord",
    "ClosedRecord",
    "ClosingRecord",
    "CompactedRecord",
    "DroppedRecord",
    "FsyncPolicy",
    "HeaderRecord",
    "InputRecord",
    "MessageRecord",
    "MoodRecord",
    "Record",
    "ReportedRecord",
    "TurnEndRecord",
    "TurnStartRecord",
    "UsageRecord",
    "decode_record",
    "encode_record",
]

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


class MoodRecord(_Record, frozen=True, tag="mood"):
    """What turn ``turn`` changed in the user's and the Agent's mood (no delta: it changed
    nothing). One per turn with mood on: a reopen estimates a turn that has none."""

    turn: int
    deltas: tuple[MoodDelta, ...] = ()


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
    | MoodRecord
    | ReportedRecord
    | UsageRecord
    | ClosingRecord
    | ClosedRecord
)

encode_record = msgspec.json.Encoder().encode
decode_record = msgspec.json.Decoder(Record).decode
