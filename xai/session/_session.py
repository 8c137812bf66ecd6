"""The Session actor: one conversation, one mailbox, one task, at most one Query at a time.

``Session`` is the public shell over explicit state, made and wired by ``Parts``:
its lifecycle (``Lifecycle``), its context (history, summary, calibration), its
usage (``Spending``), its memory candidates (``Candidates``), its inbox, journal
recorder and event hub. The steps that act on that state — the turns (``Turns``),
compaction and extraction (``Between``), the end of the task (``Ending``) — receive
the objects they need, never the Session. All state changes happen in the
Session's own task, in mailbox order, so there is nothing to lock.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeAlias

import anyio
import anyio.abc
import msgspec
from anyio import AsyncContextManagerMixin

from xai import _actor
from xai.events import SessionEvent
from xai.messages import (
    CloseReason,
    MemoryCandidate,
    Message,
    Origin,
    SystemMessage,
    Usage,
    UserMessage,
    new_id,
)
from xai.mood import MoodState
from xai.providers import Provider
from xai.session._approvals import Approvals
from xai.session._delegation import HELPER_INSTRUCTIONS
from xai.session._journal import JournalState, read_journal
from xai.session._lifecycle import SessionState
from xai.session._observers import EventCallback, OverflowPolicy, Subscription, pumping
from xai.session._parts import Parts
from xai.session._prompt import SystemPrompt
from xai.session._records import JOURNAL_FILE
from xai.session._types import FinalizingHook, InputPolicy, SessionConfig, TurnHandle, TurnSlot
from xai.tools import Tool, ToolSet

if TYPE_CHECKING:
    from xai.telemetry import Telemetry

__all__ = ["ChildFactory", "Session"]


class Session(AsyncContextManagerMixin):
    """A conversation actor. Use ``async with Session(...) as session`` or run it in your
    own task group with ``await task_group.start(session.run)``.

    ``send`` queues an input and returns a handle for the outcome. Observe with
    ``events()``, ``subscribe()`` or ``on(callback)``. ``directory`` makes it durable
    (``Session.reopen`` continues after a crash); ``telemetry`` traces it and its
    children (docs/telemetry.md); ``clock`` (default ``time.time``) stamps messages."""

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
        header = _state.header if _state is not None else None
        self.clock = clock
        self.config = config if config is not None else SessionConfig()
        self.id = session_id or (header.session_id if header else new_id())
        self.parent_id = header.parent_id if header else parent_id
        self.depth = depth
        if isinstance(system, str):
            system = SystemPrompt(instructions=system)
        self.system = system or (header.system if header else SystemPrompt())
        self.directory = Path(directory) if directory is not None else None
        self.on_session_finalizing: list[FinalizingHook] = []
        self._provider, self._child_factory, self._telemetry = provider, child_factory, telemetry
        self._base_tools = tools if isinstance(tools, ToolSet) else ToolSet(tools or ())
        if tool_deps is None and self._base_tools.context is not None:
            # A ToolSet's own context stays reachable: SessionContext.deps carries it.
            tool_deps = self._base_tools.context
        # The state objects and the steps over them (see docs/architecture.md).
        self._parts = parts = Parts(
            ids=(self.id, self.parent_id, depth), config=self.config, provider=provider,
            tools=self._base_tools, tool_deps=tool_deps, spawn=self._spawn_child,
            system=self.system, directory=self.directory, hooks=self.on_session_finalizing,
            telemetry=telemetry, clock=clock, state=_state,
        )  # fmt: skip
        self._requeued = tuple(TurnHandle(slot) for slot in parts.requeued)
        self._hub, self._transcript = parts.hub, parts.transcript

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

        When it starts, every tool call left without a result (the process died during
        it, or a journal line was lost) gets a synthetic "interrupted" one right after
        its call; finished tool calls never run again; a turn the process died in ends
        ``interrupted`` (``continue_turn()`` lets the model pick up). Inputs ``send()``
        accepted that never started run first (``requeued`` has their handles). A journal
        that says ``closing`` runs no input: ``close(state.closing)`` hands its candidates
        to the finalising hooks again. ``state``: the journal already read (else read
        here, blocking; async code passes ``await JournalView.aread(path)``).
        """
        path = Path(directory)
        if state is None:
            state = read_journal(path / JOURNAL_FILE)
        return cls(
            provider, tools=tools, config=config, system=system, directory=path,
            tool_deps=tool_deps, child_factory=child_factory,
            depth=depth or state.header.depth, telemetry=telemetry, clock=clock, _state=state,
        )  # fmt: skip

    @property
    def state(self) -> SessionState:
        """Where the Session is in its life (a ``str`` enum, see ``SessionState``)."""
        return self._parts.lifecycle.state

    @property
    def history(self) -> tuple[Message, ...]:
        """The conversation as the next Query will see it (after any compaction)."""
        return tuple(self._parts.context.history)

    @property
    def summary(self) -> str:
        return self._parts.context.summary

    @property
    def usage(self) -> Usage:
        return self._parts.spending.total

    @property
    def turns(self) -> int:
        return self._parts.turns.count

    @property
    def announced(self) -> int:
        """Journal position of the last record announced (``SessionEvent.journal``)."""
        return self._parts.hub.announced

    @property
    def candidates(self) -> tuple[MemoryCandidate, ...]:
        return tuple(self._parts.candidates.proposed)

    @property
    def undecided(self) -> int:
        """Candidates not yet acknowledged by the owner (+1 while an extraction runs)."""
        return self._parts.undecided()

    @property
    def mood(self) -> MoodState | None:
        """The mood injected at creation, moved by each turn (``None``: no mood kept)."""
        return None if self._parts.mood is None else self._parts.mood.state(self.clock())

    @property
    def busy(self) -> bool:
        """True while a Query runs."""
        return self._parts.turns.token is not None

    @property
    def idle(self) -> bool:
        """True when no turn runs (nor the memory extraction after one)."""
        return self._parts.turns.current is None

    @property
    def approvals(self) -> Approvals:
        """Tool calls waiting for a person (approve / deny them: docs/approvals.md)."""
        return self._parts.approvals

    @property
    def pending_inputs(self) -> int:
        return len(self._parts.inbox)

    @property
    def requeued(self) -> tuple[TurnHandle, ...]:
        """Handles of the inputs a reopen found accepted and not started (they run first)."""
        return self._requeued

    @property
    def closing_pending(self) -> bool:
        """Closed (or reopened) ``closing``: unacknowledged candidates remain."""
        return self._parts.recorder.unclosed is not None

    @property
    def interrupted_turn(self) -> bool:
        """True if the history ends in a turn the model did not finish (e.g. after a crash)."""
        return self._parts.context.interrupted_turn

    def system_message(self) -> SystemMessage | None:
        """The system message of the next request (persona, instructions, memory, summary)."""
        return self._parts.context.system_message()

    def estimated_tokens(self) -> int:
        """Estimated prompt tokens of the next request."""
        return self._parts.context.estimated_tokens()

    def subscribe(
        self, *, buffer: int | None = None, overflow: OverflowPolicy = "drop_oldest"
    ) -> Subscription[SessionEvent]:
        """A new subscription (async iterator of ``SessionEvent``) with its own buffer;
        ``async for event in session.events(): ...`` too (leaving the loop unsubscribes)."""
        return self._parts.subscribe(buffer, overflow)

    events = subscribe

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
        """Call ``callback`` (sync or async) with every event, from a task of its own. A slow
        callback falls behind and loses events by ``overflow``; it never slows the Session.
        Close the returned subscription to stop."""
        return self._parts.pump(self, callback, buffer, overflow)

    def acknowledge_candidates(self, candidate_ids: Iterable[str]) -> None:
        """The owner took these candidates; finalising hooks will not get them again. Works
        after the close too: a Session that closed ``closing`` is closed once none is left."""
        self._parts.acknowledge(candidate_ids)

    def send(
        self, input: str | UserMessage, *, origin: Origin = "user", policy: InputPolicy = "queue"
    ) -> TurnHandle:
        """Queue an input (``policy="interrupt"``: cancel the running turn, go first).
        ``origin``: ``user``, or ``agent`` when the Agent synthesised it."""
        self._parts.check_accepting()
        message = (
            input if isinstance(input, UserMessage) else UserMessage(content=input, origin=origin)
        )
        if message.at is None:
            message = msgspec.structs.replace(message, at=self.clock())
        # Accepted means on disk (opened early if the Session does not run yet).
        first = policy == "interrupt"
        slot = self._parts.inbox.accept(message, first=first, journal=self._parts.recorder.open())
        if first:
            self.cancel()
        return self._queued(slot)

    def continue_turn(self) -> TurnHandle:
        """Run the model on the history as it is (after a reopen): no new input."""
        self._parts.check_accepting()
        return self._queued(self._parts.inbox.continuation())

    def _queued(self, slot: TurnSlot) -> TurnHandle:
        if self._telemetry is not None:
            slot.trace = self._telemetry.capture()
        self._parts.turns.wake_up()
        return TurnHandle(slot)

    def cancel(self) -> bool:
        """Cancel the running Query (if any). Returns whether one was running."""
        return self._parts.turns.cancel()

    # -- lifecycle -----------------------------------------------------------------------

    @asynccontextmanager
    async def __asynccontextmanager__(self) -> AsyncIterator[Session]:
        """Its task in a task group of its own; leaving closes it (as ``closed``, or
        ``error`` / ``cancelled`` when the block raised)."""
        async with _actor.running(self, self.close):
            yield self

    async def run(
        self, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED
    ) -> None:
        """The actor's task: returns once the Session is closed and finalised."""
        await self._parts.run(task_status, session_id=self.id, durable=bool(self.directory))

    async def close(self, reason: CloseReason = "closed", *, cancel_running: bool = True) -> None:
        """Close: drop queued inputs, cancel the running turn (unless told not to), run the
        ``on_session_finalizing`` hooks, write the journal's last record, end every
        subscription. Waits until all of that is done. Idempotent.

        A suspended Session is not closed here: reopen its journal, then close it."""
        if self._parts.close(reason, cancel_running=cancel_running):
            await self.wait_closed()

    def begin_suspend(self) -> None:
        """``suspend``'s synchronous half: no new turn or input; the running one finishes."""
        self._parts.begin_suspend()

    async def suspend(self) -> None:
        """Stop the task WITHOUT closing: no hooks, no ``closed`` record, the journal left
        open-ended, so ``Session.reopen`` brings the Session back as it was. Waits for the
        running turn (and its extraction); no turn starts after the call. Inputs not started
        stay accepted in the journal (their handles here resolve ``interrupted``, error
        ``SessionSuspended``); so do unacknowledged candidates. Idempotent."""
        if self.state is not SessionState.SUSPENDED:
            self.begin_suspend()
            await self.wait_closed()

    async def wait_closed(self) -> None:
        """Wait until the Session is finalised and its callbacks have seen every event."""
        # From one of this Session's own callbacks, waiting for them to drain would deadlock.
        await self._parts.wait_closed(from_callback=pumping() is self)

    async def _spawn_child(self, task: str) -> tuple[Session, bool]:
        """A running child Session; ``True`` when this Session owns (and must close) it."""
        if self._child_factory is not None:
            return await self._child_factory(self, task), False
        group, context = self._parts.task_group, self._parts.tools.context
        assert group is not None
        child_id = new_id()
        child = Session(
            self._provider, tools=self._base_tools, config=self.config,
            system=SystemPrompt(instructions=HELPER_INSTRUCTIONS, persona=self.system.persona),
            directory=self.directory / "children" / child_id if self.directory else None,
            session_id=child_id, parent_id=self.id, depth=self.depth + 1,
            tool_deps=context.deps if context else None, telemetry=self._telemetry,
        )  # fmt: skip
        await group.start(child.run)
        return child, True

    def __repr__(self) -> str:
        return f"Session(id={self.id!r}, state={self.state.value!r}, turns={self.turns})"


ChildFactory: TypeAlias = Callable[[Session, str], Awaitable[Session]]
"""The owner's hook for delegation: make and start a child Session for a task."""
