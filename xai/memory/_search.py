"""``LongTermMemory.search``'s candidate gathering: facts and episodes into one pool, ranked once.

Facts: the ``depth`` nearest by cosine (chromadb) and the ``depth`` best by BM25,
with each one's other score (a fact found by words gets its cosine from its stored
vector). Episodes: the ``depth`` nearest (chromadb HNSW), the best by BM25 and
their session neighbours (``EpisodeCorpus.columns``). ``_recall.rank_apart`` fuses
the lot.

The work is ordered so that little waits: the query is embedded in a worker
thread while this thread scores the words (both BM25 indexes), and the two HNSW
queries start side by side as soon as the vector is there (chromadb releases the
GIL while it searches, and two collections are searched in parallel). With an
embedder that can embed in the calling thread (``EmbedQuestion.blocking``: the
local model), the worker thread goes straight on to the facts' query and hands the
episodes' one to a side thread: no trip back to the event loop in between, which
cost 0.4 ms a search. The facts
found by words take their cosine from the vectors the index holds in memory.
What is computed is the same as doing it all in turn.

The words wait until the embedding has entered onnxruntime (``EmbedQuestion``'s
``running``; the loop is not blocked meanwhile): scoring them is Python that holds
the GIL for about 1.3 ms at 100k facts and episodes, and a worker thread that has
not yet reached onnxruntime could not start until they were done (5.3 ms for the
embedding instead of 3.4).
"""

from __future__ import annotations

import threading
import time
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor, wait
from contextlib import asynccontextmanager
from typing import Literal, TypeAlias

import anyio
import numpy as np
from anyio.abc import TaskGroup

from xai.memory._embeddings import BlockingQuestion, EmbedQuestion
from xai.memory._episode_index import EpisodeIndex
from xai.memory._episodes import EpisodeStore
from xai.memory._index import VectorIndex, cosines
from xai.memory._lexical import LexicalIndex
from xai.memory._recall import PoolItem, RecallWeights, rank, rank_apart
from xai.memory._types import Fact, MemoryHit, ScoredEpisode, ScoredFact
from xai.memory._validity import EpisodeValidity, current_first

__all__ = ["SearchTier", "gather_and_rank", "search_hits"]

_HANDOFF_S = 0.002
"""How long the words wait for the embedding to start (a worker thread starts in about
0.3 ms; one kept waiting by a busy pool is not waited for)."""

SearchTier: TypeAlias = Literal["L1", "L2", "episodes"]
"""What ``search`` may return: facts of a tier, or episodes."""


class _Gathered:
    """What the gathering finds: the query's vector, the facts' BM25 top, the episodes'
    BM25 scores and top, and the nearest facts and episodes by meaning."""

    def __init__(self) -> None:
        self.vector = np.zeros(0, dtype=np.float32)
        self.fact_words: dict[str, float] = {}
        self.episode_words: tuple[np.ndarray, list[str]] | None = None
        self.fact_nearest: list[tuple[str, float]] = []
        self.episode_nearest: list[str] = []


async def gather_and_rank(
    query: str,
    embed: EmbedQuestion,
    k: int,
    *,
    facts: Mapping[str, Fact],
    index: VectorIndex,
    lexicon: LexicalIndex,
    episodes: EpisodeIndex | None,
    tiers: Sequence[SearchTier] | None,
    weights: RecallWeights,
) -> tuple[list[tuple[PoolItem, float]], np.ndarray]:
    """The ``k`` best facts and episodes for ``query`` and their fused scores, best first;
    and the query's vector."""
    fact_tiers = [t for t in tiers if t != "episodes"] if tiers else None
    want_facts = fact_tiers is None or bool(fact_tiers)
    corpus = episodes.corpus if episodes is not None else None
    want_episodes = corpus is not None and bool(len(corpus)) and (not tiers or "episodes" in tiers)
    depth = weights.depth

    def wanted(fact_id: str) -> bool:
        # The state, not chromadb, is the truth: during an adjudication batch the index
        # still holds facts just retired (or re-tiered) until the batch ends.
        fact = facts.get(fact_id)
        return (
            fact is not None
            and fact.status == "active"
            and (not fact_tiers or fact.tier in fact_tiers)
        )

    got = _Gathered()

    async def nearest_facts() -> None:
        got.fact_nearest = await index.nearest(got.vector.tolist(), depth, tiers=fact_tiers)

    async def nearest_episodes(index: EpisodeIndex) -> None:
        got.episode_nearest = await index.nearest(got.vector.tolist(), depth)

    async def by_meaning(group: TaskGroup) -> None:
        if embed.blocking is not None:
            found = await anyio.to_thread.run_sync(blocking_by_meaning, embed.blocking)
            got.vector, got.fact_nearest, got.episode_nearest = found
            return
        got.vector = np.asarray(await embed(query, running), dtype=np.float32)
        if want_episodes and episodes is not None:
            group.start_soon(nearest_episodes, episodes)
        if want_facts:
            await nearest_facts()

    def blocking_by_meaning(
        blocking: BlockingQuestion,
    ) -> tuple[np.ndarray, list[tuple[str, float]], list[str]]:
        vector = blocking(query, running)
        side = None
        if want_episodes and episodes is not None:  # side by side with the facts' query
            side = _side_threads().submit(episodes.nearest_sync, vector, depth)
        try:
            nearest = index.nearest_sync(vector, depth, tiers=fact_tiers) if want_facts else []
        finally:  # a failed facts' query still waits for the episodes' one: none outlives us
            if side is not None:
                wait([side])
        return np.asarray(vector, dtype=np.float32), nearest, side.result() if side else []

    running = threading.Event()
    async with _one_error(), anyio.create_task_group() as group:
        group.start_soon(by_meaning, group)
        await _until(running, _HANDOFF_S)  # the question is in onnxruntime: score the words
        if want_facts:
            keep = wanted if fact_tiers else None
            got.fact_words = dict(lexicon.top(query, depth, keep=keep))
        if want_episodes and corpus is not None:
            got.episode_words = corpus.words(query, weights)
    pool = _fact_pool(facts, index, got, wanted) if want_facts else []
    if not want_episodes or corpus is None:
        return rank(query, pool, weights, k), got.vector
    episode_pool = corpus.columns(
        query, got.vector, weights, nearest=got.episode_nearest, words=got.episode_words
    )
    return rank_apart(query, pool, episode_pool, weights, k), got.vector


