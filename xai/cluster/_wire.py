"""What crosses between a client and a host actor: msgspec values, encoded as msgpack bytes.

Every answer is an ``Answer``: the value (encoded again, decoded by the caller with
the type it expects) or a ``Failure`` naming the xai error to raise on the client.
"""

from __future__ import annotations

from typing import Literal, TypeVar, assert_never

import msgspec

from xai.exceptions import (
    AgentNotFoundError,
    ApprovalDecidedError,
    ApprovalNotFoundError,
    ConfigurationError,
    EventsExpiredError,
    IdempotencyKeyReusedError,
    MemoryUnavailableError,
    SessionClosedError,
    SessionNotFoundError,
    UsageError,
    XaiError,
)

__all__ = ["Answer", "Failure", "HostSpec", "answer", "decode", "encode", "failure_of", "unwrap"]

T = TypeVar("T")

FailureKind = Literal[
    "agent_not_found",
    "session_not_found",
    "session_closed",
    "events_expired",
    "idempotency_key_reused",
    "memory_unavailable",
    "approval_not_found",
    "approval_decided",
    "configuration",
    "usage",
    "error",
]


class HostSpec(msgspec.Struct, frozen=True, kw_only=True):
    """How every host actor runs its ``AgentHost``: the shared root of the Agents'
    directories, and the Chroma server of their memory indexes (``None``: an embedded
    store under ``root/.index``, one machine only)."""

    root: str
    chroma_host: str | None = None
    chroma_port: int | None = None
    max_agents: int | None = None
    idle_seconds: float | None = None


class Failure(msgspec.Struct, frozen=True, kw_only=True):
    kind: FailureKind
    message: str
    session_id: str = ""
    after: int = 0
    first: int = 0
    last: int = 0
    where: str = ""


_NIL = b"\xc0"  # msgpack's nil


class Answer(msgspec.Struct, frozen=True, kw_only=True):
    value: msgspec.Raw = msgspec.field(default_factory=lambda: msgspec.Raw(_NIL))
    failure: Failure | None = None


def encode(value: object) -> bytes:
    return msgspec.msgpack.encode(value)


def decode(data: bytes, kind: type[T]) -> T:
    return msgspec.msgpack.decode(data, type=kind)


def answer(value: object) -> bytes:
    return encode(Answer(value=msgspec.Raw(encode(value))))


def failure_of(error: XaiError) -> bytes:
    """The answer for an xai error raised in the host actor."""
    if isinstance(error, EventsExpiredError):
        failure = Failure(
            kind="events_expired",
            message=str(error),
            session_id=error.session_id,
            after=error.after,
            first=error.first,
            last=error.last,
        )
    elif isinstance(error, AgentNotFoundError):
        failure = Failure(kind="agent_not_found", message=str(error), where=error.agent_id)
    elif isinstance(error, IdempotencyKeyReusedError):
        failure = Failure(kind="idempotency_key_reused", message=str(error), where=error.key)
    elif isinstance(error, MemoryUnavailableError):
        failure = Failure(kind="memory_unavailable", message=str(error), where=error.where)
    elif isinstance(error, ApprovalNotFoundError):  # (404 and 409 over the gateway)
        failure = Failure(kind="approval_not_found", message=str(error), where=error.call_id)
    elif isinstance(error, ApprovalDecidedError):
        failure = Failure(kind="approval_decided", message=str(error), where=error.call_id)
    else:
        kind: FailureKind
        if isinstance(error, SessionNotFoundError):
            kind = "session_not_found"
        elif isinstance(error, SessionClosedError):
            kind = "session_closed"
        elif isinstance(error, ConfigurationError):
            kind = "configuration"
        elif isinstance(error, UsageError):
            kind = "usage"
        else:
            kind = "error"
        failure = Failure(kind=kind, message=str(error))
    return encode(Answer(failure=failure))


def _raise(failure: Failure) -> XaiError:
    match failure.kind:
        case "session_not_found":
            return SessionNotFoundError(failure.message)
        case "session_closed":
            return SessionClosedError(failure.message)
        case "events_expired":
            return EventsExpiredError(
                failure.session_id, failure.after, first=failure.first, last=failure.last
            )
        case "agent_not_found":
            return AgentNotFoundError(failure.where)
        case "idempotency_key_reused":
            return IdempotencyKeyReusedError(failure.where)
        case "memory_unavailable":
            return MemoryUnavailableError(failure.message, where=failure.where)
        case "approval_not_found":
            return ApprovalNotFoundError(failure.where, failure.message)
        case "approval_decided":
            return ApprovalDecidedError(failure.where, failure.message)
        case "configuration":
            return ConfigurationError(failure.message)
        case "usage":
            return UsageError(failure.message)
        case "error":
            return XaiError(failure.message)
    assert_never(failure.kind)


def unwrap(data: bytes, kind: type[T]) -> T:
    """The value of an answer, or its failure raised as the xai error it names."""
    got = decode(data, Answer)
    if got.failure is not None:
        raise _raise(got.failure)
    return decode(got.value, kind)
