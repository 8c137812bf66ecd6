"""What a search reads and in what order: the facts' vectors from memory, the words
scored once the question is in onnxruntime (``xai/memory/_search.py``)."""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable
from pathlib import Path
from types import FrameType, SimpleNamespace
from typing import Any

import anyio
import numpy as np
import pytest

from xai.memory import (
    EpisodeCorpus,
    LocalMiniLM,
    LongTermMemory,
    MemoryConfig,
    RecallWeights,
    ScoredFact,
    _search,
    local_minilm,
)
from xai.memory._held import HeldVectors
from xai.memory._lexical import LexicalIndex
from xai.memory._search import _until
from xai.messages import Episode, MemoryCandidate

pytestmark = pytest.mark.anyio

SAID = [
    "The user's sister bakes sourdough bread on Sundays.",
    "The user is training for a marathon in Lisbon.",
    "The user keeps bees in the garden behind the house.",
    "The user is learning to play the cello.",
    "The user drives an old green Volvo.",
]


def _candidate(text: str, n: int) -> MemoryCandidate:
    return MemoryCandidate(text=text, confidence=0.8, evidence=(f"m{n}",), session_id=f"s{n}")


def _chroma_vectors(memory: LongTermMemory) -> dict[str, np.ndarray]:
    got: Any = memory.fact_store.index._collection.get(include=["embeddings"])  # type: ignore[union-attr]
    return {
        i: np.asarray(v, dtype=np.float32)
        for i, v in zip(got["ids"], got["embeddings"], strict=True)
    }


def _assert_held_as_in_chroma(memory: LongTermMemory, every_id: list[str]) -> None:
    stored = _chroma_vectors(memory)
    assert set(stored) == {f.id for f in memory.facts()}
    held, rows = memory.fact_store.index.stored(every_id)  # type: ignore[union-attr]
    assert sorted(held) == sorted(stored)  # retired facts are not held
    for fact_id, row in zip(held, rows, strict=True):
        chroma = stored[fact_id] / np.linalg.norm(stored[fact_id])
        assert float(row @ chroma) > 0.999  # packed rows: the same direction


async def test_the_vectors_an_index_holds_follow_its_writes_and_come_back_on_reopen(
    tmp_path: Path,
) -> None:
    config = MemoryConfig(use_judge=False)
    async with LongTermMemory(tmp_path, config=config) as memory:
        await memory.adjudicate([_candidate(t, n) for n, t in enumerate(SAID)])
        await memory.search("warm the index", k=1)
        ids = [f.id for f in memory.facts()]
        assert len(ids) == len(SAID)
        await memory.forget(ids[0])
        await memory.forget(ids[1])
        await memory.adjudicate([_candidate("The user collects vinyl records.", 9)])
        every_id = list(dict.fromkeys(ids + [f.id for f in memory.facts()]))
        await memory.fact_store.settle()  # (adjudication defers its index writes)
        _assert_held_as_in_chroma(memory, every_id)
    async with LongTermMemory(tmp_path, config=config) as memory:
        await memory.search("warm the index", k=1)
        _assert_held_as_in_chroma(memory, every_id)


