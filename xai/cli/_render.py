"""Printing events for people: streamed text, dimmed thinking, tool calls as they run; and a
printer task the REPL and the demo wait on (never a sleep)."""

from __future__ import annotations

import sys
from collections import deque
from collections.abc import Callable
from typing import TextIO, TypeAlias, assert_never

import anyio

from xai.cli._people import problem
from xai.events import (
    AgentEvent,
    AgentEventBody,
    ApprovalDecided,
    ApprovalRequested,
    CandidatesProposed,
    Compacted,
    EventsDropped,
    JournalQuarantined,
    MemoryDecided,
    MessageCommitted,
    MoodChanged,
    QueryDone,
    SessionClosed,
    SessionEnded,
    SessionEventBody,
    SessionFailed,
    SessionFinalizing,
    SessionOpened,
    TextDelta,
    ThinkingDelta,
    ToolCallFinished,
    ToolCallStarted,
    TurnDone,
    TurnStarted,
    WakeupFired,
    WakeupSkipped,
)
from xai.messages import AssistantMessage, ErrorInfo, TurnStatus
from xai.session import Subscription

__all__ = ["Printer", "Renderer", "session_ended", "turn_done"]


class Renderer:
    """Turns events into terminal output; one instance per output stream.

    ``prefix_for(session_id)`` lets the REPL label output of Sessions other
    than the one being typed into (wake-ups, delegated children).
    """

    def __init__(
        self, out: TextIO | None = None, *, color: bool | None = None, endpoint: str | None = None
    ) -> None:
        self.out = out or sys.stdout
        self.endpoint = endpoint  # the model's base URL, named when it cannot be reached
        # The last problem shown since a turn began: the same cause reported again (the turn
        # failed, then the memory extraction after it, for one unreachable endpoint) is said
        # once per turn.
        self._problem: str | None = None
        use_color = self.out.isatty() if color is None else color
        self.dim = "\x1b[2m" if use_color else ""
        self.bold = "\x1b[1m" if use_color else ""
        self.reset = "\x1b[0m" if use_color else ""
        self._open: str | None = None  # "text" / "thinking" while a line is being streamed
        self.labels: dict[str, str] = {}

    def _write(self, text: str) -> None:
        self.out.write(text)
        self.out.flush()

    def _end_line(self) -> None:
        if self._open is not None:
            self._write(f"{self.reset}\n")
            self._open = None

    def _say_problem(self, tag: str, what: str, error: ErrorInfo) -> None:
        text = problem(error, self.endpoint)
        if text == self._problem:
            return
        self._problem = text
        self.line(f"{tag}{self.dim}[{what}: {text}]{self.reset}")

    def line(self, text: str) -> None:
        self._end_line()
        self._write(text + "\n")

    def event(self, body: SessionEventBody | AgentEventBody, session_id: str | None = None) -> None:
        label = self.labels.get(session_id or "", "")
        tag = f"{self.dim}[{label}]{self.reset} " if label else ""
        if isinstance(body, ThinkingDelta):
            if self._open != "thinking":
                self._end_line()
                self._write(f"{tag}{self.dim}thinking: ")
                self._open = "thinking"
            self._write(body.text)
        elif isinstance(body, TextDelta):
            if self._open != "text":
                self._end_line()
                self._write(f"{tag}{self.bold}assistant:{self.reset} ")
                self._open = "text"
            self._write(body.text)
        elif isinstance(body, MessageCommitted):
            self._end_line()
            message = body.message
            if isinstance(message, AssistantMessage):
                for call in message.tool_calls:
                    self._write(f"{tag}{self.dim}→ {call.name}({call.arguments}){self.reset}\n")
        elif isinstance(body, ToolCallStarted):
            self.line(f"{tag}{self.dim}⚙ running {body.call.name}…{self.reset}")
        elif isinstance(body, ToolCallFinished):
            r = body.result
            status = "ok" if r.success else f"error: {r.error}"
            content = r.content if len(r.content) <= 200 else r.content[:200] + "…"
            self.line(f"{tag}{self.dim}✓ {r.tool_name} [{status}] {content}{self.reset}")
        elif isinstance(body, TurnDone):
            o = body.outcome
            if o.status is not TurnStatus.COMPLETED and o.error is not None:
                self._say_problem(tag, f"turn {o.status.value}", o.error)
            elif o.status is not TurnStatus.COMPLETED:
                self.line(f"{tag}{self.dim}[turn {o.status.value}]{self.reset}")
        elif isinstance(body, CandidatesProposed):
            for candidate in body.candidates:
                self.line(f"{tag}{self.dim}[noted: {candidate.text}]{self.reset}")
        elif isinstance(body, Compacted):
            self.line(
                f"{tag}{self.dim}[history compacted: {body.before_tokens} → "
                f"{body.after_tokens} tokens]{self.reset}"
            )
        elif isinstance(body, MemoryDecided):
            if body.decision != "drop":
                self.line(f"{self.dim}[memory: {body.decision} — {body.reason}]{self.reset}")
        elif isinstance(body, WakeupFired):
            self.line(f"{self.bold}[wake-up {body.wakeup_id}]{self.reset} {body.input}")
        elif isinstance(body, WakeupSkipped):
            self.line(f"{self.dim}[wake-up {body.wakeup_id} skipped: {body.reason}]{self.reset}")
        elif isinstance(body, SessionFailed):
            self._say_problem(tag, f"{body.stage} failed", body.error)
        elif isinstance(body, ApprovalRequested):
            call = body.pending.call
            self.line(
                f"{tag}{self.bold}[approval needed] {call.name}({call.arguments}) "
                f"— call {call.id}: /approve {call.id} · /deny {call.id} [reason]{self.reset}"
            )
        elif isinstance(body, ApprovalDecided):
            d = body.decision
            verdict = "approved" if d.approved else f"denied ({d.reason or 'no reason'})"
            self.line(f"{tag}{self.dim}[call {d.call_id} {verdict} by {d.by}]{self.reset}")
        elif isinstance(body, JournalQuarantined):
            self.line(
                f"{self.bold}[a conversation's journal could not be read ({body.error}): "
                f"kept as {body.moved_to}]{self.reset}"
            )
        elif isinstance(body, EventsDropped):
            self.line(
                f"{self.dim}[{body.count} event(s) not shown: output fell behind]{self.reset}"
            )
        elif isinstance(body, (QueryDone, SessionEnded, SessionClosed)):
            self._end_line()
        elif isinstance(body, TurnStarted):
            self._problem = None  # each turn says what went wrong with it (once)
        elif isinstance(body, MoodChanged):
            if body.style is not None:  # shown only when the style line changes (/mood tells more)
                self.line(f"{tag}{self.dim}[mood: {body.style or 'neutral'}]{self.reset}")
        elif isinstance(body, (SessionFinalizing, SessionOpened)):
            pass  # nothing to show: what follows says it
        else:
            assert_never(body)

    def agent_event(self, event: AgentEvent) -> None:
        body = event.event
        if isinstance(body, SessionOpened) and event.session_id is not None:
            if body.parent_id is not None:
                self.labels[event.session_id] = "helper"
            elif body.origin == "agent":
                self.labels[event.session_id] = "wake-up"
        self.event(body, event.session_id)


