"""The index snapshot (``xai/memory/_snapshot.py``): a large memory opens from it, and a stale,
damaged or half-written one never changes what the memory finds."""

from __future__ import annotations

import io
import random
import sys
from collections.abc import Iterator
from pathlib import Path

import anyio
import numpy as np
import pytest
from structlog.testing import capture_logs

from tests.crash_helpers import kill_when
from tests.test_memory import candidate
from xai.logs import configure_logging
from xai.memory import (
    LexicalIndex,
    LongTermMemory,
    MemoryHit,
    ScoredEpisode,
    ScoredFact,
    _snapshot,
    local_minilm,
)
from xai.memory._corpus import EpisodeCorpus
from xai.memory._store import IndexStore
from xai.messages import Episode, MemoryCandidate

pytestmark = [pytest.mark.anyio, pytest.mark.backend_agnostic]

QUESTIONS = ("where does the user live?", "what did Ana say about her dog?", "hobbies")


@pytest.fixture
def always(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """A snapshot for every memory, however small (and its notes logged)."""
    monkeypatch.setattr(_snapshot, "MIN_ITEMS", 0)
    configure_logging("console", level="info", stream=io.StringIO())
    yield
    configure_logging("console", level="warning", stream=sys.stderr)


def episode(n: int, text: str, session: str = "s1") -> Episode:
    return Episode(
        id=f"e{session}-{n}",
        session_id=session,
        turn=n // 2 + 1,
        seq=n,
        origin="assistant" if n % 2 else "user",
        speaker="assistant" if n % 2 else "Ana",
        text=text,
        at=1_700_000_000.0 + n,
    )


def said(hit: MemoryHit) -> tuple[str, str, float]:
    if isinstance(hit, ScoredFact):
        return ("fact", hit.fact.id, round(hit.score, 4))
    assert isinstance(hit, ScoredEpisode)
    return ("episode", hit.episode.id, round(hit.score, 4))


async def found(directory: Path) -> tuple[list[list[tuple[str, str, float]]], list[str]]:
    """What a memory opened on ``directory`` finds, and the log events of its open."""
    with capture_logs() as logs:
        async with LongTermMemory(directory) as memory:
            hits = [[said(h) for h in await memory.search(q, k=6)] for q in QUESTIONS]
    return hits, [str(entry["event"]) for entry in logs]


async def truth(directory: Path) -> list[list[tuple[str, str, float]]]:
    """What it finds read from chromadb alone (the snapshot moved aside and put back)."""
    path = directory / _snapshot.SNAPSHOT_FILE
    aside = path.with_name("aside")
    path.rename(aside)
    try:
        async with LongTermMemory(directory) as memory:
            return [[said(h) for h in await memory.search(q, k=6)] for q in QUESTIONS]
    finally:
        (directory / _snapshot.SNAPSHOT_FILE).unlink(missing_ok=True)
        aside.rename(path)


async def filled(directory: Path) -> None:
    async with LongTermMemory(directory) as memory:
        rex = MemoryCandidate(
            text="Ana has a dog called Rex.", evidence=("es1-2",), session_id="s1"
        )
        await memory.adjudicate(
            [
                candidate("The user lives in Lisbon."),
                candidate("The user plays the cello on Sundays."),
                rex,
            ]
        )
        await memory.record_episodes(
            [
                episode(0, "I moved to Lisbon last spring."),
                episode(1, "Lisbon is lovely in May."),
                episode(2, "My dog Rex chewed my cello bow!"),
                episode(3, "Dogs do love wood."),
            ]
        )
        await memory.index_episodes()


async def test_a_reopened_memory_opens_from_its_snapshot_and_finds_the_same(
    tmp_path: Path, always: None
) -> None:
    await filled(tmp_path)
    assert (tmp_path / _snapshot.SNAPSHOT_FILE).exists()
    hits, events = await found(tmp_path)
    assert "memory.snapshot_unused" not in events and "memory.snapshot_stale" not in events
    assert "memory.episodes_indexed" not in events and "memory.index_repaired" not in events
    assert "memory.snapshot_written" not in events  # opened exactly as it held: not rewritten
    assert hits == await truth(tmp_path)
    assert any(kind == "episode" for kind, _, _ in hits[1]) and hits[0]


async def test_a_stale_snapshot_is_brought_up_to_date_from_the_ledger_and_the_index(
    tmp_path: Path, always: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    await filled(tmp_path)
    before = (tmp_path / _snapshot.SNAPSHOT_FILE).read_bytes()
    monkeypatch.setattr(_snapshot, "MIN_ITEMS", 10**9)  # as if killed before the next one
    async with LongTermMemory(tmp_path) as memory:
        dog = next(f for f in memory.facts() if "Rex" in f.text)
        await memory.forget(dog.id, "asked to", scope="evidence")
        await memory.adjudicate([candidate("The user keeps bees on the roof.", "s2")])
        await memory.record_episodes([episode(0, "The bees swarmed on Tuesday.", "s2")])
        await memory.index_episodes()
    assert (tmp_path / _snapshot.SNAPSHOT_FILE).read_bytes() == before  # stale now
    monkeypatch.setattr(_snapshot, "MIN_ITEMS", 0)
    hits, events = await found(tmp_path)
    assert "memory.snapshot_unused" not in events and "memory.snapshot_stale" not in events
    assert hits == await truth(tmp_path)
    ids = {i for row in hits for _, i, _ in row}
    assert dog.id not in ids and "es1-2" not in ids  # forgotten with its evidence
    async with LongTermMemory(tmp_path) as memory:
        bees = [said(h) for h in await memory.search("bees swarming on the roof", k=3)]
    assert {"es2-0"} <= {i for _, i, _ in bees}


@pytest.mark.parametrize("damage", ["flipped", "truncated", "ledger", "episodes"])
async def test_a_damaged_or_outdated_snapshot_is_not_used(
    tmp_path: Path, always: None, damage: str
) -> None:
    await filled(tmp_path)
    path = tmp_path / _snapshot.SNAPSHOT_FILE
    data = bytearray(path.read_bytes())
    if damage == "flipped":
        data[-7] ^= 0x40  # a vector's byte
        path.write_bytes(bytes(data))
    elif damage == "truncated":
        path.write_bytes(bytes(data[: len(data) // 2]))
    else:  # the truth rewritten in place, the same length: restored from another copy, say
        truth_file = tmp_path / ("ledger.jsonl" if damage == "ledger" else "episodes.jsonl")
        text = truth_file.read_bytes()
        truth_file.write_bytes(text.replace(b"Lisbon", b"Lisboa", 1))
    hits, events = await found(tmp_path)
    damaged = damage in ("flipped", "truncated")
    assert ("memory.snapshot_damaged" if damaged else "memory.snapshot_unused") in events
    path.unlink()
    assert hits == (await found(tmp_path))[0]


async def test_a_kill_while_the_snapshot_is_written_leaves_the_old_one(
    tmp_path: Path, always: None
) -> None:
    await filled(tmp_path)
    path = tmp_path / _snapshot.SNAPSHOT_FILE
    before = path.read_bytes()
    frozen = tmp_path / "frozen"
    await anyio.to_thread.run_sync(
        lambda: kill_when("memory_snapshot_child", [str(tmp_path)], frozen.exists)
    )
    partial = tmp_path / f".{_snapshot.SNAPSHOT_FILE}.tmp"
    assert partial.exists()  # killed in the middle of writing it
    assert path.read_bytes() == before  # the old snapshot, whole
    hits, events = await found(tmp_path)
    assert "memory.snapshot_unused" not in events and "memory.snapshot_stale" not in events
    assert hits == await truth(tmp_path)
    ids = {i for row in hits for _, i, _ in row}
    assert "es3-0" in ids or "es3-1" in ids  # what the child recorded is found
    assert not partial.exists() or path.read_bytes() != before  # rewritten at that close


async def test_an_index_changed_behind_the_memory_s_back_is_read_whole(
    tmp_path: Path, always: None
) -> None:
    await filled(tmp_path)
    store = IndexStore.local(tmp_path / "index")
    try:
        store.collection("episodes", local_minilm()).delete(ids=["es1-0"])
    finally:
        store.close()
    hits, events = await found(tmp_path)
    assert "memory.snapshot_stale" in events and "memory.episodes_indexed" in events
    assert hits == await truth(tmp_path)


async def test_a_memory_of_facts_alone_or_of_episodes_alone_has_a_snapshot_too(
    tmp_path: Path, always: None
) -> None:
    async with LongTermMemory(tmp_path / "facts") as memory:
        await memory.adjudicate([candidate("The user lives in Lisbon.")])
    async with LongTermMemory(tmp_path / "episodes") as memory:
        await memory.record_episodes([episode(0, "I moved to Lisbon last spring.")])
        await memory.index_episodes()
    for part in ("facts", "episodes"):
        assert (tmp_path / part / _snapshot.SNAPSHOT_FILE).exists()
        hits, events = await found(tmp_path / part)
        assert "memory.snapshot_damaged" not in events and "memory.snapshot_unused" not in events
        assert hits == await truth(tmp_path / part) and hits[0]


def test_the_lexical_index_built_at_once_scores_as_one_built_document_by_document() -> None:
    rng = random.Random(3)
    words = [f"w{i}" for i in range(60)] + ["running", "runs", "ran", "the", "cats", "cat"]
    documents = [(f"d{i}", " ".join(rng.choices(words, k=rng.randint(0, 12)))) for i in range(400)]
    documents += [("d5", "a replaced text with cats")]  # a repeated id: the last text counts
    one_by_one = LexicalIndex()
    for doc_id, text in documents:
        one_by_one.set(doc_id, text)
    at_once = LexicalIndex.of(documents)
    for index in (one_by_one, at_once):  # and both change alike afterwards
        for i in range(0, 400, 7):
            index.discard(f"d{i}")
        index.set("d3", "cats running w1 w1 w2")
        index.set("new", "w7 w8 ran")
    for query in ("cat running", "w1 w2 w3", "w7 ran", "nothing here", " ".join(words)):
        assert np.array_equal(one_by_one.scores(query), at_once.scores(query))
        assert one_by_one.top(query, 10) == at_once.top(query, 10)


def test_a_corpus_loaded_at_once_pools_as_one_filled_episode_by_episode() -> None:
    from xai.memory._pool import RecallWeights

    rng = np.random.default_rng(5)
    texts = ["I like tea?", "Rex barked at the mailman.", "We went to Porto in May.", "ok"]
    episodes = [episode(n % 9, f"{texts[n % 4]} {n}", session=f"s{n // 9}") for n in range(90)]
    vectors = rng.standard_normal((90, 16)).astype(np.float32)
    added, loaded = EpisodeCorpus(), EpisodeCorpus()
    for start in range(0, 90, 20):
        added.add(episodes[start : start + 20], vectors[start : start + 20])
    from xai.memory._held import pack

    loaded.load(episodes, pack(vectors))
    extra = rng.standard_normal((1, 16))
    for corpus in (added, loaded):
        corpus.discard(episodes[4].id)
        corpus.add([episode(99, "Porto again?", "s1")], extra)
    assert added.packed()[0] == loaded.packed()[0]
    weights = RecallWeights()
    query = rng.standard_normal(16).astype(np.float32)
    for words in ("Porto in May", "tea", "Rex"):
        a = added.pool(words, query, weights)
        b = loaded.pool(words, query, weights)
        assert [(p.id, p.dense, p.lexical) for p in a] == [(p.id, p.dense, p.lexical) for p in b]
