"""Values of the Session API: its configuration, turn handles, finalising hooks."""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from typing import Any, Literal, TypeAlias

import anyio
import msgspec

from xai.exceptions import ConfigurationError
from xai.logs import get_logger
from xai.messages import CloseReason, Episode, MemoryCandidate, TurnOutcome, Usage, UserMessage
from xai.mood import MoodDelta, MoodSeed
from xai.query import QueryConfig
from xai.session._records import FsyncPolicy

__all__ = [
    "ExpiryPolicy",
    "FinalizingContext",
    "FinalizingHook",
    "InputPolicy",
    "SessionConfig",
    "TurnHandle",
    "TurnSlot",
    "WaitingPolicy",
    "run_hooks",
]

_log = get_logger(__name__)

InputPolicy: TypeAlias = Literal["queue", "interrupt"]
WaitingPolicy: TypeAlias = Literal["queue", "reject"]
"""Input sent while a turn waits for a person: queued behind it, or refused."""
ExpiryPolicy: TypeAlias = Literal["deny", "remind"]
"""What ``approval_timeout`` does to a call nobody decided: deny it, or announce it again."""


class SessionConfig(msgspec.Struct, frozen=True, kw_only=True):
    """How a Session runs. Token figures are the model's tokens, estimated between Queries."""

    query: QueryConfig = QueryConfig()
    """Limits of each Query (rounds, output tokens, tool timeout and concurrency)."""
    max_turns: int | None = None
    """Inputs this Session will answer; later ones end at once as ``budget_exhausted``."""
    compaction: bool = True
    """Compact the history when it would not fit (off: requests may fail as too long)."""
    context_window: int = 128_000
    compact_at: float = 0.8
    """Compact when the next request is estimated above this share of ``context_window``."""
    keep_recent_tokens: int = 8_000
    """Recent history kept verbatim by a compaction."""
    summary_max_tokens: int = 1_000
    summariser_input_tokens: int = 24_000
    """The summariser's own input limit: older history beyond it is cut in the middle."""
    extract_memory: bool = False
    """Ask the model for L1 memory candidates after each turn (an Agent turns this on)."""
    extraction_max_tokens: int = 1_000
    fsync: FsyncPolicy = "turn"
    event_buffer: int = 1_000
    """Default buffer of each subscription (events)."""
    delegation: bool = False
    """Give the model the built-in ``delegate`` tool (sub-agents)."""
    max_delegation_depth: int = 2
    hook_timeout: float = 30.0
    """Seconds each ``on_session_finalizing`` hook may take before it is abandoned."""
    while_waiting: WaitingPolicy = "queue"
    """Input sent while a turn waits for a person's approval: ``queue`` it behind the turn,
    or ``reject`` it (``ApprovalPendingError``)."""
    approval_timeout: float | None = None
    """Seconds a held tool call may wait for a decision (from when it was asked, by the
    Session's clock, across restarts); then ``approval_expiry`` acts. ``None``: forever."""
    approval_expiry: ExpiryPolicy = "deny"

    def __post_init__(self) -> None:
        if not 0.1 <= self.compact_at <= 1.0:
            raise ConfigurationError(f"compact_at must be within 0.1..1.0, got {self.compact_at}")
        if self.keep_recent_tokens >= self.context_window:
            raise ConfigurationError("keep_recent_tokens must be smaller than context_window")
        if self.approval_timeout is not None and self.approval_timeout <= 0:
            raise ConfigurationError(
                f"approval_timeout must be positive, got {self.approval_timeout}"
            )


class FinalizingContext(msgspec.Struct, frozen=True, kw_only=True):
    """What ``on_session_finalizing`` hooks receive, once, before the Session lets go."""

    session_id: str
    reason: CloseReason
    candidates: tuple[MemoryCandidate, ...]
    """Candidates the owner has not acknowledged yet (``acknowledge_candidates``)."""
    episodes: tuple[Episode, ...] = ()
    """Everything said in the Session, in order (compacted turns included): the owner's
    memory keeps them as the evidence its facts point to."""
    usage: Usage
    turns: int
    parent_id: str | None = None
    mood: tuple[MoodDelta, ...] = ()
    """Every mood delta the Session's turns recorded: the owner digests them into its mood
    (once per Session: a repeated close after a restart hands the same ones again)."""
    mood_seed: MoodSeed | None = None
    """The mood the Session started from (``None``: it kept no mood)."""


FinalizingHook: TypeAlias = Callable[[FinalizingContext], Awaitable[None] | None]


async def run_hooks(
    hooks: list[FinalizingHook],
    context: FinalizingContext,
    seconds: float,
    failed: Callable[[Exception], None],
) -> bool:
    """Call each hook in turn, each within ``seconds``; True if every one returned normally
    (so the owner took the candidates). One that fails or times out is logged and reported
    to ``failed``; the next still runs."""
    took_all = True
    for hook in list(hooks):
        try:
            with anyio.fail_after(seconds):
                value = hook(context)
                if inspect.isawaitable(value):
                    await value
        except Exception as exc:  # TimeoutError included
            took_all = False
            _log.exception("session.finalizing_hook_failed", hook=repr(hook))
            failed(exc)
    return took_all


class TurnSlot:
    """The Session's side of one turn: resolved once, by the Session, with its outcome.

    ``trace`` is the tracing context where the input was sent (with telemetry): the
    turn's parent span.
    """

    __slots__ = ("done", "input", "outcome", "resume", "trace")

    def __init__(self, message: UserMessage | None, *, resume: int | None = None) -> None:
        self.input = message
        self.resume = resume
        """The open turn a reopened Session goes on with (its calls wait for a person)."""
        self.done = anyio.Event()
        self.outcome: TurnOutcome | None = None
        self.trace: Any = None

    def resolve(self, outcome: TurnOutcome) -> None:
        if self.outcome is None:
            self.outcome = outcome
            self.done.set()


class TurnHandle:
    """What ``send`` gives back: await it (or ``result()``) for the turn's outcome."""

    __slots__ = ("_slot",)

    def __init__(self, slot: TurnSlot) -> None:
        self._slot = slot

    @property
    def input(self) -> UserMessage | None:
        """The input this turn answers (``None`` for ``continue_turn``)."""
        return self._slot.input

    @property
    def done(self) -> bool:
        return self._slot.outcome is not None

    @property
    def outcome(self) -> TurnOutcome | None:
        return self._slot.outcome

    async def result(self) -> TurnOutcome:
        await self._slot.done.wait()
        outcome = self._slot.outcome
        assert outcome is not None
        return outcome

    def __await__(self) -> Any:
        return self.result().__await__()
