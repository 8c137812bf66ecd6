"""A Session's state objects and the steps over them, wired once.

``Parts`` makes the Session's explicit state — ``Lifecycle``, ``Context``,
``Spending``, ``Candidates``, the ``Inbox``, the ``Recorder`` and the event
``Hub`` — and hands each step (``Turns``, ``Between``, ``Ending``) the objects
it needs. It runs the Session's task; the ``Session`` class is the public shell
in front of it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
import anyio.abc

from xai._files import is_disk_full
from xai.events import SessionEvent, SessionFailed
from xai.exceptions import ApprovalPendingError, SessionClosedError
from xai.logs import bind_ids, get_logger
from xai.messages import CloseReason, ErrorInfo, TurnOutcome, TurnStatus, Usage
from xai.providers import Provider
from xai.query import Query
from xai.session import _oplog
from xai.session._announce import SessionHub
from xai.session._approvals import Approvals
from xai.session._between import Between
from xai.session._candidates import Candidates
from xai.session._closing import Ending
from xai.session._context import Context
from xai.session._delegation import Child, SessionContext, delegate_tool
from xai.session._inbox import Inbox
from xai.session._journal import JournalState, now
from xai.session._lifecycle import Lifecycle, SessionState
from xai.session._mood import SessionMood
from xai.session._observers import EventCallback, OverflowPolicy, Subscription, pump
from xai.session._prompt import SystemPrompt
from xai.session._recorder import Recorder
from xai.session._records import HeaderRecord
from xai.session._transcript import Transcript
from xai.session._turns import Turns
from xai.session._types import FinalizingHook, SessionConfig, TurnSlot
from xai.session._usage import Spending
from xai.tools import ToolSet

if TYPE_CHECKING:
    from xai.telemetry import Telemetry

__all__ = ["Parts"]

_log = get_logger("xai.session._session")  # the Session's own lines

_PUMP_GRACE = 5.0


class Parts:
    """Everything one Session holds, and its task."""

    __slots__ = (
        "approvals",
        "between",
        "candidates",
        "context",
        "ending",
        "event_buffer",
        "hub",
        "inbox",
        "lifecycle",
        "mood",
        "recorder",
        "requeued",
        "restored",
        "spending",
        "task_group",
        "tools",
        "transcript",
        "turns",
        "while_waiting",
    )

    def __init__(
        self,
        *,
        ids: tuple[str, str | None, int],
        config: SessionConfig,
        provider: Provider,
        tools: ToolSet,
        tool_deps: Any,
        spawn: Callable[[str], Awaitable[tuple[Child, bool]]],
        system: SystemPrompt,
        directory: Path | None,
        hooks: list[FinalizingHook],
        telemetry: Telemetry | None,
        clock: Callable[[], float],
        state: JournalState | None,
    ) -> None:
        session_id, parent_id, depth = ids
        self.restored = state
        self.event_buffer = config.event_buffer
        # (reopened: the records before its journal's end are its last life's to announce)
        self.hub = SessionHub(
            session_id, state.totals.journal_bytes if state and state.totals else 0
        )
        self.inbox = inbox = Inbox()
        self.lifecycle = lifecycle = Lifecycle(f"session {session_id}")
        self.task_group: anyio.abc.TaskGroup | None = None

        def header() -> HeaderRecord:  # written when the journal is first opened
            return HeaderRecord(
                session_id=session_id,
                created_at=now(),
                system=system,
                parent_id=parent_id,
                depth=depth,
            )

        self.recorder = recorder = Recorder(
            directory,
            config.fsync,
            header,
            exists=state is not None,
            unclosed=state.closing if state is not None else None,
            totals=state.totals.copy() if state is not None and state.totals else None,
        )
        self.spending = spending = Spending(recorder, state.usage if state else Usage())
        self.candidates = candidates = Candidates(
            state.candidates if state else (), state.reported if state else ()
        )
        self.context = context = Context(
            system, state.history if state else (), state.summary if state else ""
        )
        self.mood = mood = (
            None
            if system.mood is None
            else SessionMood(
                system.mood,
                state.mood if state else (),
                state.mood_turns if state else (),
                context=context,
                recorder=recorder,
                hub=self.hub,
                clock=clock,
            )
        )
        self.transcript = transcript = Transcript(
            session_id,
            state.header.created_at if state else clock(),
            state.episodes if state else None,
        )
        # Accepted before the restart and never started: they run first, in order.
        self.requeued: tuple[TurnSlot, ...] = ()
        if state is not None and state.closing is None:
            self.requeued = inbox.requeue(state.pending)
        tool_context = SessionContext(
            session_id=session_id,
            depth=depth,
            max_depth=config.max_delegation_depth,
            spawn=spawn,
            on_child_usage=spending.add_child,
            deps=tool_deps,
            watch=self.watch,
        )
        extra = [delegate_tool] if config.delegation else []
        self.tools = tools.derive(context=tool_context, extra=extra)
        self.while_waiting = config.while_waiting
        self.approvals = approvals = Approvals(
            session_id=session_id,
            config=config,
            tools=self.tools,
            lifecycle=lifecycle,
            recorder=recorder,
            hub=self.hub,
            clock=clock,
            restored=(state.approvals, state.decisions, state.tools_started) if state else None,
        )
        self.between = between = Between(
            session_id=session_id,
            config=config,
            provider=provider,
            telemetry=telemetry,
            context=context,
            spending=spending,
            candidates=candidates,
            recorder=recorder,
            hub=self.hub,
            mood=mood,
        )
        self.turns = Turns(
            session=ids,
            count=state.turns if state else 0,
            config=config,
            provider=provider,
            query=Query(provider, tools=self.tools, config=config.query, telemetry=telemetry),
            telemetry=telemetry,
            clock=clock,
            lifecycle=lifecycle,
            inbox=inbox,
            context=context,
            transcript=transcript,
            spending=spending,
            recorder=recorder,
            hub=self.hub,
            between=between,
            approvals=approvals,
        )
        self.ending = Ending(
            session_id=session_id,
            parent_id=parent_id,
            hooks=hooks,
            hook_timeout=config.hook_timeout,
            lifecycle=lifecycle,
            inbox=inbox,
            recorder=recorder,
            hub=self.hub,
            candidates=candidates,
            transcript=transcript,
            spending=spending,
            mood=mood,
        )

    def watch(self, child: Child) -> Callable[[], None]:
        """A delegated helper's held calls surface at this Session until the call returned."""
        release = self.approvals.adopt(child.approvals)
        listen = getattr(child, "listen", None)
        stop = listen(self.approvals.relay) if listen is not None else None

        def unwatch() -> None:
            release()
            if stop is not None:
                stop()

        return unwatch

    def check_accepting(self) -> None:
        """``SessionClosedError`` unless the Session accepts input now."""
        state, actor = self.lifecycle.state, self.lifecycle.actor
        if state in (SessionState.CLOSING, SessionState.CLOSED):
            raise SessionClosedError(f"{actor} is closing or closed")
        if state in (SessionState.SUSPENDING, SessionState.SUSPENDED):
            raise SessionClosedError(f"{actor} is suspended: reopen it (its journal) to send to it")
        if state is SessionState.WAITING and self.while_waiting == "reject":
            raise ApprovalPendingError(
                f"{actor} waits for a decision on {len(self.approvals.pending())} tool call(s)"
            )
        if self.recorder.unclosed is not None:
            raise SessionClosedError(
                f"{actor} was closing when it stopped: close() it to hand its memory "
                "candidates to the owner"
            )

    def undecided(self) -> int:
        """Unacknowledged candidates, plus one while a turn (and its extraction) runs."""
        return len(self.candidates.unacknowledged()) + int(self.turns.current is not None)

    def acknowledge(self, candidate_ids: Iterable[str]) -> None:
        ids = self.candidates.acknowledge(candidate_ids)
        if ids:
            waiting = len(self.candidates.unacknowledged())
            closed = self.lifecycle.state is SessionState.CLOSED
            self.recorder.acknowledged(ids, waiting=waiting, closed=closed)

    def subscribe(self, buffer: int | None, overflow: OverflowPolicy) -> Subscription[SessionEvent]:
        capacity = self.event_buffer if buffer is None else buffer
        subscription = self.hub.subscribe(capacity, overflow)
        if self.lifecycle.over:
            subscription.end()
        return subscription

    def pump(
        self, owner: object, callback: EventCallback, buffer: int | None, overflow: OverflowPolicy
    ) -> Subscription[SessionEvent]:
        """A subscription fed to ``callback`` from a task of the Session's own."""
        group = self.task_group
        if group is None or self.lifecycle.over:
            raise SessionClosedError(
                f"{self.lifecycle.actor} is not running: callbacks need a running Session"
            )
        subscription = self.subscribe(buffer, overflow)
        group.start_soon(pump, owner, subscription, callback)
        return subscription

    def close(self, reason: CloseReason, *, cancel_running: bool) -> bool:
        """Begin the close; True when there is a task to wait for (it finalises)."""
        lifecycle = self.lifecycle
        state = lifecycle.state
        if state in (SessionState.SUSPENDING, SessionState.SUSPENDED):
            raise SessionClosedError(f"{lifecycle.actor} is suspended: reopen it to close it")
        if state is SessionState.NEW:
            self._close_unstarted(reason)
            return False
        if lifecycle.live:
            lifecycle.closing(reason)
            if cancel_running:
                self.turns.cancel()
            self.turns.wake_up()
            self.approvals.wake()
        return True

    def _close_unstarted(self, reason: CloseReason) -> None:
        """A journal that exists says its queued inputs are dropped, and, since no hook ran,
        that it is closed only if no candidate waits for the owner."""
        self.lifecycle.transition(SessionState.CLOSED)
        recorder = self.recorder
        journal = recorder.open() if recorder.exists else None
        self.inbox.drop(self.turns.count, journal)
        if journal is not None:
            waiting = len(self.candidates.unacknowledged())
            recorder.last_word(reason, waiting=waiting, hooks_took_all=False)
            recorder.close()
        self.hub.end()

    def begin_suspend(self) -> None:
        lifecycle = self.lifecycle
        state = lifecycle.state
        if state in (SessionState.CLOSING, SessionState.CLOSED):
            raise SessionClosedError(f"{lifecycle.actor} is closing or closed")
        if state is SessionState.NEW:
            raise SessionClosedError(f"{lifecycle.actor} is not running: nothing to suspend")
        if lifecycle.live:
            lifecycle.transition(SessionState.SUSPENDING)
            self.turns.wake_up()
            self.approvals.wake()

    async def wait_closed(self, *, from_callback: bool) -> None:
        """Wait until the task has finalised (``from_callback``: one of the Session's own
        callbacks waits, so not for the callbacks to drain) or has returned."""
        event = self.lifecycle.ended if from_callback else self.lifecycle.finished
        if event is not None:
            await event.wait()

    async def run(
        self, task_status: anyio.abc.TaskStatus[None], *, session_id: str, durable: bool
    ) -> None:
        """The Session's task, from start to finish."""
        if self.lifecycle.state is not SessionState.NEW:
            raise SessionClosedError(f"{self.lifecycle.actor} has already run")
        self.lifecycle.start()
        try:
            # MCP tool sources nobody opened yet are this Session's: started before it
            # reports started (a failure is raised to the opener), stopped after it finalised.
            async with self.tools.open():  # its own tools too: `delegate` is one
                await self._run(task_status, session_id=session_id, durable=durable)
        finally:
            self.lifecycle.set_finished()

    def _stop_turn(self, turns: Turns) -> None:
        """The running turn's handle ends ``error`` (not journaled: resumed as an open turn)."""
        current, turns.current = turns.current, None
        if current is not None:
            input_id = current.input.id if current.input else None
            current.resolve(
                TurnOutcome(turn=turns.count, status=TurnStatus.ERROR, input_id=input_id)
            )
        if self.lifecycle.live:
            self.lifecycle.transition(SessionState.SUSPENDING)

    async def _run(
        self, task_status: anyio.abc.TaskStatus[None], *, session_id: str, durable: bool
    ) -> None:
        """The Session's task: repair a reopened history, run the mailbox, then finalise (or
        end suspended)."""
        lifecycle, turns = self.lifecycle, self.turns
        with bind_ids(session_id=session_id):
            self.recorder.open()  # a failure (a full disk) is the opener's, as itself
            async with anyio.create_task_group() as group:
                self.task_group = group
                task_status.started()
                restored = self.restored
                ids = turns.session
                _oplog.opened(
                    parent_id=ids[1],
                    depth=ids[2],
                    resumed=restored is not None,
                    turns=turns.count,
                    durable=durable,
                )
                suspended = False
                try:
                    if restored is not None:
                        await turns.repair(restored.open_turn)
                        if self.mood is not None:  # a turn's mood the process died before
                            await self.mood.catch_up(
                                (t.turn, [t.input, *t.messages] if t.input else t.messages)
                                for t in restored.turn_log
                                if t.outcome is not None and restored.closing is None
                            )
                    await turns.mailbox()
                    suspended = lifecycle.state is SessionState.SUSPENDING
                except anyio.get_cancelled_exc_class():
                    lifecycle.close_reason = "cancelled"
                    raise
                except Exception as exc:  # a bug or the disk: close cleanly, say why
                    error = ErrorInfo.from_exception(exc)
                    if is_disk_full(exc):
                        # Nothing more can be journaled: stop as if suspended (the journal
                        # is a clean prefix), to be resumed as it was once there is room.
                        _log.error("session.stopped_disk_full", error=str(exc))
                        self.hub.publish(SessionFailed(error=error, stage="journal", fatal=True))
                        self._stop_turn(turns)
                        suspended = True
                    else:
                        _log.exception("session.crashed")
                        lifecycle.close_reason = "error"
                        self.hub.publish(SessionFailed(error=error, stage="mailbox", fatal=True))
                finally:
                    if suspended:
                        self.ending.suspended(turns.count)
                    else:
                        with anyio.CancelScope(shield=True):
                            await self.ending.finalise(turns.count, turns.current)
                    # Callback pumps drain what is buffered, then end; a stuck one is
                    # cancelled after a grace period.
                    group.cancel_scope.deadline = anyio.current_time() + _PUMP_GRACE
