"""``LongTermMemory.search``'s candidate gathering: facts and episodes into one pool, ranked once.

Facts: the ``depth`` nearest by cosine (chromadb) and the ``depth`` best by BM25,
with each one's other score (a fact found by words gets its cosine from its stored
vector). Episodes: the ``depth`` nearest (chromadb HNSW), the best by BM25 and
their session neighbours (``EpisodeCorpus.pool``). ``_recall.rank`` fuses the lot.

The work is ordered so that little waits: the query is embedded in a worker
thread while this thread scores the words (both BM25 indexes) and another thread
fetches the stored vectors of the facts found by words; then the two HNSW queries
run side by side. What is computed is the same as doing it all in turn.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from typing import Literal, TypeAlias

import anyio
import numpy as np

from xai.memory._episode_index import EpisodeIndex
from xai.memory._episodes import EpisodeStore
from xai.memory._index import VectorIndex, cosines
from xai.memory._lexical import LexicalIndex
from xai.memory._recall import PoolItem, RecallWeights, rank
from xai.memory._types import Fact, MemoryHit, ScoredEpisode, ScoredFact

__all__ = ["EmbedQuery", "SearchTier", "gather_and_rank", "search_hits"]

SearchTier: TypeAlias = Literal["L1", "L2", "episodes"]
"""What ``search`` may return: facts of a tier, or episodes."""
EmbedQuery: TypeAlias = Callable[[str], Awaitable[list[float]]]
"""How a question is embedded (``query_embedding``: the query encoder)."""


class _Gathered:
    """What the first step finds: the query's vector, the facts' BM25 top with their
    stored vectors, and the episodes' BM25 scores and top; then the HNSW queries'."""

    def __init__(self) -> None:
        self.vector = np.zeros(0, dtype=np.float32)
        self.fact_words: dict[str, float] = {}
        self.stored: tuple[list[str], np.ndarray] = ([], np.zeros((0, 0), dtype=np.float32))
        self.episode_words: tuple[np.ndarray, list[str]] | None = None
        self.fact_nearest: list[tuple[str, float]] = []
        self.episode_nearest: list[str] = []


async def gather_and_rank(
    query: str,
    embed: EmbedQuery,
    k: int,
    *,
    facts: Mapping[str, Fact],
    index: VectorIndex,
    lexicon: LexicalIndex,
    episodes: EpisodeIndex | None,
    tiers: Sequence[SearchTier] | None,
    weights: RecallWeights,
) -> list[tuple[PoolItem, float]]:
    """The ``k`` best facts and episodes for ``query`` and their fused scores, best first."""
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

    async def vectorise() -> None:
        vector = await embed(query)
        got.vector = np.asarray(vector, dtype=np.float32)

    async def fetch(ids: list[str]) -> None:
        got.stored = await index.stored(ids)

    async def nearest_facts() -> None:
        got.fact_nearest = await index.nearest(got.vector.tolist(), depth, tiers=fact_tiers)

    async def nearest_episodes(index: EpisodeIndex) -> None:
        got.episode_nearest = await index.nearest(got.vector.tolist(), depth)

    async with _one_error(), anyio.create_task_group() as group:
        group.start_soon(vectorise)  # in a worker thread: the words are scored meanwhile
        if want_facts:
            keep = wanted if fact_tiers else None
            got.fact_words = dict(lexicon.top(query, depth, keep=keep))
            if got.fact_words:
                group.start_soon(fetch, list(got.fact_words))
        if want_episodes and corpus is not None:
            got.episode_words = corpus.words(query, weights)
    async with _one_error(), anyio.create_task_group() as group:
        if want_facts:
            group.start_soon(nearest_facts)
        if want_episodes and episodes is not None:
            group.start_soon(nearest_episodes, episodes)
    pool = _fact_pool(facts, got, wanted) if want_facts else []
    if want_episodes and corpus is not None:
        pool += corpus.pool(
            query, got.vector, weights, nearest=got.episode_nearest, words=got.episode_words
        )
    return rank(query, pool, weights, k)


def _fact_pool(
    facts: Mapping[str, Fact], got: _Gathered, wanted: Callable[[str], bool]
) -> list[PoolItem]:
    """The facts found by meaning (with chromadb's cosine), then those found by words
    alone (their cosine from their stored vectors), each with its BM25 score."""
    dense = dict(got.fact_nearest)
    ids, matrix = got.stored
    rows = [n for n, i in enumerate(ids) if i not in dense]
    if rows:
        found = cosines(matrix[rows], got.vector).tolist()
        dense.update(zip([ids[n] for n in rows], found, strict=True))
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
    embed: EmbedQuery,
    k: int,
    *,
    facts: Mapping[str, Fact],
    index: VectorIndex,
    lexicon: LexicalIndex,
    episodes: EpisodeStore,
    episode_index: EpisodeIndex | None,
    tiers: Sequence[SearchTier] | None,
    weights: RecallWeights,
) -> list[MemoryHit]:
    """``gather_and_rank``'s items as hits: each fact or episode with its cosine similarity."""
    ranked = await gather_and_rank(
        query, embed, k, facts=facts, index=index, lexicon=lexicon,
        episodes=episode_index, tiers=tiers, weights=weights,
    )  # fmt: skip
    hits: list[MemoryHit] = []
    for item, _ in ranked:
        if item.kind == "fact":
            hits.append(ScoredFact(facts[item.id], item.dense))
        elif (episode := episodes.get(item.id)) is not None:
            hits.append(ScoredEpisode(episode, item.dense))
    return hits


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
