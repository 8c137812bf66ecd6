"""Search over facts and episodes: the episodes' index (kept, repaired, pruned) and the cues."""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.memory_helpers import text_of
from tests.session_helpers import extraction_responder, is_side_request, last_content
from xai.agent import Agent, AgentConfig
from xai.agent._tools import render_hit
from xai.memory import LongTermMemory, MemoryConfig, ScoredEpisode, ScoredFact
from xai.messages import Episode, MemoryCandidate
from xai.providers import OpenAIProvider
from xai.testing import OpenAIWireServer, Reply

pytestmark = pytest.mark.anyio

DAY = 86_400.0


def _at(day: str) -> float:
    return dt.datetime.fromisoformat(day).replace(tzinfo=dt.UTC).timestamp()


def _session(session_id: str, day: str, lines: list[tuple[str, str]]) -> list[Episode]:
    start = _at(day)
    return [
        Episode(
            id=f"{session_id}:{n}",
            session_id=session_id,
            turn=n // 2 + 1,
            seq=n,
            origin="assistant" if speaker == "assistant" else "user",
            speaker=speaker,
            text=text,
            at=start + 60 * n,
        )
        for n, (speaker, text) in enumerate(lines)
    ]


SPRING = _session(
    "spring",
    "2023-05-08T10:00:00",
    [
        ("Ana", "I started a pottery class this week."),
        ("assistant", "That sounds relaxing. What are you making?"),
        ("Ana", "A blue bowl for my mother."),
        ("assistant", "She will love it."),
    ],
)
SUMMER = _session(
    "summer",
    "2023-07-20T10:00:00",
    [
        ("Ben", "I went to a pottery class again."),
        ("assistant", "Nice, is it the same teacher?"),
        ("Ben", "Yes, and I made a green vase."),
        ("assistant", "Lovely colour."),
    ],
)


async def test_search_finds_episodes_and_facts_and_a_reopened_memory_answers_the_same(
    tmp_path: Path,
) -> None:
    queries = ["pottery class", "What did Ana make in May 2023?", "green vase"]
    async with LongTermMemory(tmp_path, config=MemoryConfig(use_judge=False)) as memory:
        assert await memory.record_episodes([*SPRING, *SUMMER]) == 8
        await memory.adjudicate(
            [MemoryCandidate(text="Ana is learning pottery.", evidence=("spring:0",))]
        )
        for day, said in (("8 May, 2023", SPRING[0]), ("20 July, 2023", SUMMER[0])):
            (top,) = await memory.search(f"the pottery class on {day}", k=1, tiers=["episodes"])
            assert isinstance(top, ScoredEpisode) and top.episode == said  # by the date
        assert any(isinstance(h, ScoredFact) for h in await memory.search("pottery", k=10))
        only = await memory.search("pottery", k=10, tiers=["episodes"])
        assert only and all(isinstance(h, ScoredEpisode) for h in only)
        before = [await memory.search(q, k=5) for q in queries]
    async with LongTermMemory(tmp_path, config=MemoryConfig(use_judge=False)) as memory:
        assert [await memory.search(q, k=5) for q in queries] == before


async def test_the_episodes_index_is_repaired_from_the_jsonl_on_open(tmp_path: Path) -> None:
    import chromadb
    from chromadb.config import Settings

    async with LongTermMemory(tmp_path) as memory:
        await memory.record_episodes(SPRING)
        before = await memory.search("blue bowl", k=2)
    client = chromadb.PersistentClient(
        path=str(tmp_path / "index"), settings=Settings(anonymized_telemetry=False)
    )
    client.delete_collection("episodes")
    async with LongTermMemory(tmp_path) as memory:
        assert await memory.search("blue bowl", k=2) == before
        assert len(memory._episode_index.corpus) == 4  # type: ignore[union-attr]
    # Episodes recorded while the memory was closed are indexed on the next open.
    closed = LongTermMemory(tmp_path)
    await closed.record_episodes(SUMMER)
    closed.episodes.close()
    async with LongTermMemory(tmp_path) as memory:
        assert text_of((await memory.search("green vase", k=1))[0]) == (
            "Yes, and I made a green vase."
        )


async def test_retention_prunes_the_oldest_episodes_and_nothing_else(tmp_path: Path) -> None:
    now = [_at("2023-07-21T00:00:00")]
    config = MemoryConfig(max_episodes=6, episode_retention_days=90.0, use_judge=False)
    async with LongTermMemory(tmp_path, config=config, clock=lambda: now[0]) as memory:
        await memory.record_episodes([*SPRING, *SUMMER])
        assert [e.id for e in memory.episodes] == [e.id for e in [*SPRING[2:], *SUMMER]]
        now[0] += 30 * DAY  # spring is now more than 90 days old
        await memory.record_episodes([])
        await memory.record_episodes(
            _session("autumn", "2023-08-20T10:00:00", [("Ana", "Back from holiday.")])
        )
        kept = [e.id for e in memory.episodes]
        assert kept == [*(e.id for e in SUMMER), "autumn:0"]
        hits = await memory.search("blue bowl for my mother", k=10)
        assert all(
            not h.episode.id.startswith("spring") for h in hits if isinstance(h, ScoredEpisode)
        )
    async with LongTermMemory(tmp_path, config=config, clock=lambda: now[0]) as memory:
        assert [e.id for e in memory.episodes] == kept  # the file was rewritten


