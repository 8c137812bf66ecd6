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


async def test_a_decision_made_while_a_prefix_waits_for_its_embedding(tmp_path: Path) -> None:
    """The prefix awaits the purpose's embedding (and the index's first open): a decision
    landing meanwhile resets the facts' order, which the prefix must make again, not read
    as None (the kill campaign found it)."""
    inner = local_minilm()
    memory: LongTermMemory | None = None

    class Meddling:
        name = inner.name
        dimension = inner.dimension

        async def embed(self, texts: list[str]) -> list[list[float]]:
            if texts == ["plan a trip"] and memory is not None:
                await memory.adjudicate([said("I am afraid of flying.", "m2")])
            return await inner.embed(texts)

    memory = LongTermMemory(tmp_path, embedder=Meddling(), lazy_index=True)  # type: ignore[arg-type]
    async with memory:
        await memory.adjudicate([said("I like trains.", "m1")])
        prefix = await memory.prefix("plan a trip")
    assert "I like trains." in prefix and "I am afraid of flying." in prefix
