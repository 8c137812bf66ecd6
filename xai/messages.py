"""Messages, tool calls, usage and results: the values every layer passes around.

All are frozen msgspec Structs, so they are immutable, cheap to build and
round-trip through JSON (``encode`` / ``decode_message``). Messages form one
tagged union keyed by ``role``, shaped close to the OpenAI wire format.
"""

from __future__ import annotations

import enum
import os
from typing import Any, Literal, TypeAlias

import msgspec

__all__ = [
    "ApprovalDecision",
    "AssistantMessage",
    "CandidateKind",
    "CloseReason",
    "DecisionKind",
    "Episode",
    "EpisodeOrigin",
    "ErrorInfo",
    "MemoryCandidate",
    "Message",
    "Origin",
    "PendingApproval",
    "QueryResult",
    "StopReason",
    "SystemMessage",
    "ToolCall",
    "ToolMessage",
    "ToolResult",
    "ToolSpec",
    "TurnOutcome",
    "TurnStatus",
    "Usage",
    "UserMessage",
    "decode_message",
    "decode_messages",
    "encode",
    "new_id",
]

Origin: TypeAlias = Literal["user", "agent", "tool", "system"]
"""Who produced an input. Only ``user`` input may yield statements about the user."""


def new_id() -> str:
    """A short random id (16 hex chars) for messages, queries and calls."""
    return os.urandom(8).hex()


class StopReason(enum.StrEnum):
    """Why a Query stopped."""

    END_TURN = "end_turn"
    """The model finished its answer and asked for no more tools."""
    LENGTH = "length"
    """The model hit its output token limit."""
    CONTENT_FILTER = "content_filter"
    """The provider withheld the answer."""
    MAX_ROUNDS = "max_rounds"
    """The model still wanted tools when the round limit was reached."""
    CANCELLED = "cancelled"
    """The Query was cancelled; partial output is kept and marked interrupted."""
    ERROR = "error"
    """A provider error ended the Query; see ``QueryResult.error``."""
    AWAITING_APPROVAL = "awaiting_approval"
    """A tool call of the last round needs a person's approval: ``QueryResult.pending``
    lists the calls held (not run); the round's other calls ran. Run the Query again on
    the history with ``decisions`` to go on."""


class Usage(msgspec.Struct, frozen=True, kw_only=True):
    """Token counts, summed with ``+``. ``requests`` counts model calls."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    reasoning_tokens: int = 0
    cached_tokens: int = 0
    requests: int = 0
    estimated: bool = False
    """True when some of these tokens were estimated by xai, not reported by the server (an
    endpoint that sends no usage); a sum is estimated as soon as one of its parts is."""

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            prompt_tokens=self.prompt_tokens + other.prompt_tokens,
            completion_tokens=self.completion_tokens + other.completion_tokens,
            reasoning_tokens=self.reasoning_tokens + other.reasoning_tokens,
            cached_tokens=self.cached_tokens + other.cached_tokens,
            requests=self.requests + other.requests,
            estimated=self.estimated or other.estimated,
        )


class ToolCall(msgspec.Struct, frozen=True):
    """A call the model asked for. ``arguments`` is the raw JSON text the model sent."""

    id: str
    name: str
    arguments: str = "{}"


class ToolSpec(msgspec.Struct, frozen=True):
    """What a provider tells the model about one tool: name, description, JSON schema."""

    name: str
    description: str
    parameters: dict[str, Any]


class _Message(msgspec.Struct, frozen=True, kw_only=True, tag_field="role"):
    id: str = msgspec.field(default_factory=new_id)
    at: float | None = None
    """When it was said, in seconds since the epoch: a Session stamps its inputs when it
    accepts them and answers when it commits them (by its clock). Never sent to the model."""


class SystemMessage(_Message, frozen=True, tag="system"):
    content: str


class UserMessage(_Message, frozen=True, tag="user"):
    """An input. ``origin`` records who produced it (see ``Origin``)."""

    content: str
    origin: Origin = "user"
    name: str | None = None
    """Who said it, when several people talk to one Agent (memory keeps it as the speaker).
    Not sent to the model: OpenAI allows only ``[A-Za-z0-9_-]`` there; put a name the model
    must see in ``content``."""


class AssistantMessage(_Message, frozen=True, tag="assistant"):
    """One round's answer. ``interrupted`` marks partial text kept after a cancel or a broken stream."""

    content: str = ""
    thinking: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    interrupted: bool = False


