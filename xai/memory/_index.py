"""The vector index of active facts: a chromadb collection in cosine space, on disk.

The index is derived data: the ledger is the truth, and ``reconcile`` makes the
index agree with it (after a kill between a ledger write and an index write).
chromadb is synchronous, so every call runs in a worker thread.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import anyio

from xai.logs import get_logger
from xai.memory._embeddings import Embedder, LocalMiniLM
from xai.memory._types import Fact

__all__ = ["VectorIndex"]

_log = get_logger(__name__)
COLLECTION = "facts"


def _chroma_embedding_function(embedder: Embedder) -> Any:
    """Expose the local model to chromadb as its embedding function (query_texts work too)."""
    if not isinstance(embedder, LocalMiniLM):
        return None
    model: LocalMiniLM = embedder
    from chromadb.api.types import Documents, EmbeddingFunction, Embeddings

    class XaiMiniLM(EmbeddingFunction[Documents]):
        def __init__(self) -> None:
            self._model = model

        def __call__(self, input: Documents) -> Embeddings:
            import numpy as np

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

    return XaiMiniLM()


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

    def __init__(self, path: Path, embedder: Embedder) -> None:
        import chromadb
        from chromadb.config import Settings

        self.path = path
        self.embedder = embedder
        path.mkdir(parents=True, exist_ok=True)
        self._client = chromadb.PersistentClient(
            path=str(path), settings=Settings(anonymized_telemetry=False)
        )
        function = _chroma_embedding_function(embedder)
        options: dict[str, Any] = {"configuration": {"hnsw": {"space": "cosine"}}}
        if function is not None:
            options["embedding_function"] = function
        self._collection = self._client.get_or_create_collection(
            COLLECTION, metadata={"embedder": embedder.name}, **options
        )
        stored = (self._collection.metadata or {}).get("embedder")
        if stored is not None and stored != embedder.name:
            raise ValueError(
                f"the memory at {path} was built with embeddings {stored!r}, not {embedder.name!r}"
            )

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

        await anyio.to_thread.run_sync(write)

    async def update_metadata(self, facts: Sequence[Fact]) -> None:
        """A fact changed but not its text: no new embedding needed."""
        if not facts:
            return
        ids = [f.id for f in facts]
        metadatas: Any = [_metadata(f) for f in facts]

        def write() -> None:
            self._collection.update(ids=ids, metadatas=metadatas)

        await anyio.to_thread.run_sync(write)

    async def nearest(
        self, vector: Sequence[float], k: int, *, tiers: Sequence[str] | None = None
    ) -> list[tuple[str, float]]:
        """Ids of the ``k`` nearest active facts and their cosine similarity."""
        where: dict[str, Any] = {"status": "active"}
        if tiers:
            where = {"$and": [where, {"tier": {"$in": list(tiers)}}]}
        query: Any = [list(vector)]

        def search() -> Any:
            return self._collection.query(
                query_embeddings=query, n_results=k, where=where, include=["distances"]
            )

        if k <= 0:
            return []
        result = await anyio.to_thread.run_sync(search)
        ids = result["ids"][0] if result["ids"] else []
        distances = result["distances"][0] if result["distances"] else []
        return [(i, 1.0 - float(d)) for i, d in zip(ids, distances, strict=True)]

    async def versions(self) -> dict[str, int]:
        """Every indexed id and the fact version it holds."""

        def read() -> Any:
            return self._collection.get(include=["metadatas"])

        result = await anyio.to_thread.run_sync(read)
        return {
            i: int((m or {}).get("version", 0))
            for i, m in zip(result["ids"], result["metadatas"] or [], strict=True)
        }

    async def delete(self, ids: Sequence[str]) -> None:
        if ids:
            wanted = list(ids)
            await anyio.to_thread.run_sync(lambda: self._collection.delete(ids=wanted))

    async def count(self) -> int:
        return int(await anyio.to_thread.run_sync(self._collection.count))
