"""The Session actor: one conversation, one mailbox, one task, at most one Query at a time.

All state changes happen in the Session's own task, in mailbox order, so there
is nothing to lock. Between Queries, and only there, the Session compacts its
history and extracts memory candidates. What it announces as final is in its
journal first.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import anyio
import anyio.abc
import msgspec

from xai import _actor
from xai.events import (
    CompactionReason,
    SessionEvent,
    SessionFailed,
    TurnDone,
    TurnStarted,
)
from xai.exceptions import SessionClosedError
from xai.logs import bind_ids, get_logger
from xai.messages import (
    AssistantMessage,
    CloseReason,
    ErrorInfo,
    MemoryCandidate,
    Message,
    Origin,
    QueryResult,
    StopReason,
    SystemMessage,
    TurnOutcome,
    TurnStatus,
    Usage,
    UserMessage,
    new_id,
)
from xai.providers import Provider
from xai.query import CancelToken, Query
from xai.session import _oplog
from xai.session._between import compact, extract
from xai.session._closing import end_suspended, finalise
from xai.session._compaction import Calibration, message_chars
from xai.session._delegation import HELPER_INSTRUCTIONS, SessionContext, delegate_tool
from xai.session._history import interrupted_by_crash, place, unanswered_calls
from xai.session._inbox import Inbox
from xai.session._journal import (
    JOURNAL_FILE,
    HeaderRecord,
    InputRecord,
    JournalState,
    MessageRecord,
    TurnEndRecord,
    TurnStartRecord,
    UsageRecord,
    now,
    read_journal,
)
from xai.session._observers import (
    EventCallback,
    Hub,
    OverflowPolicy,
    Subscription,
    pump,
    pumping,
)
from xai.session._prompt import SystemPrompt
from xai.session._recorder import Recorder
from xai.session._sink import Sink
from xai.session._transcript import Transcript
from xai.session._types import (
    ChildFactory,
    FinalizingContext,
    FinalizingHook,
    InputPolicy,
    SessionConfig,
    TurnHandle,
)
from xai.tools import Tool, ToolSet

if TYPE_CHECKING:
    from xai.telemetry import Telemetry

__all__ = [
    "ChildFactory",
    "FinalizingContext",
    "FinalizingHook",
    "InputPolicy",
    "Session",
    "SessionConfig",
    "TurnHandle",
]

_log = get_logger(__name__)

_PUMP_GRACE = 5.0

_STATUS = {
    StopReason.END_TURN: TurnStatus.COMPLETED,
    StopReason.LENGTH: TurnStatus.LENGTH,
    StopReason.CONTENT_FILTER: TurnStatus.CONTENT_FILTER,
    StopReason.MAX_ROUNDS: TurnStatus.BUDGET_EXHAUSTED,
    StopReason.CANCELLED: TurnStatus.CANCELLED,
    StopReason.ERROR: TurnStatus.ERROR,
}


class Session:
    """A conversation actor. Use ``async with Session(...) as session`` or run it in your
    own task group with ``await task_group.start(session.run)``.

    ``send`` queues an input (or interrupts the running turn) and returns a
    handle for the outcome. Observe with ``events()`` (async iteration),
    ``subscribe()`` or ``on(callback)``. ``directory`` makes it durable: a
    journal there lets ``Session.reopen`` continue after a crash. ``telemetry`` traces
    its turns, requests and tool calls (docs/telemetry.md); its children get it too;
    ``clock`` (default ``time.time``) stamps when inputs and answers were said."""

    def __init__(
        self,
        provider: Provider,
        *,
        tools: ToolSet | Iterable[Tool | Callable[..., Any]] | None = None,
        config: SessionConfig | None = None,
        system: SystemPrompt | str | None = None,
        directory: str | Path | None = None,
        session_id: str | None = None,
        parent_id: str | None = None,
        depth: int = 0,
        tool_deps: Any = None,
        child_factory: ChildFactory | None = None,
        telemetry: Telemetry | None = None,
        clock: Callable[[], float] = time.time,
        _state: JournalState | None = None,
    ) -> None:
        self.clock = clock
        self.config = config if config is not None else SessionConfig()
        self.id = session_id or (_state.header.session_id if _state else new_id())
        self.parent_id = parent_id if _state is None else _state.header.parent_id
        self.depth = depth
        if isinstance(system, str):
            system = SystemPrompt(instructions=system)
        if system is None:
            system = _state.header.system if _state is not None else SystemPrompt()
        self.system = system
        self.directory = Path(directory) if directory is not None else None
        self.on_session_finalizing: list[FinalizingHook] = []
        self._provider = provider
        self._child_factory = child_factory
        self._base_tools = tools if isinstance(tools, ToolSet) else ToolSet(tools or ())
        if tool_deps is None and self._base_tools.context is not None:
            # A ToolSet's own context stays reachable: SessionContext.deps carries it.
            tool_deps = self._base_tools.context
        extra = [delegate_tool] if self.config.delegation else []
        self._tools = self._base_tools.derive(context=SessionContext(self, tool_deps), extra=extra)
        self._telemetry = telemetry
        self._query = Query(
            provider, tools=self._tools, config=self.config.query, telemetry=telemetry
        )
        session_id = self.id
        self._hub: Hub[SessionEvent] = Hub(lambda seq, body: SessionEvent(session_id, seq, body))
        self._inbox = Inbox()
        self._wake: anyio.Event | None = None
        self._cancel: CancelToken | None = None
        self._recorder = Recorder(
            self.directory,
            self.config.fsync,
            self._header,
            exists=_state is not None,
            unclosed=_state.closing if _state else None,
        )
        self._calibration = Calibration()
        self._task_group: anyio.abc.TaskGroup | None = None
        self._outer: anyio.abc.TaskGroup | None = None
        self._child_usage = Usage()
        self._turn_messages: list[Message] = []
        self._current: TurnHandle | None = None
        self._closing = False
        self._suspending = False
        self._close_reason: CloseReason = "closed"
        self._closed: anyio.Event | None = None  # made in run(): needs the event loop
        self._finished: anyio.Event | None = None
        self._state: Literal["new", "running", "closing", "closed", "suspended"] = "new"
        self._restored = _state
        self._requeued: tuple[TurnHandle, ...] = ()
        if _state is not None and _state.closing is None:
            # Accepted before the restart and never started: they run first, in order.
            self._requeued = self._inbox.requeue(_state.pending)
        self._history: list[Message] = list(_state.history) if _state else []
        self._transcript = Transcript(
            self.id,
            _state.header.created_at if _state else clock(),
            _state.episodes if _state else None,
        )
        # Kept up to date on every change, so estimating the next request is O(1).
        self._history_chars = sum(map(message_chars, self._history))
        self._system_cache: tuple[str, SystemMessage | None] | None = None
        self._summary = _state.summary if _state else ""
        self._usage = _state.usage if _state else Usage()
        self._turns = _state.turns if _state else 0
        self._candidates: list[MemoryCandidate] = list(_state.candidates) if _state else []
        self._reported: set[str] = set(_state.reported) if _state else set()

    # -- construction from disk -------------------------------------------------------

    @classmethod
    def reopen(
        cls,
        directory: str | Path,
        provider: Provider,
        *,
        tools: ToolSet | Iterable[Tool | Callable[..., Any]] | None = None,
        config: SessionConfig | None = None,
        system: SystemPrompt | str | None = None,
        tool_deps: Any = None,
        child_factory: ChildFactory | None = None,
        depth: int = 0,
        state: JournalState | None = None,
        telemetry: Telemetry | None = None,
        clock: Callable[[], float] = time.time,
    ) -> Session:
        """Rebuild a Session from its journal (history, summary, usage, candidates, inputs).

        When the Session starts, every tool call of the history left without a
        result (the process died during it, or a journal line was lost) gets a
        synthetic "interrupted" one right after its call, so the history is
        valid; finished tool calls are never run again; a turn the process died
        in ends as ``interrupted``. Use ``continue_turn()`` to let the model pick
        up where it stopped. Inputs ``send()`` accepted that never started run
        first (``requeued`` has their handles).

        A journal whose state is ``closing`` (it closed before its owner took all
        its memory candidates) runs no input: ``await session.close(state.closing)``
        hands the candidates to the finalising hooks again.

        ``state``: the journal, already read (else read here, blocking: in async code pass
        ``state=await aread_journal(directory / JOURNAL_FILE)``).
        """
        path = Path(directory)
        if state is None:
            state = read_journal(path / JOURNAL_FILE)
        return cls(
            provider,
            tools=tools,
            config=config,
            system=system,
            directory=path,
            tool_deps=tool_deps,
            child_factory=child_factory,
            depth=depth or state.header.depth,
            telemetry=telemetry,
            clock=clock,
            _state=state,
        )

    # -- read-only state -----------------------------------------------------------------

    @property
    def history(self) -> tuple[Message, ...]:
        """The conversation as the next Query will see it (after any compaction)."""
        return tuple(self._history)

    @property
    def summary(self) -> str:
        return self._summary

    @property
    def usage(self) -> Usage:
        return self._usage

    @property
    def turns(self) -> int:
        return self._turns

    @property
    def state(self) -> str:
        return self._state

    @property
    def candidates(self) -> tuple[MemoryCandidate, ...]:
        return tuple(self._candidates)

    @property
    def busy(self) -> bool:
        """True while a Query runs."""
        return self._cancel is not None

    @property
    def idle(self) -> bool:
        """True when no turn runs (nor the memory extraction after one)."""
        return self._current is None

    @property
    def pending_inputs(self) -> int:
        return len(self._inbox)

    @property
    def requeued(self) -> tuple[TurnHandle, ...]:
        """Handles of the inputs a reopen found accepted and not started (they run first)."""
        return self._requeued

    @property
    def closing_pending(self) -> bool:
        """The journal says ``closing``: the Session closed (or was reopened from such a
        journal) while candidates the owner has not acknowledged remain."""
        return self._recorder.unclosed is not None

    @property
    def undecided(self) -> int:
        """Memory candidates proposed and not yet acknowledged by the owner (its decision on
        them is pending), plus one while the extraction after a turn may still propose some."""
        return len(self._unacknowledged()) + int(self._current is not None)

    def _unacknowledged(self) -> tuple[MemoryCandidate, ...]:
        return tuple(c for c in self._candidates if c.id not in self._reported)

    @property
    def interrupted_turn(self) -> bool:
        """True if the history ends in a turn the model did not finish (e.g. after a crash)."""
        return bool(self._history) and not (
            isinstance(self._history[-1], AssistantMessage)
            and not self._history[-1].tool_calls
            and not self._history[-1].interrupted
        )

    def system_message(self) -> SystemMessage | None:
        """The system message of the next request (persona, instructions, memory, summary)."""
        cache = self._system_cache
        if cache is None or cache[0] != self._summary:
            text = self.system.render(self._summary)
            cache = self._system_cache = (
                self._summary,
                SystemMessage(content=text) if text else None,
            )
        return cache[1]

    def _append(self, message: Message) -> None:
        self._history.append(message)
        self._history_chars += message_chars(message)

    # -- observing -----------------------------------------------------------------------

    def subscribe(
        self, *, buffer: int | None = None, overflow: OverflowPolicy = "drop_oldest"
    ) -> Subscription[SessionEvent]:
        """A new subscription (async iterator of ``SessionEvent``) with its own buffer."""
        capacity = self.config.event_buffer if buffer is None else buffer
        subscription = self._hub.subscribe(capacity, overflow)
        if self._state in ("closed", "suspended"):
            subscription.end()
        return subscription

    def events(
        self, *, buffer: int | None = None, overflow: OverflowPolicy = "drop_oldest"
    ) -> Subscription[SessionEvent]:
        """``async for event in session.events(): ...`` — leaving the loop unsubscribes."""
        return self.subscribe(buffer=buffer, overflow=overflow)

    def listen(self, callback: Callable[[SessionEvent], None]) -> Callable[[], None]:
        """Call ``callback`` synchronously with every event as it is published: nothing is
        lost or late (it must be quick). Returns the way to stop; a host's replay uses it."""
        return self._hub.listen(callback)

    def on(
        self,
        callback: EventCallback,
        *,
        buffer: int | None = None,
        overflow: OverflowPolicy = "drop_oldest",
    ) -> Subscription[SessionEvent]:
        """Call ``callback`` (sync or async) with every event, from a task of its own.

        A slow callback falls behind and loses events by ``overflow``; it never
        slows the Session. Close the returned subscription to stop.
        """
        if self._task_group is None or self._state in ("closed", "suspended"):
            raise SessionClosedError(
                f"session {self.id} is not running: callbacks need a running Session"
            )
        subscription = self.subscribe(buffer=buffer, overflow=overflow)
        self._task_group.start_soon(pump, self, subscription, callback)
        return subscription

    def acknowledge_candidates(self, candidate_ids: Iterable[str]) -> None:
        """The owner took these candidates; finalising hooks will not get them again.

        Works after the close too: a Session that closed ``closing`` (its hooks did
        not take every candidate) is recorded closed once nothing is left.
        """
        ids = tuple(i for i in candidate_ids if i not in self._reported)
        if ids:
            self._reported.update(ids)
            waiting = len(self._unacknowledged())
            self._recorder.acknowledged(ids, waiting=waiting, closed=self._state == "closed")

    # -- input ---------------------------------------------------------------------------

    def send(
        self,
        input: str | UserMessage,
        *,
        origin: Origin = "user",
        policy: InputPolicy = "queue",
    ) -> TurnHandle:
        """Queue an input; ``policy="interrupt"`` cancels the running turn and goes first.

        ``origin`` records who produced the input (``user``, or ``agent`` for
        input the Agent synthesised); a ``UserMessage`` keeps its own origin.
        """
        self._check_accepting()
        message = (
            input
            if isinstance(input, UserMessage)
            else UserMessage(content=input, origin=origin, at=self.clock())
        )
        if message.at is None:
            message = msgspec.structs.replace(message, at=self.clock())
        # Accepted means on disk (opened early if the Session does not run yet).
        first = policy == "interrupt"
        handle = self._inbox.accept(message, first=first, journal=self._recorder.open())
        if self._telemetry is not None:
            handle._trace = self._telemetry.capture()
        if first:
            self.cancel()
        self._wake_up()
        return handle

    def continue_turn(self) -> TurnHandle:
        """Run the model on the history as it is (after a reopen): no new input."""
        self._check_accepting()
        handle = self._inbox.continuation()
        if self._telemetry is not None:
            handle._trace = self._telemetry.capture()
        self._wake_up()
        return handle

    def _check_accepting(self) -> None:
        if self._closing or self._state == "closed":
            raise SessionClosedError(f"session {self.id} is closing or closed")
        if self._suspending:
            raise SessionClosedError(
                f"session {self.id} is suspended: reopen it (its journal) to send to it"
            )
        if self._recorder.unclosed is not None:
            raise SessionClosedError(
                f"session {self.id} was closing when it stopped: close() it to hand its "
                "memory candidates to the owner"
            )

    def cancel(self) -> bool:
        """Cancel the running Query (if any). Returns whether one was running."""
        token = self._cancel
        if token is None:
            return False
        token.cancel()
        return True

    def _wake_up(self) -> None:
        wake = self._wake
        if wake is not None:
            self._wake = None
            wake.set()

    # -- lifecycle -----------------------------------------------------------------------

    async def __aenter__(self) -> Session:
        self._outer = await _actor.enter(self)
        return self

    async def __aexit__(self, *exc_info: Any) -> bool | None:
        reason: CloseReason = "error" if exc_info[0] is not None else "closed"
        if exc_info[0] is not None and issubclass(exc_info[0], anyio.get_cancelled_exc_class()):
            reason = "cancelled"
        return await _actor.leave(self._outer, lambda: self.close(reason), exc_info)

    async def run(
        self, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED
    ) -> None:
        """The actor's task: returns once the Session is closed and finalised."""
        if self._state != "new":
            raise SessionClosedError(f"session {self.id} has already run")
        self._closed = anyio.Event()
        self._finished = anyio.Event()
        try:
            # MCP tool sources nobody opened yet are this Session's: started before it
            # reports started (a failure is raised to the opener), stopped after it finalised.
            async with self._tools.open():  # its own tools too: `delegate` is one
                await self._run(task_status)
        finally:
            self._finished.set()

    async def _run(self, task_status: anyio.abc.TaskStatus[None]) -> None:
        assert self._closed is not None
        with bind_ids(session_id=self.id):
            async with anyio.create_task_group() as group:
                self._task_group = group
                self._recorder.open()
                self._state = "running"
                task_status.started()
                _oplog.opened(self, resumed=self._restored is not None)
                suspended = False
                try:
                    if self._restored is not None:
                        await self._repair(self._restored)
                    await self._mailbox()
                    suspended = self._suspending and not self._closing
                except anyio.get_cancelled_exc_class():
                    self._close_reason = "cancelled"
                    raise
                except Exception as exc:  # a bug or the disk: close cleanly, say why
                    _log.exception("session.crashed")
                    self._close_reason = "error"
                    self._hub.publish(
                        SessionFailed(
                            error=ErrorInfo.from_exception(exc), stage="mailbox", fatal=True
                        )
                    )
                finally:
                    if suspended:
                        end_suspended(self)
                    else:
                        with anyio.CancelScope(shield=True):
                            await finalise(self)
                    # Callback pumps drain what is buffered, then end; a stuck one is
                    # cancelled after a grace period.
                    group.cancel_scope.deadline = anyio.current_time() + _PUMP_GRACE

    async def close(self, reason: CloseReason = "closed", *, cancel_running: bool = True) -> None:
        """Close: drop queued inputs, cancel the running turn (unless told not to), run the
        ``on_session_finalizing`` hooks, write the journal's last record, end every
        subscription. Waits until all of that is done. Idempotent.

        A suspended Session is not closed here: reopen its journal, then close it."""
        if self._state == "suspended" or (self._suspending and not self._closing):
            raise SessionClosedError(f"session {self.id} is suspended: reopen it to close it")
        if self._state == "new":
            self._state = "closed"
            recorder = self._recorder
            # A journal that exists says its queued inputs are dropped, and, since no hook
            # ran, that it is closed only if no candidate waits for the owner.
            journal = recorder.open() if recorder.exists else None
            self._inbox.drop(self._turns, journal)
            if journal is not None:
                waiting = len(self._unacknowledged())
                recorder.last_word(reason, waiting=waiting, hooks_took_all=False)
                recorder.close()
            self._hub.end()
            return
        if not self._closing:
            self._closing = True
            self._close_reason = reason
            if cancel_running:
                self.cancel()
            self._wake_up()
        await self.wait_closed()

    def begin_suspend(self) -> None:
        """The synchronous half of ``suspend``: from now on no turn starts and no input is
        accepted; the running turn (if any) finishes, then the task ends."""
        if self._state in ("closing", "closed") or self._closing:
            raise SessionClosedError(f"session {self.id} is closing or closed")
        if self._state == "new":
            raise SessionClosedError(f"session {self.id} is not running: nothing to suspend")
        if not self._suspending:
            self._suspending = True
            self._wake_up()

    async def suspend(self) -> None:
        """Stop the Session's task WITHOUT closing it: no finalising hooks, no ``closed``
        record, its journal left open-ended, so ``Session.reopen`` (an Agent's next start)
        brings it back exactly as it was, with the same id.

        Waits for the running turn (and the memory extraction after it), if any, to end;
        no turn starts after the call. Inputs accepted and not started stay accepted in
        the journal and run after the reopen (their handles here resolve ``interrupted``,
        with the error ``SessionSuspended``). Unacknowledged memory candidates stay in the
        journal; an acknowledgement that comes later is appended to it. Idempotent."""
        if self._state == "suspended":
            return
        self.begin_suspend()
        await self.wait_closed()

    async def wait_closed(self) -> None:
        """Wait until the Session is finalised and its callbacks have seen every event."""
        if pumping() is self:
            # Called from one of this Session's own callbacks: waiting for the
            # callbacks to drain would wait for ourselves.
            if self._closed is not None:
                await self._closed.wait()
        elif self._finished is not None:
            await self._finished.wait()

    # -- the mailbox -----------------------------------------------------------------------

    async def _mailbox(self) -> None:
        while True:
            while not self._inbox or self._closing or self._suspending:
                if self._closing or self._suspending:
                    return
                self._wake = anyio.Event()
                await self._wake.wait()
            handle, message = self._inbox.pop()
            self._current = handle
            telemetry = self._telemetry
            if telemetry is None:
                turn = await self._turn(handle, message)
            else:
                origin = message.origin if message is not None else None
                with telemetry.turn(
                    self._provider,
                    session_id=self.id,
                    parent_id=self.parent_id,
                    depth=self.depth,
                    origin=origin,
                    context=handle._trace,
                ) as span:
                    turn = await self._turn(handle, message)
                    span.outcome(handle.outcome)
            if turn is not None and self.config.extract_memory and not self._closing:
                # What this turn added (compaction may have shortened the history meanwhile).
                await extract(self, turn, self._turn_messages, handle._trace)
            self._current = None  # idle only now: the extraction belongs to the turn

    def _header(self) -> HeaderRecord:
        return HeaderRecord(
            session_id=self.id,
            created_at=now(),
            system=self.system,
            parent_id=self.parent_id,
            depth=self.depth,
        )

    async def _repair(self, restored: JournalState) -> None:
        """Make the reopened history valid: every tool call without a result (the process
        died during it, or a journal line was lost) gets a synthetic one right after its
        call, journaled; a turn the process died in ends as ``interrupted``."""
        turn = restored.open_turn if restored.open_turn is not None else self._turns
        missing = unanswered_calls(self._history)
        for call in missing:
            _log.debug("session.call_repaired", tool=call.name, call_id=call.id, turn=turn)
            synthetic = interrupted_by_crash(call)
            await self._recorder.commit(MessageRecord(turn=turn, message=synthetic))
            place(self._history, synthetic)  # where replaying the journal puts it, too
            self._history_chars += message_chars(synthetic)
        if missing and restored.open_turn is None:
            _log.warning(
                "session.history_repaired",
                unanswered_calls=len(missing),
                reason="tool results missing from the journal",
            )
        if restored.open_turn is not None:
            outcome = TurnOutcome(turn=turn, status=TurnStatus.INTERRUPTED)
            await self._recorder.commit(TurnEndRecord(outcome=outcome))
            await self._recorder.sync()
            self._hub.publish(TurnDone(outcome=outcome))
            _log.warning("session.crashed_turn_closed", turn=turn)
        elif missing:
            await self._recorder.sync()

    async def _turn(self, handle: TurnHandle, message: UserMessage | None) -> int | None:
        """Run one turn; its number if it ran (``None``: the turn budget refused it)."""
        limit = self.config.max_turns
        if limit is not None and self._turns >= limit:
            outcome = TurnOutcome(
                turn=self._turns,
                status=TurnStatus.BUDGET_EXHAUSTED,
                error=ErrorInfo(
                    type="TurnBudgetExhausted",
                    message=f"this Session answers at most {limit} turns",
                ),
                input_id=message.id if message else None,
            )
            await self._recorder.commit(TurnEndRecord(outcome=outcome))  # it consumes the input
            _oplog.turn_done(outcome, rounds=0, messages=(), started=time.perf_counter())
            self._hub.publish(TurnDone(outcome=outcome))
            handle._resolve(outcome)
            return None
        self._turns += 1
        turn = self._turns
        self._turn_messages = [message] if message is not None else []
        if message is not None:
            await self._recorder.commit(InputRecord(turn=turn, message=message))
            self._append(message)
            self._transcript.add(turn, message)
        else:
            await self._recorder.commit(TurnStartRecord(turn=turn))
        self._hub.publish(TurnStarted(turn=turn, input=message))
        self._child_usage = Usage()
        usage = Usage()
        started = time.perf_counter()
        await self._compact_if_needed("proactive")
        result = await self._run_query(turn)
        usage, rounds = usage + result.usage, result.rounds
        too_long = (
            self.config.compaction
            and result.error is not None
            and result.error.type == "ContextTooLongError"
        )
        if too_long and await compact(self, "context_too_long"):
            result = await self._run_query(turn)
            usage, rounds = usage + result.usage, rounds + result.rounds
        usage = usage + self._child_usage
        outcome = TurnOutcome(
            turn=turn,
            status=_STATUS[result.stop_reason],
            text=result.text,
            usage=usage,
            error=result.error,
            input_id=message.id if message else None,
        )
        self._usage = self._usage + usage
        await self._recorder.commit(TurnEndRecord(outcome=outcome))
        await self._recorder.sync_turn()
        _oplog.turn_done(outcome, rounds=rounds, messages=self._turn_messages, started=started)
        self._hub.publish(TurnDone(outcome=outcome))
        handle._resolve(outcome)
        return turn

    async def _run_query(self, turn: int) -> QueryResult:
        system = self.system_message()
        messages = [system, *self._history] if system is not None else list(self._history)
        before = self._history_chars + (message_chars(system) if system is not None else 0)
        token = self._cancel = CancelToken()
        if self._closing:
            token.cancel()
        try:
            result = await self._query.run(messages, channel=Sink(self, turn), cancel=token)
        finally:
            self._cancel = None
        if result.last_prompt_tokens:
            # The last request held the input and everything this Query produced before
            # its final assistant message.
            chars = before + sum(map(message_chars, result.messages[:-1]))
            self._calibration.update(result.last_prompt_tokens, chars)
        return result

    # -- between Queries -----------------------------------------------------------------------

    def estimated_tokens(self) -> int:
        """Estimated prompt tokens of the next request."""
        system = self.system_message()
        chars = self._history_chars + (message_chars(system) if system else 0)
        return self._calibration.tokens(chars)

    async def _compact_if_needed(self, reason: CompactionReason) -> None:
        if not self.config.compaction:
            return
        if self.estimated_tokens() > self.config.context_window * self.config.compact_at:
            await compact(self, reason)

    # -- children ------------------------------------------------------------------------------

    def _spend(self, usage: Usage, purpose: str) -> None:
        """Usage of the Session's own requests (summaries, extraction), outside any turn."""
        if usage.requests:
            self._usage = self._usage + usage
            self._recorder.write(UsageRecord(usage=usage, purpose=purpose))

    def _add_child_usage(self, usage: Usage) -> None:
        self._child_usage = self._child_usage + usage

    async def _spawn_child(self, task: str) -> tuple[Session, bool]:
        """A running child Session; ``True`` when this Session owns (and must close) it."""
        if self._child_factory is not None:
            return await self._child_factory(self, task), False
        assert self._task_group is not None
        child_id = new_id()
        child = Session(
            self._provider,
            tools=self._base_tools,
            config=self.config,
            system=SystemPrompt(instructions=HELPER_INSTRUCTIONS, persona=self.system.persona),
            directory=self.directory / "children" / child_id if self.directory else None,
            session_id=child_id,
            parent_id=self.id,
            depth=self.depth + 1,
            tool_deps=self._tools.context.deps if self._tools.context else None,
            telemetry=self._telemetry,
        )
        await self._task_group.start(child.run)
        return child, True

    # -- the end -------------------------------------------------------------------------------

    def __repr__(self) -> str:
        return f"Session(id={self.id!r}, state={self._state!r}, turns={self._turns})"
