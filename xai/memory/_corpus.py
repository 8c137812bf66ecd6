"""Episodes held for retrieval in memory: session order, vectors (float16) and BM25.

The episode store keeps one ``EpisodeCorpus`` beside its chromadb collection:
chromadb answers the nearest episodes by meaning (HNSW) at any size, and the
corpus gives everything else a query needs without a trip to disk — a
candidate's session neighbours, their vectors (384 float16 numbers each: 77 MB
at 100k episodes, where fetching them from chromadb per query costs more than
the whole search budget), and their BM25 scores. A small corpus (the eval's
one conversation) is also searched exactly by meaning, with no collection at all.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Sequence

import numpy as np

from xai.memory._lexical import LexicalIndex
from xai.memory._recall import EpisodeLike, PoolItem, RecallWeights, neighbourhood

__all__ = ["EpisodeCorpus", "lexical_text"]


def lexical_text(episode: EpisodeLike) -> str:
    """What BM25 reads of an episode: its speaker and its words."""
    return f"{episode.speaker} {episode.text}"


class EpisodeCorpus:
    """Episodes by id and by session (``seq`` order), with their vectors and a BM25 index."""

    def __init__(self, dimensions: int | None = None) -> None:
        self._episodes: dict[str, EpisodeLike] = {}
        self._sessions: dict[str, list[EpisodeLike]] = {}
        self._row: dict[str, int] = {}
        self._vectors = np.zeros((0, dimensions or 0), dtype=np.float16)
        self._used = 0
        self._free: list[int] = []
        self.lexical = LexicalIndex()

    def __len__(self) -> int:
        return len(self._episodes)

    def __contains__(self, episode_id: object) -> bool:
        return episode_id in self._episodes

    def get(self, episode_id: str) -> EpisodeLike | None:
        return self._episodes.get(episode_id)

    @property
    def sessions(self) -> dict[str, list[EpisodeLike]]:
        """Each session's episodes in ``seq`` order (do not modify)."""
        return self._sessions

    def speakers(self) -> set[str]:
        return {e.speaker for e in self._episodes.values()}

    def add(
        self, episodes: Sequence[EpisodeLike], vectors: Sequence[Sequence[float]] | np.ndarray
    ) -> None:
        """Add (or replace) episodes with their unit vectors."""
        if not episodes:
            return
        matrix = np.asarray(vectors, dtype=np.float32)
        norms = np.linalg.norm(matrix, axis=1, keepdims=True)
        matrix = matrix / np.clip(norms, 1e-12, None)
        if self._vectors.shape[1] != matrix.shape[1]:
            if self._episodes:
                raise ValueError("every episode vector must have the same length")
            self._vectors = np.zeros((0, matrix.shape[1]), dtype=np.float16)
        for episode, vector in zip(episodes, matrix, strict=True):
            self.discard(episode.id)
            row = self._free.pop() if self._free else self._grow()
            self._vectors[row] = vector
            self._row[episode.id] = row
            self._episodes[episode.id] = episode
            session = self._sessions.setdefault(episode.session_id, [])
            keys = [e.seq for e in session]
            session.insert(bisect.bisect_right(keys, episode.seq), episode)
            self.lexical.set(episode.id, lexical_text(episode))

    def _grow(self) -> int:
        if self._used == len(self._vectors):
            grown = np.zeros((max(64, 2 * self._used), self._vectors.shape[1]), dtype=np.float16)
            grown[: self._used] = self._vectors[: self._used]
            self._vectors = grown
        self._used += 1
        return self._used - 1

    def discard(self, episode_id: str) -> None:
        episode = self._episodes.pop(episode_id, None)
        if episode is None:
            return
        self._free.append(self._row.pop(episode_id))
        session = self._sessions[episode.session_id]
        session.remove(episode)
        if not session:
            del self._sessions[episode.session_id]
        self.lexical.discard(episode_id)

    def vectors(self, ids: Sequence[str]) -> np.ndarray:
        """The unit vectors of ``ids`` (all held), as float32 rows."""
        rows = [self._row[i] for i in ids]
        return np.asarray(self._vectors[rows], dtype=np.float32)

    def nearest(self, vector: np.ndarray, n: int) -> list[tuple[str, float]]:
        """Exact nearest episodes by cosine (for small corpora; the store asks chromadb)."""
        if not self._row or n <= 0:
            return []
        ids = list(self._row)
        cosines = self.vectors(ids) @ _unit(vector)
        top = np.argsort(-cosines, kind="stable")[:n]
        return [(ids[i], float(cosines[i])) for i in top]

    def pool(
        self,
        query: str,
        vector: np.ndarray,
        weights: RecallWeights,
        *,
        nearest: Iterable[str] | None = None,
    ) -> list[PoolItem]:
        """The candidates of ``query``: the ``nearest`` episodes by meaning (exact here
        when not given), the best by words, and their session neighbours."""
        if not self._episodes:
            return []
        unit = _unit(vector)
        if nearest is None:
            nearest = [i for i, _ in self.nearest(unit, weights.depth)]
        words = self.lexical.scores(query)
        seeds = dict.fromkeys(nearest)
        seeds.update(dict.fromkeys(i for i, _ in self.lexical.top_of(words, weights.depth)))
        episodes = neighbourhood(
            (self._episodes[i] for i in seeds if i in self._episodes), self._sessions, weights.span
        )
        ids = [e.id for e in episodes]
        cosines = self.vectors(ids) @ unit
        lexical = self.lexical.pick(words, ids)
        return [
            PoolItem(
                id=e.id,
                kind="episode",
                dense=float(c),
                lexical=float(w),
                session_id=e.session_id,
                seq=e.seq,
                speaker=e.speaker,
                text=e.text,
                at=e.at,
            )
            for e, c, w in zip(episodes, cosines, lexical, strict=True)
        ]


def _unit(vector: Sequence[float] | np.ndarray) -> np.ndarray:
    array = np.asarray(vector, dtype=np.float32)
    return np.asarray(array / (float(np.linalg.norm(array)) or 1.0))