class ToolMessage(_Message, frozen=True, tag="tool"):
    """The result of one tool call as the model will see it.

    ``synthetic`` marks a result made up by xai for a call that never finished
    (cancelled, interrupted by a crash, or not run because of the round limit),
    so that every tool call in a history has its result.
    """

    tool_call_id: str
    tool_name: str
    content: str
    is_error: bool = False
    synthetic: bool = False


Message: TypeAlias = SystemMessage | UserMessage | AssistantMessage | ToolMessage


class ToolResult(msgspec.Struct, frozen=True, kw_only=True):
    """The uniform record of one tool call, whatever happened.

    ``arguments`` is the parsed JSON object when the model sent valid JSON, else
    the raw text. ``result`` is the tool's return value in JSON-compatible form
    (``None`` on failure); ``content`` is the text the model sees, clamped to the
    tool set's size limit (``truncated`` says so).
    """

    call_id: str
    tool_name: str
    success: bool
    arguments: dict[str, Any] | str
    result: Any = None
    error: str | None = None
    content: str = ""
    truncated: bool = False
    duration_ms: float = 0.0


class ErrorInfo(msgspec.Struct, frozen=True, kw_only=True):
    """A serialisable description of an exception (type name, message, retryable, status)."""

    type: str
    message: str
    retryable: bool = False
    status_code: int | None = None

    @classmethod
    def from_exception(cls, exc: BaseException) -> ErrorInfo:
        return cls(
            type=type(exc).__name__,
            message=str(exc),
            retryable=bool(getattr(exc, "retryable", False)),
            status_code=getattr(exc, "status_code", None),
        )


class QueryResult(msgspec.Struct, frozen=True, kw_only=True):
    """What one Query returns: why it stopped, what it produced, what it cost."""

    query_id: str
    stop_reason: StopReason
    messages: tuple[Message, ...] = ()
    """The messages the Query produced, in commit order (assistant rounds and tool results)."""
    usage: Usage = Usage()
    rounds: int = 0
    error: ErrorInfo | None = None
    last_prompt_tokens: int = 0
    """Prompt tokens the provider reported for the last request (0 if it reported none)."""
    pending: tuple[ToolCall, ...] = ()
    """Calls held for approval (``stop_reason`` ``awaiting_approval``): not run, no result."""

    @property
    def text(self) -> str:
        """The text of the last assistant message (the final answer), or ``""``."""
        for message in reversed(self.messages):
            if isinstance(message, AssistantMessage):
                return message.content
        return ""

    @property
    def tool_results(self) -> tuple[ToolMessage, ...]:
        return tuple(m for m in self.messages if isinstance(m, ToolMessage))


class TurnStatus(enum.StrEnum):
    """How one Session turn (one input and the Query that answered it) ended."""

    COMPLETED = "completed"
    LENGTH = "length"
    """The answer was cut off by the output token limit."""
    CONTENT_FILTER = "content_filter"
    BUDGET_EXHAUSTED = "budget_exhausted"
    """The round limit of the Query, or the Session's turn limit, was reached."""
    CANCELLED = "cancelled"
    ERROR = "error"
    INTERRUPTED = "interrupted"
    """The process died during the turn; found so when the Session was reopened."""
    AWAITING_APPROVAL = "awaiting_approval"
    """Only a handle's outcome, never journaled: the Session was suspended while the turn
    waited for a person's decision; the reopened Session goes on waiting and finishes it."""


