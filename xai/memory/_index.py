"""The vector index of active facts: a chromadb collection in cosine space, on disk.

The index is derived data: the ledger is the truth, and ``reconcile`` makes the
index agree with it (after a kill between a ledger write and an index write).
chromadb is synchronous, so every call runs in a worker thread.

The index also holds its vectors in memory (``HeldVectors``: 768 bytes a fact, 77 MB
at 100k), read with the versions when it opens and kept in step with every write: a search needs the cosine of the facts found by words alone, and
fetching their vectors from chromadb cost 1.7 ms a search at 100k facts, holding the
GIL from the question's embedding meanwhile.
"""

from __future__ import annotations

import functools
import shutil
import threading
from collections.abc import Callable, Collection, Iterator, Sequence
from pathlib import Path
from typing import Any

import anyio
import numpy as np

from xai.exceptions import ConfigurationError, StateFileError
from xai.logs import get_logger
from xai.memory._chroma import chromadb_module
from xai.memory._embeddings import Embedder, LocalMiniLM, local_minilm
from xai.memory._held import HeldVectors
from xai.memory._snapshot import Part
from xai.memory._store import IndexStore
from xai.memory._types import Fact

__all__ = ["VectorIndex", "cosines", "open_index", "pages", "warm_collections"]

_log = get_logger(__name__)
COLLECTION = "facts"


_function_class: Any = None
_function_lock = threading.Lock()


def _minilm_function_class() -> Any:
    """The chromadb embedding function for the local model, registered once by name, so a
    plain chromadb client opening the store can embed ``query_texts`` too."""
    with _function_lock:
        if _function_class is None:
            _register_minilm_function()
        return _function_class


def _register_minilm_function() -> None:
    global _function_class
    chromadb_module()  # whole, under its lock: the imports below find it loaded
    from chromadb.api.types import Documents, EmbeddingFunction, Embeddings
    from chromadb.utils.embedding_functions import (
        known_embedding_functions,
        register_embedding_function,
    )

    class XaiMiniLM(EmbeddingFunction[Documents]):
        def __init__(self, model: LocalMiniLM | None = None) -> None:
            self._model = model if model is not None else local_minilm()

        def __call__(self, input: Documents) -> Embeddings:
            return [np.asarray(v, dtype=np.float32) for v in self._model.embed_sync(list(input))]

        @staticmethod
        def name() -> str:
            return "xai-minilm-int8"

        def get_config(self) -> dict[str, Any]:
            return {}

        @staticmethod
        def build_from_config(config: dict[str, Any]) -> XaiMiniLM:
            return XaiMiniLM()

        def default_space(self) -> str:  # type: ignore[override]
            return "cosine"

    if XaiMiniLM.name() not in known_embedding_functions:
        register_embedding_function(XaiMiniLM)  # type: ignore[no-untyped-call]
    _function_class = XaiMiniLM


def _chroma_embedding_function(embedder: Embedder) -> Any:
    if not isinstance(embedder, LocalMiniLM):
        return None  # other embedders: vectors are always passed explicitly
    return _minilm_function_class()(embedder)


def cosines(matrix: np.ndarray, query: np.ndarray) -> np.ndarray:
    """The cosine similarity of each row of ``matrix`` (float32) with ``query``."""
    norms = np.linalg.norm(matrix, axis=1) * (float(np.linalg.norm(query)) or 1.0)
    return np.asarray((matrix @ query) / np.clip(norms, 1e-12, None))


def _metadata(fact: Fact) -> dict[str, str | int | float | bool]:
    return {
        "status": fact.status,
        "tier": fact.tier,
        "kind": fact.kind,
        "version": fact.version,
        "last_seen": fact.last_seen,
    }


