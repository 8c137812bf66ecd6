"""A Session's turns: the mailbox loop, one turn at a time, each run by one Query.

``Turns`` works on the state objects it is given (lifecycle, inbox, context,
transcript, usage, recorder, hub) and runs in the Session's own task, so
nothing here needs a lock. What it announces as final is in the journal first.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

import anyio
import msgspec

from xai.logs import get_logger
from xai.messages import (
    ApprovalDecision,
    ErrorInfo,
    Message,
    Origin,
    QueryResult,
    StopReason,
    TurnOutcome,
    TurnStatus,
    Usage,
    UserMessage,
)
from xai.providers import Provider
from xai.query import CancelToken, Query
from xai.session import _oplog
from xai.session._announce import SessionHub
from xai.session._approvals import Approvals
from xai.session._between import Between
from xai.session._compaction import message_chars
from xai.session._context import Context
from xai.session._history import interrupted_by_crash, not_decided, unanswered_calls
from xai.session._inbox import Inbox
from xai.session._lifecycle import Lifecycle, SessionState
from xai.session._recorder import Recorder
from xai.session._records import InputRecord, MessageRecord, TurnEndRecord, TurnStartRecord
from xai.session._sink import Sink
from xai.session._transcript import Transcript
from xai.session._types import SessionConfig, TurnSlot
from xai.session._usage import Spending

if TYPE_CHECKING:
    from xai.telemetry import Telemetry

__all__ = ["Turns"]

_log = get_logger("xai.session._session")  # the Session's own lines

_STATUS = {
    StopReason.END_TURN: TurnStatus.COMPLETED,
    StopReason.LENGTH: TurnStatus.LENGTH,
    StopReason.CONTENT_FILTER: TurnStatus.CONTENT_FILTER,
    StopReason.MAX_ROUNDS: TurnStatus.BUDGET_EXHAUSTED,
    StopReason.CANCELLED: TurnStatus.CANCELLED,
    StopReason.ERROR: TurnStatus.ERROR,
    StopReason.AWAITING_APPROVAL: TurnStatus.AWAITING_APPROVAL,
}


class Turns:
    """The mailbox of one Session and the turns it runs.

    ``count`` is the highest turn number used; ``current`` the turn running (or the
    memory extraction after it); ``token`` cancels the running Query.
    """

    __slots__ = (
        "added",
        "approvals",
        "between",
        "clock",
        "config",
        "context",
        "count",
        "current",
        "hub",
        "inbox",
        "lifecycle",
        "provider",
        "query",
        "recorder",
        "session",
        "spending",
        "telemetry",
        "token",
        "transcript",
        "wake",
    )

    def __init__(
        self,
        *,
        session: tuple[str, str | None, int],
        count: int,
        config: SessionConfig,
        provider: Provider,
        query: Query,
        telemetry: Telemetry | None,
        clock: Callable[[], float],
        lifecycle: Lifecycle,
        inbox: Inbox,
        context: Context,
        transcript: Transcript,
        spending: Spending,
        recorder: Recorder,
        hub: SessionHub,
        between: Between,
        approvals: Approvals,
    ) -> None:
        self.session = session
        self.approvals = approvals  # (id, parent id, depth): what a turn's span says
        self.count = count
        self.config = config
        self.provider = provider
        self.query = query
        self.telemetry = telemetry
        self.clock = clock
        self.lifecycle = lifecycle
        self.inbox = inbox
        self.context = context
        self.transcript = transcript
        self.spending = spending
        self.recorder = recorder
        self.hub = hub
        self.between = between
        self.current: TurnSlot | None = None
        self.token: CancelToken | None = None
        self.wake: anyio.Event | None = None
        self.added: list[Message] = []
        """What the running turn added to the history (its input and messages)."""

    def wake_up(self) -> None:
        wake = self.wake
        if wake is not None:
            self.wake = None
            wake.set()

    def cancel(self) -> bool:
        """Cancel the running Query (if any), or the turn that waits for a person (its held
        calls never run). Returns whether one was running."""
        token = self.token
        if token is None:
            return self.approvals.cancel_wait()
        token.cancel()
        return True

    async def mailbox(self) -> None:
        """Run turns in mailbox order until a close or a suspend is asked for."""
        lifecycle = self.lifecycle
        while True:
            while not self.inbox or lifecycle.stopping:
                if lifecycle.stopping:
                    return
                self.wake = anyio.Event()
                await self.wake.wait()
            slot, message = self.inbox.pop()
            self.current = slot
            telemetry = self.telemetry
            if telemetry is None:
                turn = await self.turn(slot, message)
            else:
                session_id, parent_id, depth = self.session
                origin = message.origin if message is not None else None
                with telemetry.turn(
                    self.provider,
                    session_id=session_id,
                    parent_id=parent_id,
                    depth=depth,
                    origin=origin,
                    context=slot.trace,
                ) as span:
                    turn = await self.turn(slot, message)
                    span.outcome(slot.outcome)
            closing = lifecycle.state is SessionState.CLOSING
            after = self.config.extract_memory or self.between.mood is not None
            if turn is not None and after and not closing:
                # What this turn added (compaction may have shortened the history meanwhile).
                await self.between.extract(turn, self.added, slot.trace)
            self.current = None  # idle only now: the extraction belongs to the turn

    async def repair(self, open_turn: int | None) -> None:
        """Make a reopened history valid: every tool call without a result (the process
        died during it, or a journal line was lost) gets a synthetic one right after its
        call, journaled; a turn the process died in (``open_turn``) ends ``interrupted``."""
        turn = open_turn if open_turn is not None else self.count
        approvals = self.approvals
        # A held call whose decision is awaited or not yet applied waits on; one approved
        # and started before the stop is answered ``interrupted`` (it never runs twice).
        held = [
            c
            for c in unanswered_calls(self.context.history)
            if c.id in approvals.asked and not approvals.lost(c.id)
        ]
        missing = [c for c in unanswered_calls(self.context.history) if c not in held]
        for call in missing:
            _log.debug("session.call_repaired", tool=call.name, call_id=call.id, turn=turn)
            synthetic = interrupted_by_crash(call)
            record = MessageRecord(turn=turn, message=synthetic)
            position = await self.recorder.commit(record)
            self.context.place(synthetic)  # where replaying the journal puts it, too
            self.hub.announce(record, position)  # (journaled: told, as every message is)
            approvals.answered(call.id)
        if held:  # the turn goes on once its calls are decided, before any other input
            self.inbox.resume(turn)
        if missing and open_turn is None:
            _log.warning(
                "session.history_repaired",
                unanswered_calls=len(missing),
                reason="tool results missing from the journal",
            )
        if open_turn is not None and not held:
            end = TurnEndRecord(outcome=TurnOutcome(turn=turn, status=TurnStatus.INTERRUPTED))
            position = await self.recorder.commit(end)
            await self.recorder.sync()
            self.hub.announce(end, position)
            _log.warning("session.crashed_turn_closed", turn=turn)
        elif missing:
            await self.recorder.sync()

    async def turn(self, slot: TurnSlot, message: UserMessage | None) -> int | None:
        """Run one turn; its number if it ran (``None``: the turn budget refused it, or a
        suspend came while it waited for a person)."""
        limit = self.config.max_turns
        if slot.resume is not None:
            return await self.resumed(slot, slot.resume)
        if limit is not None and self.count >= limit:
            outcome = TurnOutcome(
                turn=self.count,
                status=TurnStatus.BUDGET_EXHAUSTED,
                error=ErrorInfo(
                    type="TurnBudgetExhausted",
                    message=f"this Session answers at most {limit} turns",
                ),
                input_id=message.id if message else None,
            )
            end = TurnEndRecord(outcome=outcome)
            position = await self.recorder.commit(end)  # it consumes the input
            _oplog.turn_done(outcome, rounds=0, messages=(), started=time.perf_counter())
            self.hub.announce(end, position)
            slot.resolve(outcome)
            return None
        self.count += 1
        turn = self.count
        self.added = [message] if message is not None else []
        start: InputRecord | TurnStartRecord
        if message is not None:
            start = InputRecord(turn=turn, message=message)
            position = await self.recorder.commit(start)
            self.context.append(message)
            self.transcript.add(turn, message)
        else:
            start = TurnStartRecord(turn=turn)
            position = await self.recorder.commit(start)
        self.hub.announce(start, position)
        self.spending.begin_turn()
        started = time.perf_counter()
        await self.between.compact_if_needed("proactive")
        result = await self.run_query(turn)
        usage, rounds = result.usage, result.rounds
        too_long = (
            self.config.compaction
            and result.error is not None
            and result.error.type == "ContextTooLongError"
        )
        if too_long and await self.between.compact("context_too_long"):
            result = await self.run_query(turn)
            usage, rounds = usage + result.usage, rounds + result.rounds
        origin = message.origin if message is not None else "user"
        return await self.finish(slot, turn, result, usage, rounds, started, origin)

    async def resumed(self, slot: TurnSlot, turn: int) -> int | None:
        """A turn a reopened Session found waiting for a person: it goes on waiting."""
        self.added = []
        self.spending.begin_turn()
        held = QueryResult(
            query_id="", stop_reason=StopReason.AWAITING_APPROVAL, pending=self.approvals.held()
        )
        origin = self.approvals.asked_by()
        return await self.finish(slot, turn, held, Usage(), 0, time.perf_counter(), origin)

    async def finish(
        self,
        slot: TurnSlot,
        turn: int,
        result: QueryResult,
        usage: Usage,
        rounds: int,
        started: float,
        origin: Origin,
    ) -> int | None:
        """Wait for any held calls, then end the turn (journal first, then tell)."""
        message = slot.input
        result, more, extra = await self.approvals.carry(
            turn, origin, result, self.run_query, self.telemetry
        )
        usage, rounds = usage + more, rounds + extra
        if result.stop_reason is StopReason.AWAITING_APPROVAL:
            if self.lifecycle.state is SessionState.SUSPENDING:  # suspended while it waits
                self.spending.spend(usage, "turn_before_approval")
                input_id = message.id if message else None
                status = TurnStatus.AWAITING_APPROVAL
                slot.resolve(TurnOutcome(turn=turn, status=status, input_id=input_id))
                return None
            for call in result.pending:  # closed or cancelled while it waited: never run
                answer = not_decided(call)
                await self.recorder.commit(MessageRecord(turn=turn, message=answer))
                self.context.place(answer)
                self.transcript.add(turn, answer)
                self.added.append(answer)
                self.approvals.answered(call.id)
            result = msgspec.structs.replace(result, stop_reason=StopReason.CANCELLED, pending=())
        usage = Usage() + usage + self.spending.children
        outcome = TurnOutcome(
            turn=turn,
            status=_STATUS[result.stop_reason],
            text=result.text,
            usage=usage,
            error=result.error,
            input_id=message.id if message else None,
        )
        self.spending.turn_ended(usage)
        end = TurnEndRecord(outcome=outcome)
        position = await self.recorder.commit(end)
        await self.recorder.sync_turn()
        _oplog.turn_done(outcome, rounds=rounds, messages=self.added, started=started)
        self.hub.announce(end, position)
        slot.resolve(outcome)
        return turn

    async def run_query(
        self, turn: int, decisions: Mapping[str, ApprovalDecision] | None = None
    ) -> QueryResult:
        messages, before = self.context.request()
        token = self.token = CancelToken()
        if self.lifecycle.state is SessionState.CLOSING:
            token.cancel()
        sink = Sink(
            turn,
            clock=self.clock,
            recorder=self.recorder,
            context=self.context,
            transcript=self.transcript,
            added=self.added,
            hub=self.hub,
            approvals=self.approvals,
        )
        try:
            result = await self.query.run(messages, channel=sink, cancel=token, decisions=decisions)
        finally:
            self.token = None
        if result.last_prompt_tokens:
            # The last request held the input and everything this Query produced before
            # its final assistant message.
            chars = before + sum(map(message_chars, result.messages[:-1]))
            self.context.calibrate(result.last_prompt_tokens, chars)
        return result
