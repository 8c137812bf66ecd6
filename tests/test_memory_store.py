"""Where memory indexes live: an idle Agent starts no chromadb client; many memories share
one store, each in collections of its own."""

from __future__ import annotations

from pathlib import Path

import pytest

from xai.agent import Agent, AgentConfig
from xai.memory import IndexStore, LongTermMemory, ScoredFact, local_minilm
from xai.messages import MemoryCandidate
from xai.testing import ScriptedProvider

pytestmark = pytest.mark.anyio


def said(text: str, evidence: str) -> MemoryCandidate:
    return MemoryCandidate(text=text, evidence=(evidence,), session_id="s1")


def _started(agent: Agent) -> bool:
    store = agent.memory._store
    return store is not None and store.started


async def test_an_agent_whose_memory_nobody_asks_starts_no_chromadb(tmp_path: Path) -> None:
    async with Agent(
        tmp_path, ScriptedProvider([]), config=AgentConfig(memory_tool=False)
    ) as agent:
        session = await agent.open_session("idle")
        assert not _started(agent)  # no client, no threads, no files of chromadb
        assert not (tmp_path / "memory" / "index").exists()
        assert await agent.memory.search("anything", k=3) == []  # opens it on first use
        assert _started(agent)
        await session.close()


async def test_memories_sharing_one_store_keep_to_their_own_collections(tmp_path: Path) -> None:
    store = IndexStore.local(tmp_path / "shared")
    embedder = local_minilm()
    one = LongTermMemory(tmp_path / "one", embedder=embedder, store=store, namespace="ada")
    two = LongTermMemory(tmp_path / "two", embedder=embedder, store=store, namespace="bob.x")
    try:
        async with one, two:
            await one.adjudicate([said("My cat is called Miso.", "m1")])
            await two.adjudicate([said("I live in Porto.", "m2")])
            (hit,) = await one.search("pets", k=1, tiers=["L1", "L2"])
            assert isinstance(hit, ScoredFact) and hit.fact.text == "My cat is called Miso."
            (hit,) = await two.search("pets", k=1, tiers=["L1", "L2"])
            assert isinstance(hit, ScoredFact) and hit.fact.text == "I live in Porto."
        assert store.started  # the caller's: a memory never closes a shared store
        names = sorted(c.name for c in store.client().list_collections())
        assert names == [
            "xai-ada-episodes",
            "xai-ada-facts",
            "xai-bob_2ex-episodes",
            "xai-bob_2ex-facts",
        ]
        assert not (tmp_path / "one" / "index").exists()
        async with LongTermMemory(
            tmp_path / "one", embedder=embedder, store=store, namespace="ada"
        ) as again:
            (hit,) = await again.search("pets", k=1, tiers=["L1", "L2"])
            assert isinstance(hit, ScoredFact) and hit.fact.text == "My cat is called Miso."
    finally:
        store.close()