class VectorIndex:
    """Nearest-neighbour search over facts; holds embeddings, ids and a few filterable fields."""

    def __init__(self, collection: Any, embedder: Embedder, *, where: str = "") -> None:
        self.embedder = embedder
        self.where = where
        self._collection = collection
        self._held = HeldVectors()
        self._versions: dict[str, int] = {}
        """The version of each fact the index holds (as written by this process)."""
        self.from_snapshot = False
        """Whether the index was found exactly as a snapshot held it (``adopt_sync``)."""

    async def upsert(self, facts: Sequence[Fact], vectors: Sequence[Sequence[float]]) -> None:
        if not facts:
            return
        ids = [f.id for f in facts]
        documents = [f.text for f in facts]
        metadatas: Any = [_metadata(f) for f in facts]
        embeddings: Any = [list(v) for v in vectors]

        def write() -> None:
            self._collection.upsert(
                ids=ids, embeddings=embeddings, documents=documents, metadatas=metadatas
            )

        with anyio.CancelScope(shield=True):  # a write done is a write held
            await anyio.to_thread.run_sync(write)
            self._held.put(ids, embeddings)
            self._versions.update((f.id, f.version) for f in facts)

    async def update_metadata(self, facts: Sequence[Fact]) -> None:
        """A fact changed but not its text: no new embedding needed."""
        if not facts:
            return
        ids = [f.id for f in facts]
        metadatas: Any = [_metadata(f) for f in facts]

        def write() -> None:
            self._collection.update(ids=ids, metadatas=metadatas)

        await anyio.to_thread.run_sync(write)
        self._versions.update((f.id, f.version) for f in facts if f.id in self._versions)

    async def nearest(
        self, vector: Sequence[float], k: int, *, tiers: Sequence[str] | None = None
    ) -> list[tuple[str, float]]:
        """Ids of the ``k`` nearest active facts and their cosine similarity."""
        if k <= 0:
            return []
        return await anyio.to_thread.run_sync(
            functools.partial(self.nearest_sync, vector, k, tiers=tiers)
        )

    def nearest_sync(
        self, vector: Sequence[float], k: int, *, tiers: Sequence[str] | None = None
    ) -> list[tuple[str, float]]:
        """``nearest``, blocking (in a worker thread)."""
        if k <= 0:
            return []
        # Only active facts are indexed: no filter unless a tier is asked for.
        where: dict[str, Any] | None = {"tier": {"$in": list(tiers)}} if tiers else None
        query: Any = [list(vector)]
        result = self._collection.query(
            query_embeddings=query, n_results=k, where=where, include=["distances"]
        )
        ids = result["ids"][0] if result["ids"] else []
        distances = result["distances"][0] if result["distances"] else []
        return [(i, 1.0 - float(d)) for i, d in zip(ids, distances, strict=True)]

    async def nearest_many(
        self, vectors: Sequence[Sequence[float]], k: int
    ) -> list[list[tuple[str, float]]]:
        """``nearest`` for many vectors in one query (one trip to the worker thread)."""
        if k <= 0 or not vectors:
            return [[] for _ in vectors]
        query: Any = [list(v) for v in vectors]

        def search() -> Any:
            return self._collection.query(
                query_embeddings=query, n_results=k, include=["distances"]
            )

        result = await anyio.to_thread.run_sync(search)
        ids = result["ids"] or [[] for _ in vectors]
        distances = result["distances"] or [[] for _ in vectors]
        return [
            [(i, 1.0 - float(d)) for i, d in zip(row_ids, row, strict=True)]
            for row_ids, row in zip(ids, distances, strict=True)
        ]

    def stored(self, ids: Sequence[str]) -> tuple[list[str], np.ndarray]:
        """The unit vectors of the indexed ``ids`` as float32 rows, from memory: the ids
        held (in the order given) and their rows."""
        return self._held.rows(ids)

    async def versions(self) -> dict[str, int]:
        """Every indexed id and the fact version it holds."""
        return await anyio.to_thread.run_sync(self.versions_sync)

    def versions_sync(self) -> dict[str, int]:
        """Blocking; also (re)loads the vectors held in memory (into a copy of their
        own, swapped in whole at the end)."""
        out: dict[str, int] = {}
        held = HeldVectors(capacity=self._collection.count())
        for result in pages(self._collection, ["metadatas", "embeddings"]):
            out.update(
                (i, int((m or {}).get("version", 0)))
                for i, m in zip(result["ids"], result["metadatas"] or [], strict=True)
            )
            if result["ids"]:
                held.put(result["ids"], result["embeddings"])
        self._held = held
        self._versions = dict(out)
        return out

    def adopt_sync(self, part: Part, suspects: Collection[str]) -> dict[str, int] | None:
        """``versions_sync`` from a snapshot: its rows, with the ``suspects`` (facts the
        ledger changed since, or that it lacks) read from chromadb by id. ``None`` when
        the index's count does not add up to it (then read the whole index). Blocking."""
        held = HeldVectors.of(part.ids, part.rows)
        versions = dict(zip(part.ids, part.versions or (), strict=True))
        wanted = list(suspects)
        held.drop(wanted)
        for i in wanted:
            versions.pop(i, None)
        for start in range(0, len(wanted), _PAGE):
            page = wanted[start : start + _PAGE]
            result: Any = self._collection.get(ids=page, include=["metadatas", "embeddings"])
            if result["ids"]:
                held.put(result["ids"], result["embeddings"])
                versions.update(
                    (i, int((m or {}).get("version", 0)))
                    for i, m in zip(result["ids"], result["metadatas"] or [], strict=True)
                )
        if int(self._collection.count()) != len(versions):
            return None
        self._held = held
        self._versions = dict(versions)
        self.from_snapshot = not wanted
        return versions

    def snapshot_part(self) -> Part:
        """What the index holds, for a snapshot: ids, versions and packed rows."""
        ids, rows = self._held.packed()
        return Part(ids, rows, [self._versions.get(i, 0) for i in ids])

    async def vectors(self, ids: Sequence[str]) -> dict[str, list[float]]:
        """The stored embeddings of ``ids`` (those the index has)."""
        wanted = list(ids)

        def read() -> Any:
            return self._collection.get(ids=wanted, include=["embeddings"])

        if not wanted:
            return {}
        result = await anyio.to_thread.run_sync(read)
        embeddings = result["embeddings"] if result["embeddings"] is not None else []
        return {i: [float(x) for x in e] for i, e in zip(result["ids"], embeddings, strict=True)}

    async def delete(self, ids: Sequence[str]) -> None:
        if ids:
            wanted = list(ids)
            with anyio.CancelScope(shield=True):
                await anyio.to_thread.run_sync(lambda: self._collection.delete(ids=wanted))
                self._held.drop(wanted)
                for i in wanted:
                    self._versions.pop(i, None)

    async def count(self) -> int:
        return int(await anyio.to_thread.run_sync(self._collection.count))


