"""A graceful close decides what is queued and what a start recovered, within a bound.

A short-lived process (a CLI command, ``run_agent``, a serverless handler) starts an Agent
on a directory whose last process was killed, and closes it soon after: the candidates
the start recovered must be decided then, not left in the journals for a start that may
never come; and when deciding takes too long, the close ends anyway and says so."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import anyio
import pytest

from tests.test_agent_resume import conversation, said, scripted  # noqa: F401
from xai.agent import Agent, AgentConfig, AgentState
from xai.events import SessionOpened
from xai.memory import default_embedder
from xai.providers import OpenAIProvider
from xai.session import SessionConfig, read_journal
from xai.testing import OpenAIWireServer

pytestmark = pytest.mark.anyio


async def test_a_close_while_starting_decides_what_the_start_recovered(
    tmp_path: Path,
    scripted: OpenAIWireServer,  # noqa: F811
    provider: OpenAIProvider,
) -> None:
    journals = [
        await conversation(tmp_path, provider, ["My name is Ada", "I keep bees"]),
        await conversation(tmp_path, provider, ["I live in Porto"]),
    ]
    agent = Agent(tmp_path, provider)
    reopened = anyio.Event()  # the start is under way: it reopened a Session
    agent.listen(lambda e: reopened.set() if isinstance(e.event, SessionOpened) else None)
    async with anyio.create_task_group() as group:
        group.start_soon(agent.run)
        await reopened.wait()
        assert agent.state is AgentState.STARTING
        closed = await agent.close()  # before the start finished
    assert closed.complete and closed.sessions == ()
    assert agent.state is AgentState.STOPPED
    facts = {f.text for f in agent.memory.facts()}
    assert facts == said("My name is Ada", "I keep bees", "I live in Porto")
    for journal in journals:
        state = read_journal(journal)
        assert state.closed == "owner_shutdown" and state.unacknowledged == []


async def test_a_close_right_after_the_start_decides_what_it_recovered(
    tmp_path: Path,
    scripted: OpenAIWireServer,  # noqa: F811
    provider: OpenAIProvider,
) -> None:
    journal = await conversation(tmp_path, provider, ["My name is Ada", "I keep bees"])
    async with Agent(tmp_path, provider) as agent:
        pass
    facts = {f.text for f in agent.memory.facts()}
    assert facts == said("My name is Ada", "I keep bees")
    assert read_journal(journal).unacknowledged == []


class StuckEmbedder:
    """The offline model's space, but every embedding waits until the test lets it go: an
    adjudication (and an episode's recording) that does not finish."""

    def __init__(self) -> None:
        self.inner = default_embedder()
        self.go = anyio.Event()

    @property
    def name(self) -> str:
        return self.inner.name

    @property
    def dimension(self) -> int:
        return self.inner.dimension

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        await self.go.wait()
        return await self.inner.embed(texts)


async def test_a_close_is_bounded_by_the_hook_timeout_and_says_what_it_left(
    tmp_path: Path,
    scripted: OpenAIWireServer,  # noqa: F811
    provider: OpenAIProvider,
) -> None:
    journal = await conversation(tmp_path, provider, ["My name is Ada", "I keep bees"])
    config = AgentConfig(session=SessionConfig(extract_memory=True, hook_timeout=0.5))
    embedder = StuckEmbedder()
    agent = Agent(tmp_path, provider, embedder=embedder, config=config)
    with anyio.fail_after(30):  # a guard against a hang, not a wait
        async with anyio.create_task_group() as group:
            await group.start(agent.run)
            (session_id,) = agent.sessions
            closed = await agent.close()
    assert not closed.complete
    assert closed.sessions == (session_id,) and closed.undecided == 2
    state = read_journal(journal)  # they wait there for the next start
    assert state.closing == "owner_shutdown" and len(state.unacknowledged) == 2
    embedder.go.set()  # the next start (the same embeddings) decides them
    async with Agent(tmp_path, provider, embedder=embedder, config=config) as again:
        pass
    assert {f.text for f in again.memory.facts()} == said("My name is Ada", "I keep bees")
    assert read_journal(journal).closed == "owner_shutdown"