class TurnOutcome(msgspec.Struct, frozen=True, kw_only=True):
    """The result of one turn, as the ``send`` handle and ``TurnDone`` report it."""

    turn: int
    status: TurnStatus
    text: str = ""
    usage: Usage = Usage()
    """Usage of this turn alone (every Query it ran, delegated children included)."""
    error: ErrorInfo | None = None
    input_id: str | None = None


CandidateKind: TypeAlias = Literal["preference", "fact", "commitment", "event", "other"]


class MemoryCandidate(msgspec.Struct, frozen=True, kw_only=True):
    """A point a Session proposes to remember (L1). The Agent decides what becomes of it."""

    id: str = msgspec.field(default_factory=new_id)
    text: str
    kind: CandidateKind = "fact"
    confidence: float = 0.5
    evidence: tuple[str, ...] = ()
    """Ids of the user-origin messages the point was drawn from."""
    session_id: str = ""
    turn: int = 0
    created_at: float = 0.0


EpisodeOrigin: TypeAlias = Literal["user", "agent", "tool", "system", "assistant"]
"""Who said an episode: an input's ``Origin``, or ``assistant`` for the model's answers."""


class Episode(msgspec.Struct, frozen=True, kw_only=True):
    """One thing said in a Session, kept by the Agent's memory as evidence (an input, or
    the text of an answer). Facts point at episodes by ``id``, the message's id."""

    id: str
    session_id: str
    turn: int
    """The Session's turn it was said in."""
    seq: int
    """Its position among the Session's episodes (0, 1, 2, ...): neighbours are ±1."""
    origin: EpisodeOrigin
    speaker: str
    """``UserMessage.name``, else the origin (``user``, ``assistant``, ...)."""
    text: str
    at: float
    """When it was said (seconds since the epoch)."""


CloseReason: TypeAlias = Literal["closed", "error", "owner_shutdown", "cancelled"]

DecisionKind: TypeAlias = Literal[
    "add",
    "reinforce",
    "merge",
    "supersede",
    "drop",
    "promote",
    "decay",
    "compact",
    "forget",
    "demote",
]
"""What the Agent decided about a memory candidate (or a maintenance step): the kind of a
ledger ``Decision`` and of a ``MemoryDecided`` event."""


_message_decoder = msgspec.json.Decoder(Message)
_messages_decoder = msgspec.json.Decoder(list[Message])
_encoder = msgspec.json.Encoder()


def encode(value: Any) -> bytes:
    """Encode any message, result or event to JSON bytes."""
    return _encoder.encode(value)


def decode_message(data: bytes | str) -> Message:
    return _message_decoder.decode(data)


def decode_messages(data: bytes | str) -> list[Message]:
    return _messages_decoder.decode(data)


class PendingApproval(msgspec.Struct, frozen=True, kw_only=True):
    """A tool call held until a person decides: what ``ApprovalRequested`` announces and
    what a Session's ``approvals.pending()`` lists."""

    call: ToolCall
    session_id: str
    """The Session whose Query asked for the call (a helper's, for a delegated task)."""
    turn: int
    requested_at: float
    asked_by: Origin = "user"
    """Who the turn answers: the origin of its input (``agent`` for a wake-up)."""
    deadline: float | None = None
    """When the Session's ``approval_timeout`` acts (deny, or remind), if it has one."""


class ApprovalDecision(msgspec.Struct, frozen=True, kw_only=True):
    """A person's answer to a held call. ``arguments``: the edited JSON the tool runs with
    instead of the model's (validated against the tool's schema before it is accepted)."""

    call_id: str
    approved: bool
    arguments: str | None = None
    reason: str = ""
    by: str = "user"
    """Who decided (``timeout``: the Session's ``approval_timeout`` denied it)."""
    at: float = 0.0
