"""Selective forgetting (issue 29): ``forget`` takes a scope. ``fact``: the fact leaves search
and the prefix; ``evidence``: what was said goes with it (its evidence episodes leave the
search index), through the Agent, MCP and a restart. Real chromadb and MiniLM."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from mcp_types import CallToolResult

from xai.agent import Agent, AgentConfig
from xai.exceptions import FactForgottenError
from xai.mcp import agent_mcp_server
from xai.memory import LongTermMemory, MemoryConfig, MemoryHit, ScoredEpisode, ScoredFact
from xai.messages import Episode, MemoryCandidate
from xai.testing import ScriptedProvider

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(120)]

SISTER = "My sister's name is Ana."
CAT = "My cat is called Miso."
OTHER = ["I had soup for lunch.", "The weather was rainy today.", "I am reading a novel."]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # the MCP SDK's in-memory transport


def rules() -> AgentConfig:
    return AgentConfig(memory=MemoryConfig(use_judge=False))


def data(result: CallToolResult) -> Any:
    assert not result.is_error, result.content
    structured = result.structured_content
    assert structured is not None
    return structured.get("result", structured)


def texts(hits: list[MemoryHit]) -> list[str]:
    return [h.fact.text if isinstance(h, ScoredFact) else h.episode.text for h in hits]


async def tell(memory: LongTermMemory, session: str, text: str) -> str:
    """``text`` said in ``session`` among small talk, proposed as a fact; the fact's id."""
    said = [
        Episode(id=f"{session}-{n}", session_id=session, turn=n, seq=n, origin="user",
                speaker="user", text=t, at=1_780_000_000.0 + n)
        for n, t in enumerate([*OTHER, text])
    ]  # fmt: skip
    await memory.record_episodes(said)
    candidate = MemoryCandidate(
        id=f"c-{session}", text=text, kind="fact", confidence=0.8, evidence=(said[-1].id,),
        session_id=session, created_at=said[-1].at,
    )  # fmt: skip
    (decision,) = await memory.adjudicate([candidate], session_id=session)
    return decision.facts[0].id


async def test_forget_with_evidence_removes_what_was_said(tmp_path: Path) -> None:
    async with Agent(tmp_path, ScriptedProvider([]), config=rules()) as agent:
        sister = await tell(agent.memory, "s1", SISTER)
        cat = await tell(agent.memory, "s2", CAT)
        assert SISTER in texts(await agent.memory.search("What is my sister's name?", 5))

        async with Client(agent_mcp_server(agent)) as client:
            reply = await client.call_tool("forget", {"fact_id": sister, "scope": "evidence"})
            assert data(reply)["decision"] == "forget"
            shown = data(await client.call_tool("search_memory", {"query": "sister's name"}))
            assert not any("Ana" in h["text"] for h in shown), shown
            history = {"query": "sister's name", "history": True, "k": 20}
            assert not any(
                "Ana" in h["text"] for h in data(await client.call_tool("search_memory", history))
            )
        await agent.forget(cat)  # the fact only: what was said stays searchable
        found = texts(await agent.memory.search("What is my sister's name?", 20))
        assert not any("Ana" in t for t in found), found
        cat_found = texts(await agent.memory.search("What is my cat called?", 5))
        assert CAT in cat_found  # the episode, not the fact
        assert not any(isinstance(h, ScoredFact) for h in await agent.memory.search("cat", 5))
        assert "Ana" not in await agent.memory.prefix("family")

    async with Agent(tmp_path, ScriptedProvider([]), config=rules()) as agent:  # a restart
        found = texts(await agent.memory.search("What is my sister's name?", 20))
        assert not any("Ana" in t for t in found), found
        forgets = [d for d in agent.memory.ledger() if d.kind == "forget"]
        assert [(d.facts[0].id, d.facts[0].forget_scope) for d in forgets] == [
            (sister, "evidence"),
            (cat, "fact"),
        ]


async def test_a_wider_scope_forgets_again_a_narrower_one_does_not(tmp_path: Path) -> None:
    async with LongTermMemory(tmp_path, config=MemoryConfig(use_judge=False)) as memory:
        fact = await tell(memory, "s1", SISTER)
        await memory.forget(fact)
        assert any(isinstance(h, ScoredEpisode) for h in await memory.search("sister", 20))
        await memory.forget(fact, scope="evidence")  # what was said goes now
        assert not any("Ana" in t for t in texts(await memory.search("sister", 20)))
        with pytest.raises(FactForgottenError):
            await memory.forget(fact, scope="evidence")
        with pytest.raises(FactForgottenError):
            await memory.forget(fact)
    assert [d.kind for d in memory.ledger()] == ["add", "forget", "forget"]