class _Recording:
    """A chromadb collection that notes every ``get`` it is asked for."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.gets: list[dict[str, Any]] = []

    def get(self, *args: Any, **kwargs: Any) -> Any:
        self.gets.append(kwargs)
        return self.inner.get(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


async def test_a_search_reads_no_stored_vector_from_chromadb(tmp_path: Path) -> None:
    # Facts found by words alone take their cosine from the vectors the index holds:
    # fetching them from chromadb cost 1.7 ms a search at 100k facts. A depth of 2
    # leaves most of the five to the words.
    config = MemoryConfig(use_judge=False, recall=RecallWeights(depth=2))
    question = "old Lisbon house"  # "old" finds the Volvo by its words alone
    async with LongTermMemory(tmp_path, config=config) as memory:
        await memory.adjudicate([_candidate(t, n) for n, t in enumerate(SAID)])
        await memory.search("warm the index", k=1)
        index: Any = memory.fact_store.index
        by_words: list[str] = []
        stored = index.stored

        def noted(ids: list[str]) -> Any:
            found = stored(ids)
            by_words.extend(found[0])
            return found

        index.stored = noted
        chroma = _chroma_vectors(memory)
        recording = index._collection = _Recording(index._collection)
        hits = await memory.search(question, k=5)
    assert by_words and recording.gets == []
    asked = np.asarray(local_minilm().embed_query_sync(question))
    scores = {h.fact.id: h.score for h in hits if isinstance(h, ScoredFact)}
    for fact_id in by_words:
        cosine = float(chroma[fact_id] @ asked / np.linalg.norm(chroma[fact_id]))
        assert scores[fact_id] == pytest.approx(cosine, abs=1e-4)


def _noting_model(noted: Callable[[], object]) -> LocalMiniLM:
    """The offline model (no cache), calling ``noted`` as a question goes into onnxruntime."""
    model = LocalMiniLM(cache_size=0)
    session = model._query_session()

    class Noting:
        def run(self, *args: Any) -> Any:
            noted()
            return session.run(*args)

    model._query = Noting()
    return model


async def test_the_words_are_scored_once_the_question_is_in_onnxruntime(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Scoring the words holds the GIL: started first, it kept the worker thread from
    # reaching onnxruntime until it was done, and the embedding took that much longer.
    order: list[str] = []
    model = _noting_model(lambda: order.append("onnxruntime"))

    class NotingEvent(threading.Event):
        def set(self) -> None:
            order.append("running")  # before the words can start, however loaded
            super().set()

    monkeypatch.setattr(_search, "threading", SimpleNamespace(Event=NotingEvent))
    top = LexicalIndex.top

    def noted_top(self: LexicalIndex, *args: Any, **kwargs: Any) -> Any:
        order.append("words")
        return top(self, *args, **kwargs)

    monkeypatch.setattr(LexicalIndex, "top", noted_top)
    # However loaded the machine: the order is what is checked, not the 2 ms bound.
    monkeypatch.setattr(_search, "_HANDOFF_S", 60.0)
    async with LongTermMemory(
        tmp_path, embedder=model, config=MemoryConfig(use_judge=False)
    ) as memory:
        await memory.adjudicate([_candidate(t, n) for n, t in enumerate(SAID)])
        for question in ("who bakes bread?", "what does the user drive?", "bees"):
            order.clear()
            assert await memory.search(question, k=1)
            assert order[0] == "running" and "onnxruntime" in order, question
            assert order.index("running") < order.index("words"), question


async def test_the_question_says_when_it_is_running_even_when_cached_or_failing() -> None:
    model = local_minilm()
    for _ in range(2):  # the second time from the cache: nothing runs
        running = threading.Event()
        vector = await model.embed_query("what does the user drive?", running)
        assert running.is_set() and len(vector) == model.dimension

    broken = LocalMiniLM(cache_size=0)

    class Failing:
        def run(self, *args: Any) -> Any:
            raise RuntimeError("the model broke")

    broken._load()
    broken._query = Failing()
    running = threading.Event()
    with pytest.raises(RuntimeError, match="the model broke"):
        await broken.embed_query("anything", running)
    assert running.is_set()


async def test_waiting_for_an_embedding_that_never_starts_ends() -> None:
    # A worker pool kept busy elsewhere: the words are scored anyway, a little later.
    with anyio.fail_after(30):
        await _until(threading.Event(), 0.01)


def test_vectors_held_packed_keep_their_direction() -> None:
    rng = np.random.default_rng(7)
    vectors = rng.standard_normal((200, 384)).astype(np.float32)
    vectors[0] = 0.0  # a zero vector stays zero, not NaN
    vectors[1, :] = 0.0
    vectors[1, 5] = 3.0  # all of it on one axis: the largest component there is
    held = HeldVectors()
    ids = [f"f{n}" for n in range(len(vectors))]
    held.put(ids, vectors)
    got_ids, rows = held.rows(["missing", *ids])
    assert got_ids == ids
    unit = vectors / np.clip(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12, None)
    assert float(np.abs(rows - unit).max()) <= 0.5 / 32767 + 1e-7
    assert not rows[0].any() and rows[1, 5] == 1.0
    held.drop(ids[:100])
    used = held._used
    held.put(["g"], vectors[150:151])
    assert held._used == used  # a freed row is reused
    got_ids, rows = held.rows(["f0", "g"])
    assert got_ids == ["g"] and np.allclose(rows[0], unit[150], atol=1e-4)
    with pytest.raises(ValueError, match="same length"):
        held.put(["h"], np.ones((1, 3)))


async def test_the_hnsw_queries_follow_the_embedding_without_a_trip_to_the_loop(
    tmp_path: Path,
) -> None:
    # The facts' query runs inside the worker thread's call that embedded the question,
    # the episodes' one beside it: going back to the event loop between them cost 0.4 ms
    # a search. Checked by the frames: xai's frame that called onnxruntime must still be
    # on the stack of the facts' query.
    embedding: list[FrameType] = []
    model = _noting_model(lambda: embedding.extend(_xai_frames(sys._getframe(2))))
    async with LongTermMemory(
        tmp_path, embedder=model, config=MemoryConfig(use_judge=False)
    ) as memory:
        await memory.adjudicate([_candidate(t, n) for n, t in enumerate(SAID)])
        await memory.record_episodes(_episodes())
        await memory.search("warm the indexes", k=1)
        facts, episodes = _Noted(memory.fact_store.index), _Noted(memory._episode_index)
        assert await memory.search("what does the user drive?", k=3)
    assert embedding and len(facts.stacks) == 1 and len(episodes.stacks) == 1
    assert set(map(id, embedding)) & set(map(id, facts.stacks[0]))
    assert facts.threads != episodes.threads


def _xai_frames(frame: FrameType | None) -> list[FrameType]:
    """The frames of xai's own code on a stack, innermost first."""
    out = []
    while frame is not None:
        if "/xai/" in frame.f_code.co_filename:
            out.append(frame)
        frame = frame.f_back
    return out