def _answers(body: Mapping[str, Any]) -> Reply | None:
    if is_side_request(body):
        return None
    said = last_content(body)
    if "sleep" in said:
        return Reply(text="I recommend chamomile tea an hour before bed.")
    return Reply(text="Noted.")


async def test_what_you_recommended_is_found_in_the_assistants_own_episodes(
    tmp_path: Path, openai_server: OpenAIWireServer, provider: OpenAIProvider
) -> None:
    openai_server.script.add_responder(extraction_responder)
    openai_server.script.add_responder(_answers)
    async with Agent(tmp_path, provider, config=AgentConfig(memory_tool=False)) as agent:
        session = await agent.open_session("evening")
        await session.send("Ben recommended a thriller film to me.")
        await session.send("I can't sleep well lately.")
        await session.send("My sister recommended a new bakery too.")
        await session.close()
        (top, *_) = await agent.memory.search("What did you recommend last time?", k=3)
        assert isinstance(top, ScoredEpisode) and top.episode.origin == "assistant"
        assert top.episode.text == "I recommend chamomile tea an hour before bed."
        shown = render_hit(top)
        assert shown["by"] == "you (the assistant)" and shown["when"].endswith("UTC")


class _Gated:
    """The real embedder, held at a gate while ``hold`` is set (to cancel mid-embedding,
    or to do something else meanwhile and ``release`` it)."""

    def __init__(self) -> None:
        from xai.memory import local_minilm

        self.inner = local_minilm()
        self.name = self.inner.name
        self.dimension = self.inner.dimension
        self.hold = False
        self.entered = anyio.Event()
        self._go = anyio.Event()

    def release(self) -> None:
        self.hold = False
        self._go.set()

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        if self.hold:
            self.entered.set()
            await self._go.wait()
        return await self.inner.embed(texts)


async def test_recording_never_waits_on_the_embedder_and_a_cancelled_indexing_is_resumed(
    tmp_path: Path,
) -> None:
    embedder = _Gated()
    async with LongTermMemory(tmp_path, embedder=embedder) as memory:
        embedder.hold = True
        assert await memory.record_episodes(SPRING) == 4  # on disk, though nothing embeds
        async with anyio.create_task_group() as group:
            group.start_soon(memory.index_episodes)
            await embedder.entered.wait()
            group.cancel_scope.cancel()
        embedder.hold = False
        (top,) = await memory.search("blue bowl", k=1, tiers=["episodes"])  # indexes first
        assert text_of(top) == "A blue bowl for my mother."


async def test_episodes_recorded_while_the_index_opens_are_searchable(tmp_path: Path) -> None:
    """The index opens (here on the first search) by repairing itself from the episodes on
    disk. Episodes recorded during the repair were neither in what it read nor queued
    (there was no index yet to queue them in): unsearchable until the next restart."""
    closed = LongTermMemory(tmp_path)
    await closed.record_episodes(SPRING)  # while closed: the repair embeds them
    closed.episodes.close()
    embedder = _Gated()
    async with LongTermMemory(tmp_path, embedder=embedder, lazy_index=True) as memory:
        embedder.hold = True
        async with anyio.create_task_group() as group:
            group.start_soon(memory.index_episodes)  # opens the index and repairs it
            await embedder.entered.wait()
            assert await memory.record_episodes(SUMMER) == 4
            embedder.release()
        (top,) = await memory.search("green vase", k=1, tiers=["episodes"])
        assert text_of(top) == "Yes, and I made a green vase."


async def test_a_store_read_page_by_page_reopens_without_repairs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """chromadb 1.5 cannot ``get`` 100,000 rows at once (too many SQL variables), so the
    indexes are read in pages on open; here pages of 3 rows."""
    import xai.memory._index as index_module

    monkeypatch.setattr(index_module, "_PAGE", 3)
    async with LongTermMemory(tmp_path, config=MemoryConfig(use_judge=False)) as memory:
        await memory.record_episodes([*SPRING, *SUMMER])
        for text in (
            "Ana owns a pottery wheel.",
            "Ben collects stamps from Peru.",
            "The user's sister is a nurse in Oslo.",
            "Carla runs marathons every spring.",
            "The blue car was sold last winter.",
            "Dan is allergic to peanuts.",
            "Eve plays the cello in a quartet.",
        ):
            await memory.adjudicate([MemoryCandidate(text=text, evidence=("m",))])
        before = await memory.search("pottery", k=10)
    async with LongTermMemory(tmp_path, config=MemoryConfig(use_judge=False)) as memory:
        assert memory.fact_store.index is not None and await memory.fact_store.index.count() == 7
        assert len(memory._episode_index.corpus) == 8  # type: ignore[union-attr]
        assert await memory.search("pottery", k=10) == before
    assert not (tmp_path / "index.corrupt").exists()
