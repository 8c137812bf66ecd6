"""Sessions closing under an Agent that cannot decide their candidates in time (a slow
adjudicator, a full job queue, an Agent cancelled from outside): no candidate is lost,
each is decided exactly once, on a late decision or after a restart."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from pathlib import Path

import anyio
import pytest

import xai.agent._agent as agent_module
from tests.test_agent import scripted  # noqa: F401  (the fixture)
from xai.agent import Agent, AgentConfig
from xai.events import CandidatesProposed
from xai.memory import Decision, Embedder, local_minilm
from xai.messages import MemoryCandidate
from xai.providers import OpenAIProvider
from xai.session import JOURNAL_FILE, Session, SessionConfig, read_journal
from xai.session._journal import read_records
from xai.session._records import CandidatesRecord
from xai.testing import OpenAIWireServer

pytestmark = pytest.mark.anyio


class GatedEmbedder:
    """The offline model behind a gate: while closed, adjudication cannot proceed."""

    def __init__(self, inner: Embedder) -> None:
        self.inner = inner
        self.gate: anyio.Event | None = None

    @property
    def name(self) -> str:
        return self.inner.name

    @property
    def dimension(self) -> int:
        return self.inner.dimension

    def close(self) -> None:
        self.gate = anyio.Event()

    def open(self) -> None:
        if self.gate is not None:
            self.gate.set()

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        if self.gate is not None:
            await self.gate.wait()
        return await self.inner.embed(texts)


def config(hook_timeout: float) -> AgentConfig:
    return AgentConfig(
        session=SessionConfig(extract_memory=True, delegation=True, hook_timeout=hook_timeout)
    )


async def talk(agent: Agent, count: int, start: int = 0) -> list[Session]:
    """``count`` Sessions, each with one candidate proposed (lucky numbers from ``start``)."""
    sessions = []
    for i in range(start, start + count):
        session = await agent.open_session("chat")
        events = session.subscribe()
        await session.send(f"My lucky number is {i}")
        async for event in events:
            if isinstance(event.event, CandidatesProposed):
                break
        sessions.append(session)
    return sessions


def candidates_on_disk(directory: Path) -> set[str]:
    ids: set[str] = set()
    for journal in (directory / "sessions").glob(f"*/{JOURNAL_FILE}"):
        for record in read_records(journal):
            if isinstance(record, CandidatesRecord):
                ids.update(c.id for c in record.candidates)
    return ids


def decided_once(agent: Agent, expected: set[str]) -> None:
    decided = Counter(d.candidate.id for d in agent.memory.ledger() if d.candidate is not None)
    assert set(decided) == expected, "a candidate was lost"
    assert set(decided.values()) == {1}, "a candidate was decided twice"


def pending(session: Session) -> bool:
    return session.closing_pending


def journal_states(directory: Path) -> list[tuple[str | None, str | None]]:
    states: list[tuple[str | None, str | None]] = []
    for journal in sorted((directory / "sessions").glob(f"*/{JOURNAL_FILE}")):
        state = read_journal(journal)
        states.append((state.closing, state.closed))
    return states


async def test_sessions_closing_together_past_the_hook_timeout_lose_no_candidate(
    tmp_path: Path,
    scripted: OpenAIWireServer,  # noqa: F811
    provider: OpenAIProvider,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Eight Sessions close at once while the adjudicator is stuck and its queue (3 here) is
    full: every hook times out; then the process dies. Old: each journal was marked closed,
    so no restart would hand over the candidates that were not decided: gone for good."""
    monkeypatch.setattr(agent_module, "JOB_QUEUE", 3)
    embedder = GatedEmbedder(local_minilm())
    agent = Agent(tmp_path, provider, embedder=embedder, config=config(hook_timeout=0.2))
    async with anyio.create_task_group() as group:
        await group.start(agent.run)
        embedder.close()
        sessions = await talk(agent, 8)
        async with anyio.create_task_group() as closers:
            for session in sessions:
                closers.start_soon(session.close)
        assert all(s.state == "closed" and s.closing_pending for s in sessions)
        group.cancel_scope.cancel()  # the process dies (its disk is all a kill -9 leaves)
    assert journal_states(tmp_path) == [("closed", None)] * 8
    expected = candidates_on_disk(tmp_path)
    assert len(expected) == 8 and agent.memory.ledger() == []

    embedder.open()
    async with Agent(tmp_path, provider, embedder=embedder, config=config(30)) as again:
        pass
    decided_once(again, expected)
    assert journal_states(tmp_path) == [(None, "closed")] * 8


async def test_a_decision_after_the_hook_gave_up_completes_the_close(
    tmp_path: Path,
    scripted: OpenAIWireServer,  # noqa: F811
    provider: OpenAIProvider,
) -> None:
    embedder = GatedEmbedder(local_minilm())
    agent = Agent(tmp_path, provider, embedder=embedder, config=config(hook_timeout=0.2))
    async with agent:
        embedder.close()
        (session,) = await talk(agent, 1)
        await session.close()  # the hook times out: the candidate is queued, not decided
        assert session.closing_pending and journal_states(tmp_path) == [("closed", None)]
        embedder.open()
    # the Agent's close let the adjudicator finish its queue: decided, acknowledged late
    assert not pending(session) and journal_states(tmp_path) == [(None, "closed")]
    decided_once(agent, candidates_on_disk(tmp_path))