class _Noted:
    """An index whose chromadb collection notes the stack and thread of every query."""

    def __init__(self, holder: Any) -> None:
        self.inner = holder._collection
        holder._collection = self
        self.stacks: list[list[FrameType]] = []
        self.threads: set[int] = set()

    def query(self, *args: Any, **kwargs: Any) -> Any:
        self.stacks.append(_xai_frames(sys._getframe(1)))
        self.threads.add(threading.get_ident())
        return self.inner.query(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def _episodes() -> list[Episode]:
    said = ["I finally fixed the Volvo's gearbox.", "Which garage did you use?"]
    return [
        Episode(
            id=f"e{n}",
            session_id="s9",
            turn=n,
            seq=n,
            speaker="user" if n % 2 == 0 else "assistant",
            origin="user" if n % 2 == 0 else "assistant",
            text=text,
            at=1_700_000_000.0 + n,
        )
        for n, text in enumerate(said)
    ]


def test_an_empty_corpus_has_an_empty_pool() -> None:
    assert EpisodeCorpus().pool("anything", np.ones(384), RecallWeights()) == []


async def test_a_failed_facts_query_waits_for_the_episodes_query(tmp_path: Path) -> None:
    # Both HNSW queries run in threads; when the facts' one fails, the search must not
    # return (and let its caller close the store) while the episodes' one still runs.
    episodes_done = threading.Event()
    facts_failed = threading.Event()

    class Failing:
        def __init__(self, inner: Any) -> None:
            self.inner = inner

        def query(self, *args: Any, **kwargs: Any) -> Any:
            facts_failed.set()
            raise RuntimeError("the facts' index broke")

        def __getattr__(self, name: str) -> Any:
            return getattr(self.inner, name)

    class Slow(Failing):
        def query(self, *args: Any, **kwargs: Any) -> Any:
            facts_failed.wait(timeout=30)  # still running when the facts' query has failed
            found = self.inner.query(*args, **kwargs)
            episodes_done.set()
            return found

    async with LongTermMemory(tmp_path, config=MemoryConfig(use_judge=False)) as memory:
        await memory.adjudicate([_candidate(t, n) for n, t in enumerate(SAID)])
        await memory.record_episodes(_episodes())
        await memory.search("warm the indexes", k=1)
        facts: Any = memory.fact_store.index
        episodes: Any = memory._episode_index
        facts._collection = Failing(facts._collection)
        episodes._collection = Slow(episodes._collection)
        with pytest.raises(RuntimeError, match="the facts' index broke"):
            await memory.search("what does the user drive?", k=3)
        assert episodes_done.is_set()
