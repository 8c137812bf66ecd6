"""Tool calls a person must decide: what a Session holds, journals, waits for and applies.

The Query stops before a held call runs and returns it as pending (see ``Query.run``).
``Approvals`` then, in the Session's task: journals each held call (``approval_asked``,
synced) before announcing it (``ApprovalRequested``), moves the lifecycle to
``waiting``, and waits until every held call of the turn is decided, or a close or a
suspend comes. ``approve`` / ``deny`` may be called from anywhere: a decision is checked
(an edit against the tool's schema), journaled (``approval_decided``) and only then
applied; the turn goes on with a Query given the decisions. An approved call's start is
journaled and synced before it runs (``tool_start``), so a restart that finds a start
and no result answers the call ``interrupted`` instead of running it again: a decision
is applied once, a tool runs at most once.

Delegation: a helper Session's held calls surface at its parent (``adopt``): the
parent lists them, re-announces their events, and routes decisions to the helper.
"""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, Protocol

import anyio
import msgspec

from xai.events import ApprovalDecided, ApprovalRequested, SessionEvent
from xai.exceptions import (
    ApprovalDecidedError,
    ApprovalNotFoundError,
    SessionClosedError,
)
from xai.logs import get_logger
from xai.messages import (
    ApprovalDecision,
    Origin,
    PendingApproval,
    QueryResult,
    StopReason,
    ToolCall,
    Usage,
)
from xai.session._announce import SessionHub
from xai.session._lifecycle import Lifecycle, SessionState
from xai.session._recorder import Recorder
from xai.session._records import ApprovalAskedRecord, ApprovalDecidedRecord, ToolStartRecord
from xai.session._types import SessionConfig
from xai.tools import ToolSet

if TYPE_CHECKING:
    from xai.telemetry import Telemetry

__all__ = ["Approvals", "Decider"]

_log = get_logger("xai.session._session")

Rerun = Callable[[int, Mapping[str, ApprovalDecision]], Awaitable[QueryResult]]


class Decider(Protocol):
    """What a parent needs of a helper Session's approvals."""

    def pending(self) -> tuple[PendingApproval, ...]: ...

    def owns(self, call_id: str) -> bool: ...

    def decide(
        self,
        call_id: str,
        *,
        approved: bool,
        arguments: str | Mapping[str, Any] | None = None,
        reason: str = "",
        by: str = "user",
    ) -> ApprovalDecision: ...


