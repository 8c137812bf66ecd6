"""The host API, defined once: one msgspec request per operation, with its answer's type and
its retry and idempotency policy.

Every way of reaching a host runs the same requests through the same dispatch
(``_host_dispatch``): ``AgentHost.call`` in this process, a Ray host actor (the request and
its answer encoded as msgpack, ``xai.cluster``), and the HTTP gateway (``xai.serve``, JSON).
Adding an operation is one request struct here and one handler there (docs/architecture.md,
"How to add a host operation").

The policy (``HostCall.policy``) says what a repeat of a request does, so a transport knows
whether it may retry it after the host died (a Ray actor restarted) and what an
``Idempotency-Key`` (``HostWrite.key``) means:

- ``read``: changes nothing; retried.
- ``idempotent``: a write whose repeat changes nothing more (closing a closed Session,
  adding a wake-up again: the same id replaces it); retried.
- ``keyed``: a write whose key the host keeps on disk with what it did (an input's id in
  the Session's journal): a repeat with the key is answered, never run twice, even after a
  restart. A transport that retries it gives it a key first.
- ``once``: a write the host cannot recognise after a restart (opening a Session, cancelling
  a turn, forgetting a fact, firing wake-ups): not retried by a transport. A repeat with the
  same key while the host runs gets the first answer (the host keeps the answers of the last
  ``KEPT_ANSWERS`` keyed writes).

A key reused for a different request is refused (``IdempotencyKeyReusedError``). No read
creates an Agent: a request about an Agent the host does not have is refused
(``AgentNotFoundError``) unless it ``creates`` one (``Open``, ``AddWakeup``).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any, ClassVar, Generic, Literal, Protocol, TypeAlias, TypeVar

import msgspec

from xai.agent._host_views import (
    FactDetail,
    SessionInfo,
    SessionSummary,
    UsageReport,
    WakeupView,
)
from xai.agent._ids import check_id
from xai.agent._mood_view import MoodView
from xai.agent._wakeups import Wakeup
from xai.events import AgentEvent, SessionEvent
from xai.memory import Fact, ForgetScope, MemoryHit
from xai.messages import ApprovalDecision, CloseReason, Origin, PendingApproval

__all__ = [
    "KEPT_ANSWERS",
    "AddWakeup",
    "CancelTurn",
    "CloseSession",
    "DecideApproval",
    "Forget",
    "GetFact",
    "GetFacts",
    "GetMood",
    "GetSession",
    "GetUsage",
    "HostCall",
    "HostClient",
    "HostRequest",
    "HostStream",
    "HostStreamRequest",
    "HostWrite",
    "ListApprovals",
    "ListSessions",
    "ListWakeups",
    "Notify",
    "Open",
    "OpenSession",
    "PauseWakeup",
    "Policy",
    "ReadAgentEvents",
    "ReadEvents",
    "SearchMemory",
    "Submit",
]

T = TypeVar("T")
T_co = TypeVar("T_co", covariant=True)

Policy: TypeAlias = Literal["read", "idempotent", "keyed", "once"]

KEPT_ANSWERS = 10_000
"""Answers of ``once``/``idempotent`` writes a host keeps by their key."""


class OpenSession(msgspec.Struct, frozen=True, kw_only=True):
    """A request to open a Session on an Agent (``Open`` carries it with the Agent's id)."""

    purpose: str | None = None
    instructions: str | None = None
    prefix_tokens: int | None = None
    origin: Origin = "user"


class HostCall(msgspec.Struct, Generic[T_co], frozen=True, kw_only=True, tag_field="op"):
    """A request to a host about one Agent, answered with a ``T``."""

    policy: ClassVar[Policy] = "read"
    answer: ClassVar[Any]
    """The answer's type (what a transport decodes it as)."""
    creates: ClassVar[bool] = False
    """Whether it starts an Agent the host does not have yet (a write that means to: opening
    a Session, adding a wake-up). Any other request about one is ``AgentNotFoundError``."""

    agent_id: str

    def check(self) -> None:
        """Raise ``UsageError`` if the request is wrong whatever the host holds (a malformed
        id): every transport's dispatch runs it first, before an Agent is started for it."""


class HostWrite(HostCall[T_co], frozen=True, kw_only=True):
    """A request that changes something; ``key`` (an HTTP ``Idempotency-Key``) makes a
    repeat harmless, as its ``policy`` says."""

    key: str | None = None


class HostStream(msgspec.Struct, Generic[T_co], frozen=True, kw_only=True, tag_field="op"):
    """A request for a stream of ``T`` (never retried: a reader resumes by sequence number)."""

    item: ClassVar[Any]

    agent_id: str


# -- Sessions --------------------------------------------------------------------------


class Open(HostWrite[SessionInfo], frozen=True, kw_only=True, tag="open"):
    """Open a Session; its events are streamed (``ReadEvents``) from its first one."""

    policy: ClassVar[Policy] = "once"
    answer: ClassVar[Any] = SessionInfo
    creates: ClassVar[bool] = True

    session: OpenSession = OpenSession()


class Submit(HostWrite[str], frozen=True, kw_only=True, tag="submit"):
    """Queue ``text`` as the Session's next input; answered with the input's id once it is
    on disk, without waiting for the turn. The key is the input's id."""

    policy: ClassVar[Policy] = "keyed"
    answer: ClassVar[Any] = str

    session_id: str
    text: str
    origin: Origin = "user"


class GetSession(HostCall[SessionInfo], frozen=True, kw_only=True, tag="get_session"):
    answer: ClassVar[Any] = SessionInfo

    session_id: str


class ListSessions(HostCall[list[SessionSummary]], frozen=True, kw_only=True, tag="list_sessions"):
    """The Agent's open Sessions, in the order they were opened."""

    answer: ClassVar[Any] = list[SessionSummary]


class CloseSession(HostWrite[None], frozen=True, kw_only=True, tag="close_session"):
    policy: ClassVar[Policy] = "idempotent"
    answer: ClassVar[Any] = type(None)

    session_id: str
    reason: CloseReason = "closed"


class CancelTurn(HostWrite[bool], frozen=True, kw_only=True, tag="cancel"):
    """Cancel the Session's running turn (its partial answer is kept, marked interrupted);
    ``False``: no turn was running."""

    policy: ClassVar[Policy] = "once"
    answer: ClassVar[Any] = bool

    session_id: str


# -- approvals -------------------------------------------------------------------------


class ListApprovals(HostCall[list[PendingApproval]], frozen=True, kw_only=True, tag="approvals"):
    """Tool calls of the Agent's open Sessions that wait for a person (those of one Session
    and its helpers with ``session_id``), oldest first."""

    answer: ClassVar[Any] = list[PendingApproval]

    session_id: str | None = None


class DecideApproval(HostWrite[ApprovalDecision], frozen=True, kw_only=True, tag="decide"):
    """Approve (``arguments``: edited JSON, checked against the tool's schema) or deny a held
    call of ``session_id`` (or of one of its helpers); answered once it is journaled. A repeat
    of the same decision answers the one recorded, also after a restart and once the call ran;
    another decision is ``ApprovalDecidedError``."""

    policy: ClassVar[Policy] = "idempotent"
    answer: ClassVar[Any] = ApprovalDecision

    session_id: str
    call_id: str
    approved: bool
    arguments: str | None = None
    reason: str = ""
    by: str = "user"


# -- memory ----------------------------------------------------------------------------


class GetFacts(HostCall[list[Fact]], frozen=True, kw_only=True, tag="facts"):
    answer: ClassVar[Any] = list[Fact]


class SearchMemory(HostCall[list[MemoryHit]], frozen=True, kw_only=True, tag="search"):
    answer: ClassVar[Any] = list[MemoryHit]

    query: str
    k: int = 5


class GetFact(HostCall[FactDetail | None], frozen=True, kw_only=True, tag="fact"):
    """A fact (any status), its evidence and history; ``None``: never had it."""

    answer: ClassVar[Any] = FactDetail | None

    fact_id: str


class Forget(HostWrite[Fact | None], frozen=True, kw_only=True, tag="forget"):
    """Forget an active fact (through the Agent: its ledger, its observers); the forgotten
    version, or ``None`` if there is no such active fact."""

    policy: ClassVar[Policy] = "once"
    answer: ClassVar[Any] = Fact | None

    fact_id: str
    reason: str = "forgotten from the web page"
    scope: ForgetScope = "fact"
    """What goes (``Agent.forget``): ``fact``, ``evidence`` or ``erase``. A fact forgotten
    with a narrower scope may be forgotten again with a wider one; ``None`` if it was
    forgotten with this scope or a wider one already."""


# -- wake-ups and usage ----------------------------------------------------------------


class ListWakeups(HostCall[list[WakeupView]], frozen=True, kw_only=True, tag="wakeups"):
    answer: ClassVar[Any] = list[WakeupView]


class AddWakeup(HostWrite[WakeupView], frozen=True, kw_only=True, tag="add_wakeup"):
    """Add (or replace: the same id) a wake-up."""

    policy: ClassVar[Policy] = "idempotent"
    answer: ClassVar[Any] = WakeupView
    creates: ClassVar[bool] = True

    wakeup: Wakeup

    def check(self) -> None:
        check_id("wake-up id", self.wakeup.id)


class PauseWakeup(HostWrite[WakeupView | None], frozen=True, kw_only=True, tag="pause_wakeup"):
    """Pause (or resume: ``paused=False``) a wake-up; ``None``: there is no such wake-up."""

    policy: ClassVar[Policy] = "idempotent"
    answer: ClassVar[Any] = WakeupView | None

    wakeup_id: str
    paused: bool = True


class Notify(HostWrite[int], frozen=True, kw_only=True, tag="notify"):
    """Report the application event ``name``: the wake-ups waiting for it fire (how many)."""

    policy: ClassVar[Policy] = "once"
    answer: ClassVar[Any] = int

    name: str


class GetUsage(HostCall[UsageReport], frozen=True, kw_only=True, tag="usage"):
    answer: ClassVar[Any] = UsageReport


class GetMood(HostCall[MoodView], frozen=True, kw_only=True, tag="mood"):
    """The user's and the Agent's mood now, and the last ``limit`` Session digests."""

    answer: ClassVar[Any] = MoodView

    limit: int = 200


# -- streams ---------------------------------------------------------------------------


class ReadEvents(HostStream[SessionEvent], frozen=True, kw_only=True, tag="events"):
    """The Session's events numbered above ``after`` (host numbers, never repeated or
    skipped), then each new one until it closes. Opening it raises ``SessionNotFoundError``,
    ``SessionClosedError`` or ``EventsExpiredError`` before any event is read."""

    item: ClassVar[Any] = SessionEvent

    session_id: str
    after: int = 0


class ReadAgentEvents(HostStream[AgentEvent], frozen=True, kw_only=True, tag="agent_events"):
    """Everything the Agent and its Sessions do from now on (live, not resumable); the
    Agent is kept running while it is read."""

    item: ClassVar[Any] = AgentEvent


HostRequest: TypeAlias = (
    Open
    | Submit
    | GetSession
    | ListSessions
    | CloseSession
    | CancelTurn
    | ListApprovals
    | DecideApproval
    | GetFacts
    | SearchMemory
    | GetFact
    | Forget
    | ListWakeups
    | AddWakeup
    | PauseWakeup
    | Notify
    | GetUsage
    | GetMood
)
"""Every request answered with one value (a tagged union: ``op`` names it on the wire)."""

HostStreamRequest: TypeAlias = ReadEvents | ReadAgentEvents


class HostClient(Protocol):
    """Anything that runs host requests: ``AgentHost`` (this process), ``xai.cluster.RayHosts``
    (host actors), and what the HTTP gateway serves.

    Errors, which the gateway turns into HTTP statuses: ``SessionNotFoundError`` (404),
    ``SessionClosedError`` (409), ``EventsExpiredError`` (410), ``UsageError`` (400: a bad
    id or value; ``IdempotencyKeyReusedError``: 422)."""

    async def call(self, request: HostCall[T]) -> T: ...

    async def stream(self, request: HostStream[T]) -> AsyncIterator[T]:
        """Awaiting it opens the stream (raising its refusal before any item is read)."""
        ...
