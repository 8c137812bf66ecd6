"""Events a Query emits, as one tagged union (``QueryEvent``) keyed by ``type``.

No event refers to a Session or an Agent: they carry the Query's id, the round
(1-based model request number) and plain values, so they can be journaled,
sent over a wire or fanned out to any number of observers.

Order within one Query: for each round, ``TextDelta`` / ``ThinkingDelta`` as
they stream, then ``MessageCommitted`` for the round's assistant message, then
per tool call ``ToolCallStarted`` … ``ToolCallFinished`` + ``MessageCommitted``
(tool calls overlap, so their events interleave), and finally one
``QueryDone`` — always, even when the Query is cancelled or fails.
"""

from __future__ import annotations

from typing import Literal, TypeAlias

import msgspec

from xai.messages import (
    ApprovalDecision,
    CloseReason,
    DecisionKind,
    ErrorInfo,
    MemoryCandidate,
    Message,
    Origin,
    PendingApproval,
    QueryResult,
    ToolCall,
    ToolResult,
    TurnOutcome,
    UserMessage,
)
from xai.mood import Mood, MoodDelta

__all__ = [
    "AgentEvent",
    "AgentEventBody",
    "ApprovalDecided",
    "ApprovalRequested",
    "CandidatesProposed",
    "Compacted",
    "CompactionMethod",
    "CompactionReason",
    "DecisionKind",
    "EventsDropped",
    "JournalQuarantined",
    "MemoryDecided",
    "MessageCommitted",
    "MoodChanged",
    "QueryDone",
    "QueryEvent",
    "SessionClosed",
    "SessionEnded",
    "SessionEvent",
    "SessionEventBody",
    "SessionFailed",
    "SessionFinalizing",
    "SessionOpened",
    "TextDelta",
    "ThinkingDelta",
    "ToolCallFinished",
    "ToolCallStarted",
    "TurnDone",
    "TurnStarted",
    "WakeupFired",
    "WakeupSkipped",
    "decode_query_event",
    "decode_session_event",
]


class _QueryEvent(msgspec.Struct, frozen=True, kw_only=True, tag_field="type"):
    query_id: str
    round: int


class TextDelta(_QueryEvent, frozen=True, tag="text_delta"):
    text: str


class ThinkingDelta(_QueryEvent, frozen=True, tag="thinking_delta"):
    text: str


class ToolCallStarted(_QueryEvent, frozen=True, tag="tool_call_started"):
    call: ToolCall


class ToolCallFinished(_QueryEvent, frozen=True, tag="tool_call_finished"):
    result: ToolResult


class MessageCommitted(_QueryEvent, frozen=True, tag="message_committed"):
    """A message is final. A Session journals it before it shows the event to anyone.

    When a cancel interrupts its delivery to a channel (an ``EventSink`` that
    waits), the Query sends it again before ``QueryDone``, so a channel never
    misses one; a channel that may have taken the interrupted send (an anyio
    memory stream can) sees it twice and keeps the first (``message.id``).
    Observers (synchronous callables) get it exactly once.
    """

    message: Message


class QueryDone(_QueryEvent, frozen=True, tag="query_done"):
    result: QueryResult


QueryEvent: TypeAlias = (
    TextDelta | ThinkingDelta | ToolCallStarted | ToolCallFinished | MessageCommitted | QueryDone
)


# -- Session events -----------------------------------------------------------------


class _SessionEventBody(msgspec.Struct, frozen=True, kw_only=True, tag_field="type"):
    pass


class TurnStarted(_SessionEventBody, frozen=True, tag="turn_started"):
    """An input was accepted (and journaled) and a turn begins (``input`` is ``None`` when
    the Session continues an interrupted turn)."""

    turn: int
    input: UserMessage | None


class TurnDone(_SessionEventBody, frozen=True, tag="turn_done"):
    outcome: TurnOutcome


CompactionMethod: TypeAlias = Literal["summary", "digest"]
"""``summary``: the model summarised; ``digest``: it failed, a plain digest took its place."""
CompactionReason: TypeAlias = Literal["proactive", "context_too_long"]
"""``proactive``: the next request would not fit; ``context_too_long``: the provider said so."""


class Compacted(_SessionEventBody, frozen=True, tag="compacted"):
    """Older history was replaced by a summary."""

    before_tokens: int
    after_tokens: int
    removed_messages: int
    method: CompactionMethod
    reason: CompactionReason


class CandidatesProposed(_SessionEventBody, frozen=True, tag="candidates_proposed"):
    """L1 memory candidates extracted after a turn."""

    candidates: tuple[MemoryCandidate, ...]


class SessionFinalizing(_SessionEventBody, frozen=True, tag="session_finalizing"):
    reason: CloseReason


class SessionClosed(_SessionEventBody, frozen=True, tag="session_closed"):
    reason: CloseReason


class SessionFailed(_SessionEventBody, frozen=True, tag="session_failed"):
    """Something outside a turn failed (extraction, a hook, the journal); the Session goes on
    unless ``fatal``."""

    error: ErrorInfo
    stage: str
    fatal: bool = False