async def test_an_agent_cancelled_from_outside_closes_promptly_and_decides_on_restart(
    tmp_path: Path,
    scripted: OpenAIWireServer,  # noqa: F811
    provider: OpenAIProvider,
) -> None:
    """Cancelling the task group that runs ``agent.run`` (what anyio does when a sibling task
    fails) cancels the adjudicator. Old: each closing Session waited the whole hook timeout
    for a decision that could not come, then recorded itself closed: candidates lost."""
    hook_timeout = 20.0
    embedder = GatedEmbedder(local_minilm())
    agent = Agent(tmp_path, provider, embedder=embedder, config=config(hook_timeout))
    async with anyio.create_task_group() as group:
        await group.start(agent.run)
        embedder.close()
        await talk(agent, 3)
        started = anyio.current_time()
        group.cancel_scope.cancel()
    assert anyio.current_time() - started < hook_timeout / 2, "a close waited for the timeout"
    assert journal_states(tmp_path) == [("cancelled", None)] * 3
    expected = candidates_on_disk(tmp_path)
    assert len(expected) == 3 and agent.memory.ledger() == []

    embedder.open()
    async with Agent(tmp_path, provider, embedder=embedder, config=config(hook_timeout)) as again:
        pass
    decided_once(again, expected)
    assert journal_states(tmp_path) == [(None, "cancelled")] * 3


class CountingMemory:
    """Records the candidates of each ``memory.adjudicate`` call; fails a call holding a
    candidate whose text has ``poison`` in it."""

    def __init__(self, agent: Agent, poison: str = "") -> None:
        self.calls: list[list[str]] = []
        self.called = anyio.Event()
        self.poison = poison
        self.inner = agent.memory.adjudicate

    async def adjudicate(
        self, candidates: Sequence[MemoryCandidate], *, session_id: str | None = None
    ) -> list[Decision]:
        self.calls.append([c.text for c in candidates])
        self.called.set()
        if self.poison and any(self.poison in c.text for c in candidates):
            raise RuntimeError("cannot decide this one")
        return await self.inner(candidates, session_id=session_id)


async def queue_behind_a_busy_adjudicator(
    agent: Agent, embedder: GatedEmbedder, memory: CountingMemory
) -> list[Session]:
    """Four Sessions' jobs: the first stuck in the adjudicator (the embedder is closed),
    the three others queued behind it."""
    embedder.close()
    (first,) = await talk(agent, 1)
    await memory.called.wait()
    proposed = 0
    events = agent.events()
    others = await talk(agent, 3, start=1)
    async for event in events:  # the Agent has queued a job when it tells of it
        proposed += isinstance(event.event, CandidatesProposed)
        if proposed == 3:
            break
    return [first, *others]


async def test_jobs_queued_together_are_decided_in_one_call_and_each_acknowledged(
    tmp_path: Path,
    scripted: OpenAIWireServer,  # noqa: F811
    provider: OpenAIProvider,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Old: one ``adjudicate`` call (one embedding call) per job: at least four calls."""
    embedder = GatedEmbedder(local_minilm())
    async with Agent(tmp_path, provider, embedder=embedder, config=config(30)) as agent:
        memory = CountingMemory(agent)
        monkeypatch.setattr(agent.memory, "adjudicate", memory.adjudicate)
        sessions = await queue_behind_a_busy_adjudicator(agent, embedder, memory)
        texts = [f"The user said: My lucky number is {i}" for i in range(4)]
        embedder.open()
        for session in sessions:
            await session.close()
        assert not any(pending(s) for s in sessions)
    # The three queued jobs in one call; the stuck one's Session may hand its candidate
    # over again as it closes, with them or after them (the order is the scheduler's).
    first, rest, *again = memory.calls
    assert first == [texts[0]] and set(texts[1:]) <= set(rest)
    assert all(set(call) <= {texts[0]} for call in again), memory.calls
    decided_once(agent, candidates_on_disk(tmp_path))
    decided = {d.candidate.id: d.session_id for d in agent.memory.ledger() if d.candidate}
    proposed_in = {
        c.id: journal.parent.name
        for journal in (tmp_path / "sessions").glob(f"*/{JOURNAL_FILE}")
        for record in read_records(journal)
        if isinstance(record, CandidatesRecord)
        for c in record.candidates
    }
    assert decided == proposed_in and set(decided.values()) == {s.id for s in sessions}


async def test_a_job_that_fails_in_a_batch_fails_alone(
    tmp_path: Path,
    scripted: OpenAIWireServer,  # noqa: F811
    provider: OpenAIProvider,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    embedder = GatedEmbedder(local_minilm())
    async with Agent(tmp_path, provider, embedder=embedder, config=config(0.5)) as agent:
        memory = CountingMemory(agent, poison="number is 2")
        monkeypatch.setattr(agent.memory, "adjudicate", memory.adjudicate)
        sessions = await queue_behind_a_busy_adjudicator(agent, embedder, memory)
        embedder.open()
        for session in sessions:
            await session.close()
        assert [pending(s) for s in sessions] == [False, False, True, False]
    assert any(len(call) > 1 and any("is 2" in t for t in call) for call in memory.calls)
    decided = {d.candidate.text for d in agent.memory.ledger() if d.candidate}
    assert not any("2" in text for text in decided) and len(decided) == 3
