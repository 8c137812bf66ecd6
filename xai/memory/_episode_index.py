"""The episodes' indexes: a chromadb collection (cosine HNSW, on disk) and the in-memory corpus.

Derived data, like the facts' index: ``episodes.jsonl`` is the truth, and
``repair`` makes the collection hold exactly the stored episodes (embedding
those it lacks, deleting those it should not have) when the memory opens.
The collection lives beside the facts' collection in ``index/``. chromadb is
synchronous, so every call runs in a worker thread.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import anyio
import numpy as np

from xai.logs import get_logger
from xai.memory._corpus import EpisodeCorpus, lexical_text
from xai.memory._embeddings import Embedder
from xai.memory._held import PACKED, pack
from xai.memory._index import pages
from xai.memory._lexical import Terms
from xai.memory._pool import EpisodeLike
from xai.memory._snapshot import Part
from xai.memory._store import IndexStore

__all__ = ["COLLECTION", "EpisodeIndex", "embedding_text"]

_log = get_logger(__name__)
COLLECTION = "episodes"
_CHUNK = 2_000
"""Episodes written to (or read from) chromadb per call."""


def embedding_text(episode: EpisodeLike) -> str:
    """What is embedded of an episode: ``speaker: text`` (who said it matters)."""
    return f"{episode.speaker}: {episode.text}"


class EpisodeIndex:
    """Nearest episodes by meaning (chromadb) and everything else a query needs (the corpus)."""

    def __init__(self, collection: Any, embedder: Embedder) -> None:
        self.embedder = embedder
        self.corpus = EpisodeCorpus()
        self._backlog: dict[str, EpisodeLike] = {}
        """Episodes whose indexing was cancelled while they were embedded."""
        self._lock: anyio.Lock | None = None
        self._collection = collection
        self.changes = 0
        """Counts the writes and removals (a snapshot written at one count holds them)."""
        self.from_snapshot = False
        """Whether ``repair`` found the collection exactly as the snapshot held it."""

    @classmethod
    def open(cls, store: IndexStore, name: str, embedder: Embedder) -> EpisodeIndex:
        """Blocking: call it in a worker thread."""
        return cls(store.collection(name, embedder, what="episodes' index"), embedder)

    async def repair(self, episodes: Sequence[EpisodeLike], snapshot: Part | None = None) -> None:
        """Make the collection hold exactly ``episodes`` and load the corpus from it (with
        a ``snapshot`` of it, ``_snapshot``: read from there, and from the collection only
        what changed since)."""
        wanted = {e.id: e for e in episodes}
        found = None
        if snapshot is not None:
            found = await anyio.to_thread.run_sync(self._from_snapshot, snapshot, wanted)
            if found is None:
                _log.info("memory.snapshot_stale", index="episodes")
        if found is None:
            found = await anyio.to_thread.run_sync(self._read_all, wanted)
        held, rows, terms = found
        extra = [i for i in held if i not in wanted]
        kept = set(held)
        if extra:
            await anyio.to_thread.run_sync(self._delete, extra)
        have = [wanted[i] for i in held if i in wanted]
        if extra:
            keep = np.fromiter((i in wanted for i in held), dtype=bool, count=len(held))
            rows = rows[keep]
            terms = terms.take(np.flatnonzero(keep)) if terms is not None else None
        self.corpus.load(have, rows, terms)
        missing = [e for e in episodes if e.id not in kept]
        if missing:
            # Recorded while the index was closed (it opens when first needed), or lost
            # from it: either way the episodes are the truth, and nothing is wrong.
            _log.info("memory.episodes_indexed", episodes=len(missing))
            self.add(missing)
            await self.flush()

    def add(self, episodes: Sequence[EpisodeLike]) -> None:
        """Queue ``episodes`` for indexing: ``flush`` (which every search calls first)
        embeds and writes them. Recording never waits on the embedder, so a closing
        Session's hook cannot stall on it."""
        self._backlog.update((e.id, e) for e in episodes)

    async def flush(self) -> None:
        """Embed and index the queued episodes, one writer at a time, in one batch
        (callers arriving meanwhile find their episodes done). Cancelled while embedding,
        they stay queued; once embedded, the writes finish even if cancelled."""
        if not self._backlog:
            return
        if self._lock is None:
            self._lock = anyio.Lock()
        async with self._lock:
            episodes = list(self._backlog.values())
            if not episodes:
                return  # an earlier writer took them
            vectors = await self.embedder.embed([embedding_text(e) for e in episodes])
            with anyio.CancelScope(shield=True):
                await self.write(episodes, vectors)
                for episode in episodes:
                    self._backlog.pop(episode.id, None)

    async def write(
        self, episodes: Sequence[EpisodeLike], vectors: Sequence[Sequence[float]]
    ) -> None:
        """Index ``episodes`` with their ``vectors`` (already embedded)."""
        for start in range(0, len(episodes), _CHUNK):
            chunk = episodes[start : start + _CHUNK]
            rows = vectors[start : start + _CHUNK]
            await anyio.to_thread.run_sync(self._upsert, chunk, rows)
        self.corpus.add(episodes, vectors)
        self.changes += 1

    async def remove(self, ids: Sequence[str]) -> None:
        for episode_id in ids:
            self._backlog.pop(episode_id, None)
        if ids:
            await anyio.to_thread.run_sync(self._delete, list(ids))
            for episode_id in ids:
                self.corpus.discard(episode_id)
            self.changes += 1

    async def nearest(self, vector: Sequence[float], n: int) -> list[str]:
        """Ids of the ``n`` nearest episodes by cosine similarity."""
        if not len(self.corpus) or n <= 0:
            return []
        return await anyio.to_thread.run_sync(self.nearest_sync, vector, n)

    def nearest_sync(self, vector: Sequence[float], n: int) -> list[str]:
        """``nearest``, blocking (in a worker thread)."""
        count = len(self.corpus)
        if not count or n <= 0:
            return []
        query: Any = [list(map(float, vector))]
        found = self._collection.query(query_embeddings=query, n_results=min(n, count), include=[])
        return list(found["ids"][0]) if found["ids"] else []

    def _ids(self) -> list[str]:
        return [i for page in pages(self._collection, []) for i in page["ids"]]

    def _read_all(
        self, wanted: dict[str, EpisodeLike]
    ) -> tuple[list[str], np.ndarray, Terms | None]:
        """Every id the collection holds, and the packed vectors of those ``wanted``
        (rows of the others are left zero: they are deleted)."""
        held = self._ids()
        have = [i for i in held if i in wanted]
        rows = np.zeros((len(held), 0), dtype=PACKED)  # (widened by the first vectors read)
        place = {i: n for n, i in enumerate(held)}
        for start in range(0, len(have), _CHUNK):
            chunk = have[start : start + _CHUNK]
            vectors = pack(self._vectors(chunk))
            if rows.shape[1] != vectors.shape[1]:
                rows = np.zeros((len(held), vectors.shape[1]), dtype=PACKED)
            rows[[place[i] for i in chunk]] = vectors
        return held, rows, None

    def _from_snapshot(
        self, part: Part, wanted: dict[str, EpisodeLike]
    ) -> tuple[list[str], np.ndarray, Terms | None] | None:
        """What the collection holds, from ``part``: its rows, less those no longer
        ``wanted`` that the collection lost since, and the episodes it lacks read by id.
        ``None`` when the collection's count does not add up to it."""
        place = {i: n for n, i in enumerate(part.ids)}
        new = [i for i in wanted if i not in place]
        unwanted = [i for i in part.ids if i not in wanted]
        gone: set[str] = set()
        for start in range(0, len(unwanted), _CHUNK):
            chunk = unwanted[start : start + _CHUNK]
            still = set(self._collection.get(ids=chunk, include=[])["ids"])
            gone.update(i for i in chunk if i not in still)
        held = [i for i in part.ids if i not in gone]
        rows, terms = part.rows, part.terms
        if gone:
            picked = np.asarray([place[i] for i in held], dtype=np.int64)
            rows = rows[picked]
            terms = terms.take(picked) if terms is not None else None
        self.from_snapshot = not new and not unwanted
        fresh_ids: list[str] = []
        fresh_rows: list[np.ndarray] = []
        for start in range(0, len(new), _CHUNK):
            result: Any = self._collection.get(
                ids=new[start : start + _CHUNK], include=["embeddings"]
            )
            if result["ids"]:
                fresh_ids.extend(result["ids"])
                fresh_rows.append(pack(np.asarray(result["embeddings"], dtype=np.float32)))
        if int(self._collection.count()) != len(held) + len(fresh_ids):
            return None
        if fresh_rows:
            if len(rows) and rows.shape[1] != fresh_rows[0].shape[1]:
                return None
            rows = np.concatenate([rows.reshape(-1, fresh_rows[0].shape[1]), *fresh_rows])
            if terms is not None:
                terms = terms.plus(Terms.of(lexical_text(wanted[i]) for i in fresh_ids))
        return held + fresh_ids, rows, terms

    def snapshot_part(self) -> Part:
        """What the collection holds, for a snapshot (the corpus mirrors it)."""
        ids, rows, terms = self.corpus.packed()
        return Part(ids, rows, terms=terms)

    def _vectors(self, ids: list[str]) -> np.ndarray:
        found: Any = self._collection.get(ids=ids, include=["embeddings"])
        by_id = dict(zip(found["ids"], found["embeddings"], strict=True))
        return np.asarray([by_id[i] for i in ids], dtype=np.float32)

    def _upsert(self, episodes: Sequence[EpisodeLike], vectors: Sequence[Sequence[float]]) -> None:
        embeddings: Any = [list(map(float, v)) for v in vectors]
        metadatas: Any = [
            {"session_id": e.session_id, "seq": e.seq, "speaker": e.speaker, "at": e.at}
            for e in episodes
        ]
        self._collection.upsert(
            ids=[e.id for e in episodes],
            embeddings=embeddings,
            documents=[e.text for e in episodes],
            metadatas=metadatas,
        )

    def _delete(self, ids: list[str]) -> None:
        for start in range(0, len(ids), _CHUNK):
            self._collection.delete(ids=ids[start : start + _CHUNK])
