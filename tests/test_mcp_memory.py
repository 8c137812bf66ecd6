"""The MCP memory tools under concurrent calls (issue 33, item 7), with the official SDK's
client connected in-process to ``agent_mcp_server``: real chromadb and MiniLM, rules
adjudication."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp_types import CallToolResult

from xai.agent import Agent, AgentConfig
from xai.mcp import agent_mcp_server
from xai.memory import Embedder, MemoryConfig, local_minilm
from xai.testing import ScriptedProvider, demo_model

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(120)]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # the MCP SDK's in-memory transport; wait_all_tasks_blocked


def data(result: CallToolResult) -> Any:
    assert not result.is_error, result.content
    structured = result.structured_content
    assert structured is not None
    return structured.get("result", structured)


class CountingEmbedder:
    """The offline model, each ``embed`` call's size noted; a gate holds the calls while set."""

    def __init__(self, inner: Embedder) -> None:
        self.inner = inner
        self.calls: list[int] = []
        self.gate: anyio.Event | None = None

    @property
    def name(self) -> str:
        return self.inner.name

    @property
    def dimension(self) -> int:
        return self.inner.dimension

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        self.calls.append(len(texts))
        if self.gate is not None:
            await self.gate.wait()
        return await self.inner.embed(texts)


def rules() -> AgentConfig:
    return AgentConfig(memory=MemoryConfig(use_judge=False))


async def test_concurrent_forgets_of_one_fact_make_one_decision(tmp_path: Path) -> None:
    async with Agent(tmp_path, ScriptedProvider([]), config=rules()) as agent:
        (added,) = await agent.remember("The user's cat is called Miso.")
        fact_id = added.facts[0].id
        async with Client(agent_mcp_server(agent)) as client:
            answers: list[str] = []

            async def forget() -> None:
                reply = await client.call_tool("forget", {"fact_id": fact_id})
                answers.append(data(reply)["decision"])

            async with anyio.create_task_group() as group:
                for _ in range(3):
                    group.start_soon(forget)
    assert sorted(answers) == ["already forgotten", "already forgotten", "forget"]
    forgets = [d for d in agent.memory.ledger() if d.kind == "forget"]
    assert [f.id for d in forgets for f in d.facts] == [fact_id]  # one record, not three


async def test_concurrent_remembers_are_decided_in_one_pass(tmp_path: Path) -> None:
    embedder = CountingEmbedder(local_minilm())
    texts = [f"The user's locker number at gym {n} is {n * 7}." for n in range(30)]
    async with Agent(tmp_path, ScriptedProvider([]), embedder=embedder, config=rules()) as agent:
        await agent.memory.search("warm up", 1)  # the indexes are open
        embedder.calls.clear()
        embedder.gate = anyio.Event()  # the first request's adjudication waits here
        async with Client(agent_mcp_server(agent)) as client:
            answers: list[dict[str, Any]] = []

            async def remember(text: str) -> None:
                answers.append(data(await client.call_tool("remember", {"text": text})))

            async with anyio.create_task_group() as group:
                for text in texts:
                    group.start_soon(remember, text)
                # Every request has arrived and waits (the first in its embedding, the
                # others queued behind it): then the adjudication goes on.
                await anyio.wait_all_tasks_blocked()
                embedder.gate.set()
        facts = {f.text for f in agent.memory.facts()}
    assert facts == set(texts)  # each one remembered, each caller told its own decision
    assert sorted(a["facts"][0]["text"] for a in answers) == sorted(texts)
    assert all(a["decisions"] == ["add"] for a in answers)
    # Before: one adjudication (one embedding call) per request, 30 in all.
    # Now: the first alone at most (if it was taken before the others came), then the rest.
    assert sum(embedder.calls) == 30 and len(embedder.calls) <= 2, embedder.calls


async def test_get_mood_reports_what_conversations_moved(tmp_path: Path) -> None:
    """``get_mood`` answers the host API's ``GetMood``: a sad conversation, closed over MCP,
    leaves the user's valence below zero (issue 30)."""
    provider = ScriptedProvider()
    provider.script.add_responder(demo_model)
    async with (
        Agent(tmp_path, provider, config=rules()) as agent,
        Client(agent_mcp_server(agent)) as client,
    ):
        before = data(await client.call_tool("get_mood", {}))
        assert before["user_valence"] == 0.0 and before["last_digest_at"] is None
        said = "This is awful, I hate how everything keeps failing."
        answer = data(await client.call_tool("send_message", {"text": said}))
        await client.call_tool("close_session", {"session_id": answer["session_id"]})
        after = data(await client.call_tool("get_mood", {}))
    assert after["enabled"] and after["user_valence"] < 0 and after["last_digest_at"]