class Approvals:
    """The held calls of one Session (``Session.approvals``): ``pending()``, ``approve``,
    ``deny``; the turn's side (``carry``) and the journal's (``starting``, ``answered``)."""

    __slots__ = (
        "asked",
        "cancelled",
        "changed",
        "children",
        "clock",
        "config",
        "decided",
        "hub",
        "lifecycle",
        "recorder",
        "reminded",
        "session_id",
        "started",
        "tools",
    )

    def __init__(
        self,
        *,
        session_id: str,
        config: SessionConfig,
        tools: ToolSet,
        lifecycle: Lifecycle,
        recorder: Recorder,
        hub: SessionHub,
        clock: Callable[[], float],
        restored: tuple[Iterable[PendingApproval], Mapping[str, ApprovalDecision], Iterable[str]]
        | None = None,
    ) -> None:
        self.session_id = session_id
        self.config = config
        self.tools = tools
        self.lifecycle = lifecycle
        self.recorder = recorder
        self.hub = hub
        self.clock = clock
        asked, decided, started = restored if restored is not None else ((), {}, ())
        self.asked: dict[str, PendingApproval] = {a.call.id: a for a in asked}
        """Held calls still without a result, by call id (decided or not)."""
        self.decided: dict[str, ApprovalDecision] = dict(decided)
        """Every decision taken (kept once applied: a repeat is answered with it)."""
        self.started: set[str] = set(started)
        self.reminded: dict[str, int] = {}
        self.changed: anyio.Event | None = None
        self.cancelled = False
        self.children: list[Decider] = []

    # -- what a person (or the host) does ---------------------------------------------

    def pending(self) -> tuple[PendingApproval, ...]:
        """Held calls nobody decided yet, this Session's and its running helpers'."""
        own = tuple(a for a in self.asked.values() if a.call.id not in self.decided)
        return own + tuple(p for child in self.children for p in child.pending())

    def owns(self, call_id: str) -> bool:
        return call_id in self.asked or any(child.owns(call_id) for child in self.children)

    def approve(
        self,
        call_id: str,
        *,
        arguments: str | Mapping[str, Any] | None = None,
        by: str = "user",
    ) -> ApprovalDecision:
        """Let the call run (with ``arguments`` instead of the model's, if given: JSON
        text or a mapping, checked against the tool's schema, ``InvalidEditError``)."""
        return self.decide(call_id, approved=True, arguments=arguments, by=by)

    def deny(self, call_id: str, reason: str = "", *, by: str = "user") -> ApprovalDecision:
        """Refuse the call: the model gets the denial (and ``reason``) as its result."""
        return self.decide(call_id, approved=False, reason=reason, by=by)

    def decide(
        self,
        call_id: str,
        *,
        approved: bool,
        arguments: str | Mapping[str, Any] | None = None,
        reason: str = "",
        by: str = "user",
    ) -> ApprovalDecision:
        """Journal and apply a decision. The same decision again answers the one recorded
        (a retry is harmless); another one is ``ApprovalDecidedError``; an unknown call
        ``ApprovalNotFoundError``; a Session closing, closed or suspended
        ``SessionClosedError`` (decide on the reopened one)."""
        asked = self.asked.get(call_id)
        if asked is None:
            for child in self.children:
                if child.owns(call_id):
                    return child.decide(
                        call_id, approved=approved, arguments=arguments, reason=reason, by=by
                    )
            applied = self.decided.get(call_id)
            if applied is not None and applied.approved == approved:
                return applied  # a repeat after the call got its result
            if applied is not None:
                raise ApprovalDecidedError(call_id, f"call {call_id} was already decided")
            raise ApprovalNotFoundError(call_id)
        edited: str | None = None
        if approved and arguments is not None:
            text = arguments if isinstance(arguments, str) else msgspec.json.encode(arguments)
            edited = self.tools.check_edit(asked.call, _text(text))
            if edited == _normal(asked.call.arguments):
                edited = None  # not an edit: what the model asked
        earlier = self.decided.get(call_id)
        if earlier is not None:
            if earlier.approved == approved and earlier.arguments == edited:
                return earlier
            raise ApprovalDecidedError(
                call_id,
                f"call {call_id} was already {'approved' if earlier.approved else 'denied'}",
            )
        if self.lifecycle.state in _OVER:
            raise SessionClosedError(
                f"{self.lifecycle.actor} is {self.lifecycle.state.value}: decide on it reopened"
            )
        decision = ApprovalDecision(
            call_id=call_id,
            approved=approved,
            arguments=edited,
            reason="" if approved else reason,
            by=by,
            at=self.clock(),
        )
        record = ApprovalDecidedRecord(decision=decision, session_id=self.session_id)
        journal = self.recorder.open()  # on disk before it is applied (or told)
        position = journal.append(record) if journal is not None else None
        self.decided[call_id] = decision
        _log.info("session.approval_decided", call_id=call_id, approved=approved, by=by)
        self.hub.announce(record, position)
        self.wake()
        return decision

    # -- delegation --------------------------------------------------------------------

    def adopt(self, child: Decider) -> Callable[[], None]:
        """A helper's held calls surface here until the returned callable is called."""
        self.children.append(child)

        def release() -> None:
            if child in self.children:
                self.children.remove(child)

        return release

    def relay(self, event: SessionEvent) -> None:
        """A helper's approval event, told to this Session's observers too."""
        if isinstance(event.event, ApprovalRequested | ApprovalDecided):
            self.hub.publish(event.event)

    # -- the turn's side ---------------------------------------------------------------

    def cancel_wait(self) -> bool:
        """Cancel the turn that waits (its held calls are answered "not run"); False when
        none waits."""
        if not self.lifecycle.waiting:
            return False
        self.cancelled = True
        self.wake()
        return True

    def wake(self) -> None:
        changed = self.changed
        if changed is not None:
            self.changed = None
            changed.set()

    def held(self) -> tuple[ToolCall, ...]:
        """The calls a reopened Session finds held (their turn goes on when decided)."""
        return tuple(a.call for a in self.asked.values())

    def asked_by(self) -> Origin:
        return next((a.asked_by for a in self.asked.values()), "user")

    def starting(self, call_id: str) -> ToolStartRecord | None:
        """The record to sync before an approved call runs (``None``: not a held call)."""
        decision = self.decided.get(call_id)
        if decision is None or not decision.approved or call_id not in self.asked:
            return None
        self.started.add(call_id)
        return ToolStartRecord(turn=self.asked[call_id].turn, call_id=call_id)

    def answered(self, call_id: str) -> None:
        """The call's result is journaled: nothing of it waits any more."""
        if self.asked.pop(call_id, None) is not None:
            self.started.discard(call_id)
            self.reminded.pop(call_id, None)

    def lost(self, call_id: str) -> bool:
        """Approved and started before a restart, no result: it must not run again."""
        return call_id in self.started

    async def carry(
        self,
        turn: int,
        asked_by: Origin,
        result: QueryResult,
        rerun: Rerun,
        telemetry: Telemetry | None,
    ) -> tuple[QueryResult, Usage, int]:
        """Hold, wait, apply, until the turn's Query stops for another reason (or a close
        or a suspend stops the wait: the result still says ``awaiting_approval``).
        Returns the last result and what the Queries run here added."""
        usage, rounds = Usage(), 0
        while result.stop_reason is StopReason.AWAITING_APPROVAL:
            await self.hold(turn, asked_by, result.pending)
            if telemetry is None:
                decisions = await self.wait()
            else:
                with telemetry.approval_wait(self.session_id, turn, result.pending):
                    decisions = await self.wait()
            if decisions is None:
                break
            result = await rerun(turn, decisions)
            usage, rounds = usage + result.usage, rounds + result.rounds
        return result, usage, rounds

    async def hold(self, turn: int, asked_by: Origin, calls: Iterable[ToolCall]) -> None:
        """Journal (synced) the calls not held yet, then announce every undecided one."""
        calls = tuple(calls)
        new = [call for call in calls if call.id not in self.asked]
        now = self.clock()
        timeout = self.config.approval_timeout
        written: list[tuple[ApprovalAskedRecord, int | None]] = []
        for call in new:
            pending = PendingApproval(
                call=call,
                session_id=self.session_id,
                turn=turn,
                requested_at=now,
                asked_by=asked_by,
                deadline=now + timeout if timeout is not None else None,
            )
            record = ApprovalAskedRecord(pending=pending)
            written.append((record, self.recorder.write(record)))
            self.asked[call.id] = pending
        if new:
            await self.recorder.sync()
        for record, position in written:  # journal-backed: announced by its record
            _log.info(
                "session.approval_requested",
                tool=record.pending.call.name,
                call_id=record.pending.call.id,
            )
            self.hub.announce(record, position)
        for call in calls:  # held before (a reopen): announced again, as a reminder
            if call not in new and call.id in self.asked and call.id not in self.decided:
                _log.info("session.approval_requested", tool=call.name, call_id=call.id)
                self.hub.publish(ApprovalRequested(pending=self.asked[call.id], reminder=1))

    async def wait(self) -> dict[str, ApprovalDecision] | None:
        """Wait in ``waiting`` until every held call is decided (the decisions), or a close
        or a suspend comes (``None``). The timeout denies or reminds as configured."""
        lifecycle = self.lifecycle
        if lifecycle.state is not SessionState.RUNNING:
            return None
        lifecycle.transition(SessionState.WAITING)
        try:
            while True:
                undecided = [a for a in self.asked.values() if a.call.id not in self.decided]
                if not undecided:
                    return dict(self.decided)
                if not lifecycle.waiting or self.cancelled:
                    return None
                changed = self.changed = anyio.Event()
                due = min(self._deadline(a) for a in undecided)
                with anyio.move_on_after(max(0.0, due - self.clock())):
                    await changed.wait()
                self._expire(undecided)
        finally:
            self.cancelled = False
            if lifecycle.waiting:
                lifecycle.transition(SessionState.RUNNING)

    def _deadline(self, pending: PendingApproval) -> float:
        timeout = self.config.approval_timeout
        if timeout is None:
            return math.inf
        return pending.requested_at + timeout * (1 + self.reminded.get(pending.call.id, 0))

    def _expire(self, undecided: list[PendingApproval]) -> None:
        now = self.clock()
        timeout = self.config.approval_timeout
        for pending in undecided:
            call_id = pending.call.id
            if call_id in self.decided or self._deadline(pending) > now or timeout is None:
                continue
            if self.config.approval_expiry == "deny":
                reason = f"no decision within {timeout:g} s"
                self.decide(call_id, approved=False, reason=reason, by="timeout")
            else:
                count = self.reminded[call_id] = self.reminded.get(call_id, 0) + 1
                again = msgspec.structs.replace(pending, deadline=self._deadline(pending))
                self.hub.publish(ApprovalRequested(pending=again, reminder=count))


_OVER = frozenset(
    {
        SessionState.CLOSING,
        SessionState.CLOSED,
        SessionState.SUSPENDING,
        SessionState.SUSPENDED,
    }
)


def _text(data: str | bytes) -> str:
    return data.decode() if isinstance(data, bytes) else data


def _normal(arguments: str) -> str | None:
    try:
        return msgspec.json.encode(msgspec.json.decode(arguments or "{}")).decode()
    except msgspec.DecodeError:
        return None
