"""The host API's views of an Agent: msgspec values the host's operations answer with
(``_host_api``), and the web page shows as JSON.

Each is computed from the running Agent (its Sessions, its memory, its scheduler) or, for
usage, from its Sessions' journals (read in a worker thread): the page never reads files.
"""

from __future__ import annotations

import time
from pathlib import Path

import anyio
import msgspec

from xai.agent._agent import Agent
from xai.agent._wakeups import At as AtTrigger
from xai.agent._wakeups import Cron, Every, Idle, OnEvent, Trigger, WakeupState
from xai.memory import Decision, Fact
from xai.messages import Episode, Origin, PendingApproval, Usage, UserMessage
from xai.session import JournalView

__all__ = [
    "MAX_USAGE_SESSIONS",
    "DayUsage",
    "FactDetail",
    "FactHistory",
    "SessionInfo",
    "SessionSummary",
    "SessionUsage",
    "UsageReport",
    "WakeupView",
    "describe_trigger",
    "fact_detail",
    "pending_approvals",
    "session_info",
    "session_summaries",
    "usage_report",
    "wakeup_views",
]

MAX_USAGE_SESSIONS = 500
"""The usage report covers the Agent's most recent Sessions, at most this many."""

_LABEL_CHARS = 80


class SessionInfo(msgspec.Struct, frozen=True, kw_only=True):
    agent_id: str
    session_id: str
    parent_id: str | None
    state: str
    turns: int
    usage: Usage
    memory_prefix: str = ""


class SessionSummary(msgspec.Struct, frozen=True, kw_only=True):
    """One open Session of an Agent, as the Sessions list shows it."""

    session_id: str
    parent_id: str | None
    """The Session that delegated to it (a helper), or ``None``."""
    state: str
    turns: int
    busy: bool
    """A turn is running."""
    origin: Origin | None
    """Who gave the first input (``agent``: a wake-up or a helper); ``None``: none yet."""
    label: str
    """The start of the first input (what the Session is about); empty before one."""
    usage: Usage


def session_info(agent: Agent, session_id: str) -> SessionInfo:
    session = agent.session(session_id)
    return SessionInfo(
        agent_id=agent.id,
        session_id=session.id,
        parent_id=session.parent_id,
        state=session.state,
        turns=session.turns,
        usage=session.usage,
        memory_prefix=session.system.memory_prefix,
    )


def session_summaries(agent: Agent) -> list[SessionSummary]:
    """The Agent's open Sessions, in the order they were opened (or reopened)."""
    out = []
    for session in agent.sessions.values():
        first = next((m for m in session.history if isinstance(m, UserMessage)), None)
        out.append(
            SessionSummary(
                session_id=session.id,
                parent_id=session.parent_id,
                state=session.state,
                turns=session.turns,
                busy=session.busy,
                origin=first.origin if first is not None else None,
                label=first.content[:_LABEL_CHARS] if first is not None else "",
                usage=session.usage,
            )
        )
    return out


class FactHistory(msgspec.Struct, frozen=True, kw_only=True):
    """One ledger decision that touched the fact (or a version it superseded)."""

    seq: int
    kind: str
    reason: str
    at: float
    session_id: str | None
    judge: bool
    version: int | None
    """The fact's version this decision made (``None``: it made another fact, e.g. the
    one that superseded this)."""


class FactDetail(msgspec.Struct, frozen=True, kw_only=True):
    """A fact (any status), the episodes it came from, and its ledger history."""

    fact: Fact
    evidence: list[Episode]
    missing_evidence: int
    """Evidence ids whose episode is no longer kept (retention) or was never recorded."""
    history: list[FactHistory]


class SessionUsage(msgspec.Struct, frozen=True, kw_only=True):
    session_id: str
    parent_id: str | None
    created_at: float
    origin: Origin | None
    """Who gave the first input (``agent`` for a wake-up or a helper); ``None``: none yet."""
    label: str
    """The start of the first input (what the Session was about)."""
    turns: int
    closed: bool
    usage: Usage


class DayUsage(msgspec.Struct, frozen=True, kw_only=True):
    day: str
    """The UTC date, ``YYYY-MM-DD``."""
    prompt_tokens: int
    completion_tokens: int
    requests: int


class UsageReport(msgspec.Struct, frozen=True, kw_only=True):
    sessions: list[SessionUsage]
    """Newest first."""
    days: list[DayUsage]
    """Oldest first; only days with usage."""
    total: Usage


class WakeupView(msgspec.Struct, frozen=True, kw_only=True):
    id: str
    trigger: str
    """The trigger in words: ``every 3600 s``, ``cron 0 9 * * * (UTC)``, ``on event ping``."""
    text: str | None
    purpose: str | None
    paused: bool
    finished: bool
    runs: int
    next_at: float | None
    last_fired_at: float | None