_PAGE = 10_000
"""Rows read per chromadb ``get``: one unbounded ``get`` of 100,000 rows fails in chromadb
1.5 ("too many SQL variables"), which made a large memory look corrupt on open."""


def pages(collection: Any, include: list[str]) -> Iterator[Any]:
    """Every row of ``collection``, ``_PAGE`` at a time (blocking)."""
    offset = 0
    while True:
        result: Any = collection.get(include=include, limit=_PAGE, offset=offset)
        yield result
        if len(result["ids"]) < _PAGE:
            return
        offset += _PAGE


def _forget_store(path: Path) -> None:
    """Drop chromadb's process-wide cache entry for ``path``: a store that failed to
    start stays cached half-built (chromadb 1.5), and every later client on that path
    would get it back broken."""
    chromadb_module()
    from chromadb.api.shared_system_client import SharedSystemClient

    systems: dict[str, Any] = getattr(SharedSystemClient, "_identifier_to_system", {})
    counts: dict[str, int] = getattr(SharedSystemClient, "_identifier_to_refcount", {})
    systems.pop(str(path), None)
    counts.pop(str(path), None)


def warm_collections(store: IndexStore, names: tuple[str, str], embedder: Embedder) -> None:
    """Open the facts' and the episodes' collections ``names`` as ``open_index`` and
    ``EpisodeIndex.open`` do, and ask each its count, which loads its HNSW graph: what
    they would do first, done ahead (blocking)."""
    facts, episodes = names
    function = _chroma_embedding_function(embedder)
    store.collection(facts, embedder, embedding_function=function, what="memory").count()
    store.collection(episodes, embedder, what="episodes' index").count()


def open_index(
    store: IndexStore,
    name: str,
    embedder: Embedder,
    *,
    own: bool,
    snapshot: Part | None = None,
    suspects: Callable[[Part], Collection[str]] | None = None,
) -> tuple[VectorIndex, dict[str, int], IndexStore]:
    """Open the facts' index ``name`` in ``store`` and read what it holds (id -> version).

    The index is derived from the ledger. In a memory's own embedded store, a store
    chromadb cannot read (a corrupt ``chroma.sqlite3``) is set aside as
    ``<dir>.corrupt`` (replacing an older one) with a warning, and an empty one is made
    in its place for the caller to refill from the ledger: the store returned is then
    a new one. A ``ConfigurationError`` (other embeddings) is not corruption, and a
    store that is not the memory's ``own`` (shared, or a server) is never set aside.
    With a ``snapshot`` (``_snapshot``), what it holds is taken from there and only the
    ``suspects`` it names are read. Blocking: call it in a worker thread.
    """
    function = _chroma_embedding_function(embedder)
    try:
        collection = store.collection(name, embedder, embedding_function=function, what="memory")
        index = VectorIndex(collection, embedder, where=store.where)
        if snapshot is not None and suspects is not None:
            adopted = index.adopt_sync(snapshot, suspects(snapshot))
            if adopted is not None:
                return index, adopted, store
            _log.info("memory.snapshot_stale", index=name)
        return index, index.versions_sync(), store
    except ConfigurationError:
        raise
    except Exception as exc:  # chromadb's own errors, sqlite's, a panic in its bindings
        path = store.path
        if path is None:  # a server: its own errors
            raise
        if not own:  # shared by many memories: not this one's to set aside
            _forget_store(path)  # (half-built: a store made after it is set aside is fresh)
            raise StateFileError(
                f"the memory index store {path / 'chroma.sqlite3'} cannot be read "
                f"({type(exc).__name__}: {exc})",
                path=str(path / "chroma.sqlite3"),
                advice="stop the process, move that directory aside and start again: "
                "every Agent's index is rebuilt from its ledger",
            ) from exc
        store.close()
        _forget_store(path)
        aside = path.with_name(f"{path.name}.corrupt")
        shutil.rmtree(aside, ignore_errors=True)
        path.rename(aside)
        _log.warning(
            "memory.index_rebuilt",
            path=str(path),
            set_aside=str(aside),
            error=f"{type(exc).__name__}: {exc}",
        )
    fresh = IndexStore.local(path)
    collection = fresh.collection(name, embedder, embedding_function=function, what="memory")
    return VectorIndex(collection, embedder, where=fresh.where), {}, fresh
