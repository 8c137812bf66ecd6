"""Episodes held for retrieval in memory: session order, vectors (packed) and BM25.

The episode store keeps one ``EpisodeCorpus`` beside its chromadb collection:
chromadb answers the nearest episodes by meaning (HNSW) at any size, and the
corpus gives everything else a query needs without a trip to disk — a
candidate's session neighbours, their vectors (``_held.pack``: 768 bytes each, 77 MB
at 100k episodes, where fetching them from chromadb per query costs more than
the whole search budget), and their BM25 scores. A small corpus (the eval's
one conversation) is also searched exactly by meaning, with no collection at all.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Sequence
from typing import cast

import numpy as np

from xai.memory._held import PACKED, pack, unpack
from xai.memory._lexical import LexicalIndex, Terms
from xai.memory._pool import (
    PERSON,
    Columns,
    EpisodeLike,
    PoolItem,
    RecallWeights,
    ends_in_question,
)

__all__ = ["EpisodeCorpus", "lexical_text"]

_SEQ_BITS = 33
_SEQ_OFFSET = 1 << 32
"""A row's key is its session's code, then its ``seq`` (offset to be >= 0), in 64 bits."""


def lexical_text(episode: EpisodeLike) -> str:
    """What BM25 reads of an episode: its speaker and its words."""
    return f"{episode.speaker} {episode.text}"


class EpisodeCorpus:
    """Episodes by id and by session (``seq`` order), with their vectors and a BM25 index."""

    def __init__(self, dimensions: int | None = None) -> None:
        self._episodes: dict[str, EpisodeLike] = {}
        self._sessions: dict[str, list[EpisodeLike]] = {}
        self._row: dict[str, int] = {}
        self._vectors = np.zeros((0, dimensions or 0), dtype=PACKED)
        self._used = 0
        self._free: list[int] = []
        self.lexical = LexicalIndex()
        # Per row: the episode, its session's code, its place (``_key``: session, then
        # seq), when it was added (equal ``seq``s keep that order) and its BM25 row.
        self._by_row: list[EpisodeLike | None] = []
        self._codes: dict[str, int] = {}
        self._key = np.zeros(0, dtype=np.int64)
        self._added = np.zeros(0, dtype=np.int64)
        self._lexical_row = np.zeros(0, dtype=np.int64)
        # Per row, what the fusion reads of the text and its origin: the text's length,
        # whether it asks, and whether a person said it.
        self._length = np.zeros(0, dtype=np.int64)
        self._asks = np.zeros(0, dtype=np.int64)
        self._person = np.zeros(0, dtype=np.int64)
        self._adds = 0
        self._order: tuple[np.ndarray, np.ndarray] | None = None
        """Live rows in session order and their keys (rebuilt after a change)."""

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
        matrix = pack(np.asarray(vectors, dtype=np.float32))
        if self._vectors.shape[1] != matrix.shape[1]:
            if self._episodes:
                raise ValueError("every episode vector must have the same length")
            self._vectors = np.zeros((0, matrix.shape[1]), dtype=PACKED)
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
            code = self._codes.setdefault(episode.session_id, len(self._codes))
            self._by_row[row] = episode
            self._key[row] = (code << _SEQ_BITS) + episode.seq + _SEQ_OFFSET
            self._added[row] = self._adds
            self._adds += 1
            self._lexical_row[row] = self.lexical.row_of(episode.id)
            self._length[row] = len(episode.text)
            self._asks[row] = ends_in_question(episode.text)
            self._person[row] = episode.origin == PERSON
        self._order = None

    def load(
        self, episodes: Sequence[EpisodeLike], rows: np.ndarray, terms: Terms | None = None
    ) -> None:
        """Fill this empty corpus with ``episodes`` (distinct ids) and their packed unit
        vectors (``rows``, one per episode, taken as they are): what ``add`` of them in
        turn makes, built a column at a time (a large memory's open). ``terms``: the
        episodes' ``lexical_text`` terms, counted before (else counted here)."""
        if self._episodes:
            raise ValueError("load fills an empty corpus")
        if not episodes:
            return
        count = len(episodes)
        self._vectors = np.asarray(rows, dtype=PACKED)
        self._used = count
        self._by_row = list(episodes)
        self._episodes = {e.id: e for e in episodes}
        self._row = {e.id: row for row, e in enumerate(episodes)}
        if len(self._episodes) != count or self._vectors.shape[0] != count:
            raise ValueError("load needs one row for each of distinct episodes")
        for episode in episodes:
            self._sessions.setdefault(episode.session_id, []).append(episode)
        for session in self._sessions.values():
            session.sort(key=lambda e: e.seq)  # stable: equal seqs keep their order
        if terms is None:
            terms = Terms.of(lexical_text(e) for e in episodes)
        self.lexical = LexicalIndex.loaded([e.id for e in episodes], terms)
        codes = np.fromiter(
            (self._codes.setdefault(e.session_id, len(self._codes)) for e in episodes),
            dtype=np.int64,
            count=count,
        )
        seqs = np.fromiter((e.seq for e in episodes), dtype=np.int64, count=count)
        self._key = (codes << _SEQ_BITS) + seqs + _SEQ_OFFSET
        self._added = np.arange(count, dtype=np.int64)
        self._adds = count
        self._lexical_row = np.arange(count, dtype=np.int64)  # (loaded in this order)
        self._length = np.fromiter((len(e.text) for e in episodes), dtype=np.int64, count=count)
        self._asks = np.fromiter(
            (ends_in_question(e.text) for e in episodes), dtype=np.int64, count=count
        )
        self._person = np.fromiter((e.origin == PERSON for e in episodes), np.int64, count)
        self._order = None

    def packed(self) -> tuple[list[str], np.ndarray, Terms]:
        """Every episode's id, packed row (a copy) and terms, in the order they were added."""
        live = np.fromiter(self._row.values(), dtype=np.int64, count=len(self._row))
        live = live[np.argsort(self._added[live], kind="stable")]
        episodes = cast(list[EpisodeLike], [self._by_row[row] for row in live.tolist()])
        ids = [e.id for e in episodes]
        return ids, self._vectors[live], self.lexical.terms(ids)

    def _grow(self) -> int:
        if self._used == len(self._vectors):
            size = max(64, 2 * self._used)
            grown = np.zeros((size, self._vectors.shape[1]), dtype=PACKED)
            grown[: self._used] = self._vectors[: self._used]
            self._vectors = grown
            for name in ("_key", "_added", "_lexical_row", "_length", "_asks", "_person"):
                array = np.zeros(size, dtype=np.int64)
                array[: self._used] = getattr(self, name)[: self._used]
                setattr(self, name, array)
        self._by_row.append(None)
        self._used += 1
        return self._used - 1

    def discard(self, episode_id: str) -> None:
        episode = self._episodes.pop(episode_id, None)
        if episode is None:
            return
        row = self._row.pop(episode_id)
        self._free.append(row)
        self._by_row[row] = None
        self._order = None
        session = self._sessions[episode.session_id]
        session.remove(episode)
        if not session:
            del self._sessions[episode.session_id]
        self.lexical.discard(episode_id)

    def vectors(self, ids: Sequence[str]) -> np.ndarray:
        """The unit vectors of ``ids`` (all held), as float32 rows."""
        rows = [self._row[i] for i in ids]
        return unpack(self._vectors[rows])

    def nearest(self, vector: np.ndarray, n: int) -> list[tuple[str, float]]:
        """Exact nearest episodes by cosine (for small corpora; the store asks chromadb)."""
        if not self._row or n <= 0:
            return []
        ids = list(self._row)
        cosines = self.vectors(ids) @ _unit(vector)
        top = np.argsort(-cosines, kind="stable")[:n]
        return [(ids[i], float(cosines[i])) for i in top]

    def words(self, query: str, weights: RecallWeights) -> tuple[np.ndarray, list[str]]:
        """The BM25 score of every episode (by lexical row) and the ids of the ``depth``
        best: all ``pool`` needs of the words, and none of it needs the query's vector."""
        scores = self.lexical.scores(query)
        return scores, [i for i, _ in self.lexical.top_of(scores, weights.depth)]

    def pool(
        self,
        query: str,
        vector: np.ndarray,
        weights: RecallWeights,
        *,
        nearest: Iterable[str] | None = None,
        words: tuple[np.ndarray, Sequence[str]] | None = None,
    ) -> list[PoolItem]:
        """The candidates of ``query``: the ``nearest`` episodes by meaning (exact here
        when not given), the best by words, and their session neighbours. ``words``:
        ``self.words(query, weights)`` when already computed."""
        found = self.columns(query, vector, weights, nearest=nearest, words=words)
        return [found.item(i) for i in range(len(found))]

    def columns(
        self,
        query: str,
        vector: np.ndarray,
        weights: RecallWeights,
        *,
        nearest: Iterable[str] | None = None,
        words: tuple[np.ndarray, Sequence[str]] | None = None,
    ) -> Columns:
        """``pool`` as columns, each candidate's item made when asked for."""
        unit = _unit(vector)
        if not self._episodes:
            empty = np.zeros(0)
            return self._columns_of(np.zeros(0, dtype=np.int64), empty, empty)
        if nearest is None:
            nearest = [i for i, _ in self.nearest(unit, weights.depth)]
        scores, best = words if words is not None else self.words(query, weights)
        seeds = dict.fromkeys(nearest)
        seeds.update(dict.fromkeys(best))
        rows = self._neighbourhood(
            np.fromiter((self._row[i] for i in seeds if i in self._row), dtype=np.int64),
            weights.span,
        )
        dense = (unpack(self._vectors[rows]) @ unit).astype(np.float64)
        return self._columns_of(rows, dense, scores[self._lexical_row[rows]].astype(np.float64))

    def _columns_of(self, rows: np.ndarray, dense: np.ndarray, lexical: np.ndarray) -> Columns:
        # every row of a neighbourhood is live
        episodes = cast(list[EpisodeLike], [self._by_row[row] for row in rows.tolist()])

        def item(i: int) -> PoolItem:
            e = episodes[i]
            return PoolItem(
                id=e.id,
                kind="episode",
                dense=float(dense[i]),
                lexical=float(lexical[i]),
                session_id=e.session_id,
                seq=e.seq,
                speaker=e.speaker,
                text=e.text,
                at=e.at,
                origin=e.origin,
            )

        return Columns(
            ids=[e.id for e in episodes],
            dense=dense,
            lexical=lexical,
            episode=np.ones(len(episodes), dtype=bool),
            session_ids=[e.session_id for e in episodes],
            seq=np.array([e.seq for e in episodes], dtype=np.int64),
            speakers=[e.speaker for e in episodes],
            texts=lambda: [e.text for e in episodes],
            at=lambda: [e.at for e in episodes],
            item=item,
            lengths=lambda: self._length[rows].astype(np.float64),
            asks=lambda: self._asks[rows].astype(bool),
            people=lambda: self._person[rows].astype(bool),
        )

    def _neighbourhood(self, seeds: np.ndarray, span: int) -> np.ndarray:
        """Rows: the seeds (in order, no repeats), then each one's session neighbours
        within ``span`` places (a seed's place: the first of its ``seq``)."""
        order, keys = self._session_order()
        if not len(seeds):
            return seeds
        seeds = seeds[np.sort(np.unique(seeds, return_index=True)[1])]
        own = self._key[seeds]
        place = np.searchsorted(keys, own)
        session = own >> _SEQ_BITS
        low = np.searchsorted(keys, session << _SEQ_BITS)
        high = np.searchsorted(keys, (session + 1) << _SEQ_BITS)
        window = place[:, None] + np.arange(-span, span + 1)
        inside = (window >= low[:, None]) & (window < high[:, None])
        found = np.concatenate([seeds, order[window[inside]]])
        return found[np.sort(np.unique(found, return_index=True)[1])]

    def _session_order(self) -> tuple[np.ndarray, np.ndarray]:
        if self._order is None:
            live = np.fromiter(self._row.values(), dtype=np.int64, count=len(self._row))
            live = live[np.lexsort((self._added[live], self._key[live]))]
            self._order = (live, self._key[live])
        return self._order


def _unit(vector: Sequence[float] | np.ndarray) -> np.ndarray:
    array = np.asarray(vector, dtype=np.float32)
    return np.asarray(array / (float(np.linalg.norm(array)) or 1.0))