def describe_trigger(trigger: Trigger) -> str:
    if isinstance(trigger, Every):
        return f"every {trigger.seconds:g} s"
    if isinstance(trigger, AtTrigger):
        stamp = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(trigger.time))
        return f"once at {stamp}"
    if isinstance(trigger, Cron):
        return f"cron {trigger.expression} ({trigger.timezone})"
    if isinstance(trigger, Idle):
        return f"after {trigger.seconds:g} s idle"
    if isinstance(trigger, OnEvent):
        return f"on event {trigger.name}"
    raise AssertionError(trigger)  # (mypy: Trigger is exhausted above)


def wakeup_views(states: list[WakeupState]) -> list[WakeupView]:
    return [
        WakeupView(
            id=s.wakeup.id,
            trigger=describe_trigger(s.wakeup.trigger),
            text=s.wakeup.text,
            purpose=s.wakeup.purpose,
            paused=s.paused,
            finished=s.finished,
            runs=s.runs,
            next_at=s.next_at,
            last_fired_at=s.last_fired_at,
        )
        for s in sorted(states, key=lambda s: s.wakeup.id)
    ]


def _history(fact: Fact, ledger: list[Decision]) -> list[FactHistory]:
    """The decisions that made a version of ``fact`` or of a fact it superseded, or that
    made the fact superseding it: its whole story, oldest first."""
    related = {fact.id, *fact.supersedes}
    if fact.superseded_by is not None:
        related.add(fact.superseded_by)
    out: list[FactHistory] = []
    for decision in ledger:
        made = [f for f in decision.facts if f.id in related]
        if not made:
            continue
        mine = next((f for f in made if f.id == fact.id), None)
        out.append(
            FactHistory(
                seq=decision.seq,
                kind=decision.kind,
                reason=decision.reason,
                at=decision.at,
                session_id=decision.session_id,
                judge=decision.judge,
                version=mine.version if mine is not None else None,
            )
        )
    return out


async def fact_detail(agent: Agent, fact_id: str) -> FactDetail | None:
    """``None``: the Agent never had that fact."""
    memory = agent.memory
    fact = memory.get(fact_id)
    if fact is None:
        return None
    ledger = await anyio.to_thread.run_sync(memory.ledger)
    found = [memory.episodes.get(e) for e in fact.evidence]
    evidence = [e for e in found if e is not None]
    evidence.sort(key=lambda e: e.at)
    return FactDetail(
        fact=fact,
        evidence=evidence,
        missing_evidence=len(found) - len(evidence),
        history=_history(fact, ledger),
    )


def _day(at: float) -> str:
    return time.strftime("%Y-%m-%d", time.gmtime(at))


def _one_session(path: Path, days: dict[str, list[int]]) -> SessionUsage | None:
    """A Session's usage from the totals its journal's writer keeps beside it (only what the
    journal gained since they were saved is read); each usage counts on the UTC day its
    last message was said (the Session's creation day when none is stamped)."""
    try:
        totals = JournalView.read_totals(path)
    except OSError:
        totals = None
    if totals is None:
        return None  # gone, or damaged (the Agent quarantines those itself)
    for day, spent in totals.days.items():
        tally = days.setdefault(day, [0, 0, 0])
        tally[0] += spent.prompt_tokens
        tally[1] += spent.completion_tokens
        tally[2] += spent.requests
    return SessionUsage(
        session_id=totals.session_id,
        parent_id=totals.parent_id,
        created_at=totals.created_at,
        origin=totals.origin,
        label=totals.label[:_LABEL_CHARS],
        turns=totals.turns,
        closed=totals.closed is not None,
        usage=totals.usage,
    )


def _read_usage(directory: Path) -> UsageReport:
    try:
        folders = [p for p in (directory / "sessions").iterdir() if p.is_dir()]
    except FileNotFoundError:
        folders = []
    folders.sort(key=lambda p: p.stat().st_mtime, reverse=True)
    days: dict[str, list[int]] = {}
    sessions = [s for p in folders[:MAX_USAGE_SESSIONS] if (s := _one_session(p, days)) is not None]
    sessions.sort(key=lambda s: s.created_at, reverse=True)
    total = sum((s.usage for s in sessions), Usage())
    return UsageReport(
        sessions=sessions,
        days=[
            DayUsage(day=day, prompt_tokens=p, completion_tokens=c, requests=r)
            for day, (p, c, r) in sorted(days.items())
        ],
        total=total,
    )


async def usage_report(agent: Agent) -> UsageReport:
    """Tokens per Session (its journal: every turn, summaries and extraction) and per day."""
    return await anyio.to_thread.run_sync(_read_usage, agent.directory)


def pending_approvals(agent: Agent, session_id: str | None = None) -> list[PendingApproval]:
    """The tool calls waiting for a person in the Agent's open Sessions (or in
    ``session_id`` and its helpers), each once, oldest first."""
    sessions = [agent.session(session_id)] if session_id else list(agent.sessions.values())
    seen: dict[str, PendingApproval] = {}
    for session in sessions:
        for pending in session.approvals.pending():
            seen.setdefault(pending.call.id, pending)
    return sorted(seen.values(), key=lambda p: p.requested_at)
