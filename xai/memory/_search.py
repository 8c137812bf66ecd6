"""``LongTermMemory.search``'s candidate gathering: facts and episodes into one pool, ranked once.

Facts: the ``depth`` nearest by cosine (chromadb) and the ``depth`` best by BM25,
with each one's other score (a fact found by words gets its cosine from its stored
vector). Episodes: the ``depth`` nearest (chromadb HNSW), the best by BM25 and
their session neighbours (``EpisodeCorpus.pool``). ``_recall.rank`` fuses the lot.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Literal, TypeAlias

import anyio
import numpy as np

from xai.memory._episode_index import EpisodeIndex
from xai.memory._episodes import EpisodeStore
from xai.memory._index import VectorIndex
from xai.memory._lexical import LexicalIndex
from xai.memory._recall import PoolItem, RecallWeights, rank
from xai.memory._types import Fact, MemoryHit, ScoredEpisode, ScoredFact

__all__ = ["SearchTier", "gather_and_rank", "search_hits"]

SearchTier: TypeAlias = Literal["L1", "L2", "episodes"]
"""What ``search`` may return: facts of a tier, or episodes."""


async def _fact_pool(
    query: str,
    vector: Sequence[float],
    facts: Mapping[str, Fact],
    index: VectorIndex,
    lexicon: LexicalIndex,
    tiers: Sequence[str] | None,
    depth: int,
) -> list[PoolItem]:
    def wanted(fact_id: str) -> bool:
        # The state, not chromadb, is the truth: during an adjudication batch the index
        # still holds facts just retired (or re-tiered) until the batch ends.
        fact = facts.get(fact_id)
        return fact is not None and fact.status == "active" and (not tiers or fact.tier in tiers)

    lexical = dict(lexicon.top(query, depth, keep=wanted if tiers else None))
    dense = await index.nearest_and(vector, depth, list(lexical), tiers=tiers)
    return [
        PoolItem(
            id=i,
            kind="fact",
            dense=cosine,
            lexical=lexical.get(i, 0.0),
            text=facts[i].text,
            evidence=facts[i].evidence,
        )
        for i, cosine in dense.items()
        if wanted(i)
    ]


async def gather_and_rank(
    query: str,
    vector: Sequence[float],
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
    pool: list[PoolItem] = []
    nearest: list[str] = []

    async def nearest_episodes(index: EpisodeIndex) -> None:
        nearest.extend(await index.nearest(vector, weights.depth))

    wanted = episodes is not None and len(episodes.corpus) and (not tiers or "episodes" in tiers)
    try:
        async with anyio.create_task_group() as group:
            if wanted and episodes is not None:  # its chromadb query beside the facts' one
                group.start_soon(nearest_episodes, episodes)
            if fact_tiers is None or fact_tiers:
                pool += await _fact_pool(
                    query, vector, facts, index, lexicon, fact_tiers, weights.depth
                )
    except BaseExceptionGroup as failed:  # raised as itself (both queries fail alike)
        leaves = _leaves(failed)
        if all(isinstance(e, Exception) for e in leaves) and len({type(e) for e in leaves}) == 1:
            raise leaves[0] from None
        raise
    if wanted and episodes is not None:
        pool += episodes.corpus.pool(
            query, np.asarray(vector, dtype=np.float32), weights, nearest=nearest
        )
    return rank(query, pool, weights, k)


async def search_hits(
    query: str,
    vector: Sequence[float],
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
        query, vector, k, facts=facts, index=index, lexicon=lexicon,
        episodes=episode_index, tiers=tiers, weights=weights,
    )  # fmt: skip
    hits: list[MemoryHit] = []
    for item, _ in ranked:
        if item.kind == "fact":
            hits.append(ScoredFact(facts[item.id], item.dense))
        elif (episode := episodes.get(item.id)) is not None:
            hits.append(ScoredEpisode(episode, item.dense))
    return hits


def _leaves(error: BaseException) -> list[BaseException]:
    if isinstance(error, BaseExceptionGroup):
        return [leaf for inner in error.exceptions for leaf in _leaves(inner)]
    return [error]