Wanted: TypeAlias = Callable[[AgentEvent], bool]


class Printer:
    """Prints an Agent's events from a task of its own (``run``); the code driving the Agent
    waits with ``shown(...)`` until the printer has put a given event on screen, so its own
    lines come after (instead of sleeping and hoping the printer caught up).

    Events other than streamed text are remembered (the last ``HISTORY``), so waiting for
    one that was printed just before the wait began returns at once. A gap in the events
    (``EventsDropped``) or their end releases every waiter: what it waits for may be lost.
    """

    HISTORY = 10_000

    def __init__(self, render: Renderer, events: Subscription[AgentEvent]) -> None:
        self.render = render
        self._events = events
        self._recent: deque[AgentEvent] = deque(maxlen=self.HISTORY)
        self._waiters: list[_Waiter] = []
        self._ended = False

    async def run(self) -> None:
        try:
            async for event in self._events:
                self.render.agent_event(event)
                self._printed(event)
        finally:
            self._ended = True
            self._release(lambda _: True)

    def _printed(self, event: AgentEvent) -> None:
        body = event.event
        if isinstance(body, (TextDelta, ThinkingDelta)):
            return  # many and never waited for
        self._recent.append(event)
        if isinstance(body, EventsDropped):
            self._release(lambda _: True)
        else:
            self._release(lambda wanted: wanted(event), event)

    def _release(self, matches: Callable[[Wanted], bool], event: AgentEvent | None = None) -> None:
        waiting = []
        for waiter in self._waiters:
            if matches(waiter.wanted):
                waiter.found = event
                waiter.done.set()
            else:
                waiting.append(waiter)
        self._waiters = waiting

    async def shown(self, wanted: Wanted) -> AgentEvent | None:
        """Return the first event ``wanted`` accepts once it has been printed (``None`` if the
        events ended or had a gap first)."""
        for event in self._recent:
            if wanted(event):
                return event
        if self._ended:
            return None
        waiter = _Waiter(wanted)
        self._waiters.append(waiter)
        await waiter.done.wait()
        return waiter.found


class _Waiter:
    __slots__ = ("done", "found", "wanted")

    def __init__(self, wanted: Wanted) -> None:
        self.wanted = wanted
        self.done = anyio.Event()
        self.found: AgentEvent | None = None


def turn_done(session_id: str, turn: int) -> Wanted:
    """Wants the end of ``turn`` of a Session (or the Session's end, which ends it too)."""

    def wanted(event: AgentEvent) -> bool:
        body = event.event
        return event.session_id == session_id and (
            (isinstance(body, TurnDone) and body.outcome.turn == turn)
            or isinstance(body, SessionEnded)
        )

    return wanted


def session_ended(session_id: str) -> Wanted:
    return lambda event: event.session_id == session_id and isinstance(event.event, SessionEnded)
