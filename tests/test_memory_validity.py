"""Current over stale (issue 29): when a fact is superseded, the episode it was drawn from
is marked and ranks below the episode of the fact that replaced it; the search tools show
only what holds unless asked for history. Real chromadb and MiniLM, rules adjudication."""

from __future__ import annotations

from pathlib import Path

import pytest
from mcp import Client

from xai.agent import Agent, AgentConfig
from xai.mcp import agent_mcp_server
from xai.memory import (
    LongTermMemory,
    MemoryConfig,
    MemoryHit,
    ScoredEpisode,
    ScoredFact,
    local_minilm,
)
from xai.messages import Episode, MemoryCandidate
from xai.testing import ScriptedProvider

pytestmark = pytest.mark.anyio

DAY = 86_400.0
T0 = 1_780_000_000.0

FILLER = [
    "I had pasta for dinner yesterday.",
    "My sister plays the violin.",
    "Work was busy this week.",
    "I want to visit Japan one day.",
]


class Clock:
    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> float:
        return self.now


def said(episode_id: str, session: str, seq: int, text: str, at: float) -> Episode:
    return Episode(
        id=episode_id, session_id=session, turn=seq, seq=seq, origin="user", speaker="user",
        text=text, at=at,
    )  # fmt: skip


def text(hit: MemoryHit) -> str:
    return hit.fact.text if isinstance(hit, ScoredFact) else hit.episode.text


async def tell(memory: LongTermMemory, clock: Clock, session: str, text: str, n: int) -> str:
    """``text`` said in ``session`` (with some filler around it) and proposed as a fact."""
    episodes = [said(f"{session}-f{i}", session, i, t, clock.now) for i, t in enumerate(FILLER)]
    episode = said(f"{session}-e", session, len(FILLER), text, clock.now)
    await memory.record_episodes([*episodes, episode])
    candidate = MemoryCandidate(
        id=f"c{n}", text=text, kind="fact", confidence=0.8, evidence=(episode.id,),
        session_id=session, created_at=clock.now,
    )  # fmt: skip
    await memory.adjudicate([candidate], session_id=session)
    return episode.id


async def test_a_superseded_value_ranks_below_the_new_one_and_is_marked(tmp_path: Path) -> None:
    clock = Clock()
    config = MemoryConfig(use_judge=False)
    async with LongTermMemory(
        tmp_path, embedder=local_minilm(), config=config, clock=clock
    ) as memory:
        porto = await tell(memory, clock, "s1", "I live in Porto.", 1)
        clock.now += 60 * DAY
        lisbon = await tell(memory, clock, "s2", "I live in Lisbon now.", 2)
        (new,) = memory.facts()
        old = memory.get("fc1")
        assert old is not None and old.status == "superseded" and old.valid_to is not None

        hits = await memory.search("Where do I live?", 5)
        texts = [text(h) for h in hits]
        assert "Lisbon" in texts[0], texts  # the new value (its fact or what was said) first
        assert [h.episode.id for h in hits if isinstance(h, ScoredEpisode)].count(porto) == 1
        (stale,) = [h for h in hits if isinstance(h, ScoredEpisode) and h.episode.id == porto]
        assert not stale.current and stale.valid_to == old.valid_to
        assert stale.superseded_by == (new.id,)
        assert all(h.current for h in hits if h is not stale)

        current = await memory.search("Where do I live?", 5, current_only=True)
        assert "Lisbon" in text(current[0])
        assert not any("Porto" in text(h) for h in current)
        history = await memory.search("Where do I live?", 5, tiers=["episodes"])
        ids = [h.episode.id for h in history if isinstance(h, ScoredEpisode)]
        assert ids.index(lisbon) < ids.index(porto), ids  # episodes alone: the new one first
        assert "Porto" not in await memory.prefix("where the user lives")

    # The same after a restart: validity is derived from the ledger, not kept aside.
    async with LongTermMemory(
        tmp_path, embedder=local_minilm(), config=config, clock=clock
    ) as memory:
        hits = await memory.search("Where do I live?", 5, tiers=["episodes"])
        ids = [h.episode.id for h in hits if isinstance(h, ScoredEpisode)]
        assert ids.index(lisbon) < ids.index(porto), ids


@pytest.mark.parametrize("anyio_backend", ["asyncio"])  # the MCP SDK's in-memory transport
async def test_the_search_tools_show_what_holds_unless_asked_for_history(
    tmp_path: Path, anyio_backend: str
) -> None:
    clock = Clock()
    config = AgentConfig(memory=MemoryConfig(use_judge=False))
    async with Agent(tmp_path, ScriptedProvider([]), config=config) as agent:
        agent.memory.fact_store.clock = clock  # the 60 days pass on this clock
        porto = await tell(agent.memory, clock, "s1", "I live in Porto.", 1)
        clock.now += 60 * DAY
        await tell(agent.memory, clock, "s2", "I live in Lisbon now.", 2)
        async with Client(agent_mcp_server(agent)) as client:
            now = await client.call_tool("search_memory", {"query": "Where do I live?", "k": 10})
            assert now.structured_content is not None
            shown = now.structured_content["result"]
            assert "Lisbon" in shown[0]["text"]
            assert not any("Porto" in h["text"] for h in shown), shown
            asked = {"query": "Where do I live?", "k": 10, "history": True}
            then = await client.call_tool("search_memory", asked)
            assert then.structured_content is not None
            (stale,) = [h for h in then.structured_content["result"] if h["id"] == porto]
            assert stale["valid_to"] is not None and stale["superseded_by"]
