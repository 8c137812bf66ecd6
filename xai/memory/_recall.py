"""The retrieval: dense + lexical candidates over episodes and facts, fused with conversation cues.

One function ranks a *pool* of candidates, never the whole store, so a query
costs the same at 600 turns and at 100k:

1. **Candidates.** The ``depth`` nearest episodes by meaning (HNSW in the store,
   or exact over a small in-memory corpus) and the ``depth`` best by words (BM25),
   the same for facts; then the session neighbours (``seq`` ± ``span``) of every
   episode candidate, because evidence sits in runs of turns and a reply carries
   its question's words.
2. **Base score.** Cosine similarity and BM25, each z-normalised over the pool and
   mixed ``lexical`` : ``1 - lexical`` (a z-score, not a raw score: the two scales
   never meet otherwise); an episode adds a share of its length against its
   speaker's other turns ("Thanks!" tells less than a turn that tells of a trip).
3. **Cues** (episodes only; each in standard deviations of the pool's scores, so
   no cue depends on the embedder's or BM25's scale):
   - neighbours: each episode gains a share of its neighbours' base scores;
   - answers: a turn that ends in a question passes a share of its (positive) base
     score to the next turn when another speaker says it and that turn is a person's
     input: a question is found by the words the query shares with it, but between two
     people the fact is often in the reply ("What gave you the idea?" / "I'm obsessed
     with those..."). The assistant's reply (or another agent's, a tool's, the
     system's) takes nothing: a user who asks an assistant puts their own facts in the
     question;
   - sessions: each episode gains a share of the best base score in its session (a
     session that holds a good match likely holds the rest of the answer);
   - speaker: when the query names exactly one known speaker, that speaker's
     episodes; a query that asks what *you* said favours the assistant's;
   - dates: a day, month or year the query names lifts episodes said in that
     window (by ``Episode.at``, not by any header), and a fortnight after a day
     (people tell of last week's news); "when" questions favour episodes that
     speak of time;
   - (off by default) the two sessions holding the best episodes, scaled by how
     clearly they lead.
4. **Facts stand where they were said.** Facts and episodes are z-scored apart (two
   pools of different texts); a fact whose evidence episodes are in the pool takes
   the best of their scores, cues and all (it *is* that turn's knowledge), and a fact
   and the episodes it was drawn from take one slot of the ``k`` (two facts drawn
   from one turn take two). A fact
   with no evidence in the pool keeps its own score. (On LoCoMo 0-4 through the Agent,
   where every user turn is also a fact: 81.9 -> 82.6 recall@10.)

The weights (``RecallWeights``) were chosen on LoCoMo conversations 0-4 only;
conversations 5-9 are the held-out figures (docs/memory.md, bench/locomo_recall.py).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from xai.memory._cues import _DATE_WEIGHT as _DATE_WEIGHT
from xai.memory._cues import DEFAULT_CUES, Cues, fuse, fuse_columns, named_speaker
from xai.memory._cues import _near_dates as _near_dates
from xai.memory._pool import (
    PERSON,
    Columns,
    EpisodeLike,
    PoolItem,
    RecallWeights,
    ends_in_question,
    z_scores,
)

__all__ = [
    "DEFAULT_CUES",
    "PERSON",
    "Columns",
    "Cues",
    "EpisodeLike",
    "PoolItem",
    "RecallWeights",
    "ends_in_question",
    "fuse",
    "fuse_columns",
    "named_speaker",
    "rank",
    "rank_apart",
]

_z = z_scores
"""The name the recall tests import it by (it lives in ``_pool`` now)."""


def rank(
    query: str,
    pool: Sequence[PoolItem],
    weights: RecallWeights,
    k: int,
    *,
    cues: Cues = DEFAULT_CUES,
) -> list[tuple[PoolItem, float]]:
    """The ``k`` best items of ``pool`` for ``query`` and their fused scores, best first;
    a fact and the episodes it was drawn from take one slot (step 4 of the module doc)."""
    scores = np.zeros(len(pool))
    episodes = [i for i, p in enumerate(pool) if p.kind == "episode"]
    facts = [i for i, p in enumerate(pool) if p.kind == "fact"]
    said = Columns.of([pool[i] for i in episodes])
    scores[episodes] = fuse_columns(query, said, weights, cues=cues)
    scores[facts] = _fact_scores(
        query, [pool[i] for i in facts], said, scores[episodes], weights, cues
    )
    return _best(scores, pool.__getitem__, k)


def rank_apart(
    query: str,
    facts: Sequence[PoolItem],
    episodes: Columns,
    weights: RecallWeights,
    k: int,
    *,
    cues: Cues = DEFAULT_CUES,
) -> list[tuple[PoolItem, float]]:
    """``rank`` of the pool ``facts`` then ``episodes`` (as columns: an episode's item is
    made only if it is ranked)."""
    fused = fuse_columns(query, episodes, weights, cues=cues)
    scores = np.concatenate([_fact_scores(query, facts, episodes, fused, weights, cues), fused])
    told = len(facts)
    return _best(scores, lambda i: facts[i] if i < told else episodes.item(i - told), k)


def _fact_scores(
    query: str,
    facts: Sequence[PoolItem],
    episodes: Columns,
    fused: np.ndarray,
    weights: RecallWeights,
    cues: Cues,
) -> np.ndarray:
    """The facts fused apart from the episodes (``fused``: theirs); a fact with evidence
    in the pool scores as the best of its evidence episodes."""
    scores = fuse(query, facts, weights, cues=cues)
    if len(episodes) and any(f.evidence for f in facts):
        at = {episode_id: j for j, episode_id in enumerate(episodes.ids)}
        for i, fact in enumerate(facts):
            said = [fused[at[e]] for e in fact.evidence if e in at]
            if said:
                scores[i] = max(said)
    return scores


def _best(
    scores: np.ndarray, item: Callable[[int], PoolItem], k: int
) -> list[tuple[PoolItem, float]]:
    out: list[tuple[PoolItem, float]] = []
    episodes: set[str] = set()  # episodes in the list
    told: set[str] = set()  # episodes a fact in the list was drawn from
    for i in np.argsort(-scores, kind="stable").tolist():
        if len(out) >= k:
            break
        candidate = item(i)
        if candidate.kind == "episode":
            if candidate.id in told:
                continue  # a fact drawn from it is in the list already
            episodes.add(candidate.id)
        else:
            if candidate.evidence and episodes.issuperset(candidate.evidence):
                continue  # the turns it was drawn from are in the list already
            told.update(candidate.evidence)
        out.append((candidate, float(scores[i])))
    return out