class ApprovalRequested(_SessionEventBody, frozen=True, tag="approval_requested"):
    """A tool call waits for a person (journaled first): ``approve`` / ``deny`` it through
    the Session's ``approvals`` (or the host's ``DecideApproval``). ``reminder`` counts how
    often it was announced again (a reopen, the ``approval_timeout`` reminding)."""

    pending: PendingApproval
    reminder: int = 0


class ApprovalDecided(_SessionEventBody, frozen=True, tag="approval_decided"):
    """A person (or the timeout) decided a held call; the decision is journaled already."""

    session_id: str
    """The Session whose call it was (a helper's, for a delegated task)."""
    decision: ApprovalDecision


class EventsDropped(_SessionEventBody, frozen=True, tag="events_dropped"):
    """Sent to one subscriber that fell behind: events ``first_seq``..``last_seq`` are gone,
    every one of them (the subscriber receives none of that range).

    It is not a published event but a note to one subscriber, so its envelope carries
    ``seq=0``, which no published event has (they count from 1).
    """

    count: int
    first_seq: int
    last_seq: int


class MoodChanged(_SessionEventBody, frozen=True, kw_only=True, tag="mood_changed"):
    """A mood moved: a Session's copy after a turn (``scope="session"``, ``turn`` set), or
    the Agent's own when it digested a finished Session (``scope="agent"``). ``user`` and
    ``agent`` are the moods after ``deltas``; ``style`` is the new style line when it
    changed (``None``: unchanged)."""

    scope: Literal["session", "agent"] = "session"
    user: Mood
    agent: Mood
    deltas: tuple[MoodDelta, ...] = ()
    turn: int | None = None
    style: str | None = None


SessionEventBody: TypeAlias = (
    QueryEvent
    | TurnStarted
    | TurnDone
    | Compacted
    | CandidatesProposed
    | MoodChanged
    | SessionFinalizing
    | SessionClosed
    | SessionFailed
    | ApprovalRequested
    | ApprovalDecided
    | EventsDropped
)


class SessionEvent(msgspec.Struct, frozen=True, omit_defaults=True):
    """Every event a Session fans out: its id, a per-Session sequence number, the event.

    ``journal``: for an event that announces a record of the Session's journal (a turn's
    start or end, a committed message, a compaction, memory candidates, the close),
    where that record ends in the journal (a byte offset). It is the event's identity:
    the same whether the Session published it or a host's stream read it back from the
    journal after a kill (see docs/crash-safety.md); ``None`` for every other event."""

    session_id: str
    seq: int
    event: SessionEventBody
    journal: int | None = None


# -- Agent events ---------------------------------------------------------------------


class _AgentEventBody(msgspec.Struct, frozen=True, kw_only=True, tag_field="type"):
    pass


class SessionOpened(_AgentEventBody, frozen=True, tag="session_opened"):
    purpose: str | None = None
    origin: Origin = "user"
    parent_id: str | None = None
    resumed: bool = False
    """True for a Session reopened from its journal when the Agent started."""


class SessionEnded(_AgentEventBody, frozen=True, tag="session_ended"):
    reason: CloseReason


class MemoryDecided(_AgentEventBody, frozen=True, tag="memory_decided"):
    """The Agent decided what a memory candidate (or a maintenance step) changes."""

    decision: DecisionKind
    reason: str
    fact_ids: tuple[str, ...] = ()
    candidate_id: str | None = None


class JournalQuarantined(_AgentEventBody, frozen=True, tag="journal_quarantined"):
    """A Session journal could not be read when the Agent started: it was renamed to
    ``moved_to`` (kept for inspection, never reopened) and the memory candidates of its
    readable lines (``recovered_candidates`` of them) were decided."""

    path: str
    moved_to: str
    error: str
    recovered_candidates: int = 0


class WakeupFired(_AgentEventBody, frozen=True, tag="wakeup_fired"):
    """A wake-up opened a Session (its ``session_id`` is on the envelope) with ``input``."""

    wakeup_id: str
    reason: str
    input: str


class WakeupSkipped(_AgentEventBody, frozen=True, tag="wakeup_skipped"):
    """A wake-up was due but did not run (quiet hours, overlap, paused, builder failed...)."""

    wakeup_id: str
    reason: str


AgentEventBody: TypeAlias = (
    SessionOpened
    | SessionEnded
    | MemoryDecided
    | JournalQuarantined
    | WakeupFired
    | WakeupSkipped
    | MoodChanged
)


class AgentEvent(msgspec.Struct, frozen=True):
    """Every event an Agent fans out: its own, and those of each of its Sessions.

    ``session_id`` says which Session an event concerns (``None`` for the Agent's own).
    """

    agent_id: str
    seq: int
    session_id: str | None
    event: SessionEventBody | AgentEventBody


_decoder = msgspec.json.Decoder(QueryEvent)
_session_decoder = msgspec.json.Decoder(SessionEvent)


def decode_query_event(data: bytes | str) -> QueryEvent:
    return _decoder.decode(data)


def decode_session_event(data: bytes | str) -> SessionEvent:
    return _session_decoder.decode(data)