def _fact_pool(
    facts: Mapping[str, Fact], index: VectorIndex, got: _Gathered, wanted: Callable[[str], bool]
) -> list[PoolItem]:
    """The facts found by meaning (with chromadb's cosine), then those found by words
    alone (their cosine from the vectors the index holds), each with its BM25 score."""
    dense = dict(got.fact_nearest)
    ids, matrix = index.stored([i for i in got.fact_words if i not in dense])
    if ids:
        dense.update(zip(ids, cosines(matrix, got.vector).tolist(), strict=True))
    return [
        PoolItem(
            id=i,
            kind="fact",
            dense=cosine,
            lexical=got.fact_words.get(i, 0.0),
            text=facts[i].text,
            evidence=facts[i].evidence,
        )
        for i, cosine in dense.items()
        if wanted(i)
    ]


async def search_hits(
    query: str,
    embed: EmbedQuestion,
    k: int,
    *,
    facts: Mapping[str, Fact],
    index: VectorIndex,
    lexicon: LexicalIndex,
    episodes: EpisodeStore,
    episode_index: EpisodeIndex | None,
    tiers: Sequence[SearchTier] | None,
    weights: RecallWeights,
    validity: EpisodeValidity | None = None,
    current_only: bool = False,
) -> list[MemoryHit]:
    """``gather_and_rank``'s items as hits: each fact or episode with its cosine similarity.
    With ``validity`` (some episodes are stale), ranked deeper by ``_STALE_DEPTH`` and
    reordered so that each stale episode comes below what replaced it (``current_first``)."""
    stale = validity is not None and bool(validity.stale)
    # (withdrawn episodes leave the index when forgotten; the filter covers the moment
    # between the ledger's decision and the index's removal)
    depth = k + _STALE_DEPTH if stale else k
    ranked, vector = await gather_and_rank(
        query, embed, depth, facts=facts, index=index, lexicon=lexicon,
        episodes=episode_index, tiers=tiers, weights=weights,
    )  # fmt: skip
    hits: list[MemoryHit] = []
    for item, _ in ranked:
        if item.kind == "fact":
            hits.append(ScoredFact(facts[item.id], item.dense))
        elif (episode := episodes.get(item.id)) is not None and (
            validity is None or episode.id not in validity.withdrawn
        ):
            hits.append(ScoredEpisode(episode, item.dense))
    if validity is None or not stale:
        return hits[:k]

    def score(episode_id: str) -> float:
        corpus = episode_index.corpus if episode_index is not None else None
        if corpus is None or episode_id not in corpus:
            return 0.0
        return float(cosines(corpus.vectors([episode_id]), vector)[0])

    return current_first(
        hits, validity, k, current_only=current_only, episode=episodes.get, score=score
    )


_STALE_DEPTH = 20
"""Hits ranked beyond ``k`` when some episodes are stale: room for the ones moved below
their successors, or left out (``current_only``)."""


_side: ThreadPoolExecutor | None = None
_side_lock = threading.Lock()


def _side_threads() -> ThreadPoolExecutor:
    """The threads a search's second HNSW query runs on, beside the worker thread that
    embedded the question and runs the first: process-wide, each made when no idle one
    is left (at most 16; a search waits for its query to end, even when the first one
    failed)."""
    global _side
    with _side_lock:
        if _side is None:
            _side = ThreadPoolExecutor(max_workers=16, thread_name_prefix="xai-memory-search")
        return _side


async def _until(event: threading.Event, seconds: float) -> None:
    """Let the loop run until ``event`` is set by another thread, for ``seconds`` at most.

    The first ``_FREE_TURNS`` turns of the loop only yield: anyio takes a few turns to hand
    a job to its worker thread, and a wait in them only delays the job (its start came
    0.4 ms after the call, against 0.12 ms). After them, between turns it waits 50 us on
    the event itself, which lets go of the GIL: a loop that only yields keeps it, and the
    worker thread waits to take it (search p50 at 100k: 10.9 ms against 11.2 ms yielding
    only, alternating in one process)."""
    deadline = time.perf_counter() + seconds
    for _ in range(_FREE_TURNS):
        if event.is_set():
            return
        await anyio.lowlevel.checkpoint()
    while not event.is_set() and time.perf_counter() < deadline:
        await anyio.lowlevel.checkpoint()
        event.wait(5e-5)


_FREE_TURNS = 2


@asynccontextmanager
async def _one_error() -> AsyncIterator[None]:
    """A task group's failure raised as itself when every task failed alike (both
    chromadb queries of an unreachable store, say): callers catch the error's type."""
    try:
        yield
    except BaseExceptionGroup as failed:
        leaves = _leaves(failed)
        if all(isinstance(e, Exception) for e in leaves) and len({type(e) for e in leaves}) == 1:
            raise leaves[0] from None
        raise


def _leaves(error: BaseException) -> list[BaseException]:
    if isinstance(error, BaseExceptionGroup):
        return [leaf for inner in error.exceptions for leaf in _leaves(inner)]
    return [error]
