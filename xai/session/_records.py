"""The records of a Session journal: one msgspec JSON line each, tagged by ``kind``.

Private to ``xai.session``: code outside it reads a journal through ``JournalView``.
See ``_journal`` for the order a Session writes them in and what each means.

A record that a Session announces has an ``announce()`` method giving the event that
announces it (``Announcing``; ``None``: this one announces nothing): the Session publishes exactly that event once the
record is written (``SessionHub.announce``), and a stream that missed it (a kill
between the two) is given the same event read back from the journal
(``journal_events``). One function makes both, so what the journal says and what the
events say cannot differ. A new kind of journal-backed event is a record with an
``announce()`` method, announced through the same hub method; nothing else changes.
"""

from __future__ import annotations

from typing import Literal, TypeAlias

import msgspec

from xai.events import (
    ApprovalDecided,
    ApprovalRequested,
    CandidatesProposed,
    Compacted,
    CompactionMethod,
    CompactionReason,
    MessageCommitted,
    MoodChanged,
    SessionClosed,
    TurnDone,
    TurnStarted,
)
from xai.messages import (
    ApprovalDecision,
    CloseReason,
    MemoryCandidate,
    Message,
    PendingApproval,
    TurnOutcome,
    Usage,
    UserMessage,
)
from xai.mood import Mood, MoodDelta
from xai.session._prompt import SystemPrompt

__all__ = [
    "JOURNAL_FILE",
    "AcceptedRecord",
    "ApprovalAskedRecord",
    "ApprovalDecidedRecord",
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
    "ToolStartRecord",
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

    def announce(self) -> TurnStarted:
        return TurnStarted(turn=self.turn, input=self.message)


class TurnStartRecord(_Record, frozen=True, tag="turn_start"):
    """A turn begins without an input (``continue_turn``)."""

    turn: int

    def announce(self) -> TurnStarted:
        return TurnStarted(turn=self.turn, input=None)


class MessageRecord(_Record, frozen=True, tag="message"):
    turn: int
    message: Message
    query_id: str = ""
    """The Query that produced it (``""``: none did, a crash repair's answer to a call left
    unanswered; or a journal older than this field)."""
    round: int = 0
    """The Query's round (``0`` with ``query_id`` ``""``)."""

    def announce(self) -> MessageCommitted:
        return MessageCommitted(query_id=self.query_id, round=self.round, message=self.message)


class TurnEndRecord(_Record, frozen=True, tag="turn_end"):
    """A turn's outcome; also an input refused at once by the turn budget (its
    ``outcome.input_id`` names the accepted input it consumed)."""

    outcome: TurnOutcome

    def announce(self) -> TurnDone:
        return TurnDone(outcome=self.outcome)


class DroppedRecord(_Record, frozen=True, tag="dropped"):
    """Accepted inputs a close dropped before they started: a restart never runs them."""

    input_ids: tuple[str, ...]


class CompactedRecord(_Record, frozen=True, tag="compacted"):
    summary: str
    removed: int
    """How many messages were dropped from the front of the history."""
    method: CompactionMethod
    before_tokens: int = 0
    after_tokens: int = 0
    reason: CompactionReason = "proactive"

    def announce(self) -> Compacted:
        return Compacted(
            before_tokens=self.before_tokens,
            after_tokens=self.after_tokens,
            removed_messages=self.removed,
            method=self.method,
            reason=self.reason,
        )


class CandidatesRecord(_Record, frozen=True, tag="candidates"):
    candidates: tuple[MemoryCandidate, ...]

    def announce(self) -> CandidatesProposed:
        return CandidatesProposed(candidates=self.candidates)


class MoodRecord(_Record, frozen=True, tag="mood"):
    """What turn ``turn`` changed in the user's and the Agent's mood (no delta: it changed
    nothing). One per turn with mood on: a reopen estimates a turn that has none."""

    turn: int
    deltas: tuple[MoodDelta, ...] = ()
    user: Mood | None = None
    """The Session's copies after ``deltas`` (with deltas only): what ``MoodChanged`` says."""
    agent: Mood | None = None
    style: str | None = None
    """The new style line, when this turn changed it."""

    def announce(self) -> MoodChanged | None:
        if not self.deltas or self.user is None or self.agent is None:
            return None
        return MoodChanged(
            user=self.user, agent=self.agent, deltas=self.deltas, turn=self.turn, style=self.style
        )


class ReportedRecord(_Record, frozen=True, tag="reported"):
    candidate_ids: tuple[str, ...]


class UsageRecord(_Record, frozen=True, tag="usage"):
    """Usage outside a turn's Query: summaries and memory extraction."""

    usage: Usage
    purpose: str


class ApprovalAskedRecord(_Record, frozen=True, tag="approval_asked"):
    """A call of the open turn waits for a person (written before anyone is told)."""

    pending: PendingApproval

    def announce(self) -> ApprovalRequested:
        return ApprovalRequested(pending=self.pending)


class ApprovalDecidedRecord(_Record, frozen=True, tag="approval_decided"):
    """A person decided a held call (written before the decision is applied: a restart
    applies it, once)."""

    decision: ApprovalDecision
    session_id: str = ""
    """The Session whose journal this is (the event names it: a parent relays a helper's)."""

    def announce(self) -> ApprovalDecided:
        return ApprovalDecided(session_id=self.session_id, decision=self.decision)


class ToolStartRecord(_Record, frozen=True, tag="tool_start"):
    """An approved call is about to run (synced first): a restart that finds this and no
    result answers it ``interrupted`` rather than run it twice."""

    turn: int
    call_id: str


class ClosingRecord(_Record, frozen=True, tag="closing"):
    """The Session closed while the owner had not acknowledged all its candidates (a hook
    failed or timed out): it is closed only once they are (a later ``reported`` line
    then ends with ``closed``). A restart hands them to the owner again."""

    reason: CloseReason
    at: float

    def announce(self) -> SessionClosed:
        return SessionClosed(reason=self.reason)  # (the Session's task ended here)


class ClosedRecord(_Record, frozen=True, tag="closed"):
    reason: CloseReason
    at: float
    late: bool = False
    """Written by an acknowledgement that came after the close (which said ``closing``
    and was announced then): it completes the close and announces nothing."""

    def announce(self) -> SessionClosed | None:
        return None if self.late else SessionClosed(reason=self.reason)


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
    | ApprovalAskedRecord
    | ApprovalDecidedRecord
    | ToolStartRecord
    | ClosingRecord
    | ClosedRecord
)

encode_record = msgspec.json.Encoder().encode
decode_record = msgspec.json.Decoder(Record).decode
