"""RAG: document chunks on chromadb with real embeddings, filtered by scenario and documents.

Ingest splits a document into chunks that respect a token budget (counted
with the embedding model's own tokenizer when it is the local one) with an
overlap, embeds them, and writes them with ``scenario_id``, ``document_id``,
``source_file``, ``chunk_id`` and ``created_at``. Re-ingesting a document
replaces its chunks. Retrieval filters by scenario and, when given, by the
selected documents.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import anyio
import msgspec

from xai._reading import MiB, read_text_capped
from xai.exceptions import ConfigurationError
from xai.memory import Embedder, default_embedder, query_embedding, token_counter

__all__ = ["MAX_DOCUMENT_BYTES", "KnowledgeBase", "Reference", "chunk_text"]

MAX_DOCUMENT_BYTES = 32 * MiB
"""The largest file ``KnowledgeBase.ingest_file`` reads."""

COLLECTION = "knowledge"
_TEXT_SUFFIXES = {".txt", ".md", ".markdown", ".rst", ".text"}


class Reference(msgspec.Struct, frozen=True, kw_only=True):
    """A retrieved chunk: its text, where it came from, and how close it was (cosine)."""

    content: str
    source_file: str
    document_id: str
    chunk_id: str
    score: float


# Sentence ends, in Latin and CJK punctuation (the full-width marks are meant).
_SENTENCE = re.compile(r"(?<=[.!?\u3002\uff01\uff1f])\s+|\n{2,}")


def chunk_text(
    text: str, count_tokens: Callable[[str], int], *, max_tokens: int = 200, overlap: int = 40
) -> list[str]:
    """Split into chunks of at most ``max_tokens`` (sentences kept whole when they fit),
    each starting with about ``overlap`` tokens of the previous one."""
    if overlap >= max_tokens:
        raise ConfigurationError("the overlap must be smaller than the chunk size")
    pieces: list[str] = []
    for sentence in (s.strip() for s in _SENTENCE.split(text)):
        if not sentence:
            continue
        if count_tokens(sentence) <= max_tokens:
            pieces.append(sentence)
            continue
        words = sentence.split()  # a sentence too long on its own: cut it by words
        current: list[str] = []
        for word in words:
            if current and count_tokens(" ".join([*current, word])) > max_tokens:
                pieces.append(" ".join(current))
                current = []
            current.append(word)
        if current:
            pieces.append(" ".join(current))
    chunks: list[str] = []
    current_pieces: list[str] = []
    for piece in pieces:
        candidate = " ".join([*current_pieces, piece])
        if current_pieces and count_tokens(candidate) > max_tokens:
            chunks.append(" ".join(current_pieces))
            tail: list[str] = []
            for previous in reversed(current_pieces):  # carry the overlap over
                if count_tokens(" ".join([previous, *tail])) > overlap:
                    break
                tail.insert(0, previous)
            current_pieces = [*tail, piece]
            if count_tokens(" ".join(current_pieces)) > max_tokens:
                current_pieces = [piece]
        else:
            current_pieces.append(piece)
    if current_pieces:
        chunks.append(" ".join(current_pieces))
    return chunks


class KnowledgeBase:
    """Knowledge chunks under ``directory`` (a chromadb store, cosine space)."""

    def __init__(
        self,
        directory: str | Path,
        *,
        embedder: Embedder | None = None,
        max_tokens: int = 200,
        overlap: int = 40,
    ) -> None:
        import chromadb
        from chromadb.config import Settings

        self.directory = Path(directory).expanduser()
        self.embedder = embedder if embedder is not None else default_embedder()
        self.max_tokens = max_tokens
        self.overlap = overlap
        self.directory.mkdir(parents=True, exist_ok=True)
        self._client = chromadb.PersistentClient(
            path=str(self.directory), settings=Settings(anonymized_telemetry=False)
        )
        self._collection = self._client.get_or_create_collection(
            COLLECTION,
            configuration={"hnsw": {"space": "cosine"}},
            metadata={"embedder": self.embedder.name},
        )
        stored = (self._collection.metadata or {}).get("embedder")
        if stored is not None and stored != self.embedder.name:
            raise ConfigurationError(
                f"the knowledge at {self.directory} was embedded with {stored!r}, "
                f"not {self.embedder.name!r}: re-ingest into a new directory"
            )
        self._count = token_counter(self.embedder)

    async def ingest(
        self, scenario_id: str, document_id: str, text: str, *, source_file: str = ""
    ) -> int:
        """Replace the document's chunks with fresh ones. Returns the number of chunks."""
        chunks = await anyio.to_thread.run_sync(
            lambda: chunk_text(text, self._count, max_tokens=self.max_tokens, overlap=self.overlap)
        )
        vectors = await self.embedder.embed(chunks) if chunks else []
        now = time.time()
        ids = [f"{scenario_id}:{document_id}:{n}" for n in range(len(chunks))]
        metadatas: Any = [
            {
                "scenario_id": scenario_id,
                "document_id": document_id,
                "source_file": source_file or document_id,
                "chunk_id": chunk_id,
                "created_at": now,
            }
            for chunk_id in ids
        ]
        embeddings: Any = [list(v) for v in vectors]
        where: Any = {"$and": [{"scenario_id": scenario_id}, {"document_id": document_id}]}

        def write() -> None:
            self._collection.delete(where=where)
            if ids:
                self._collection.add(
                    ids=ids, documents=chunks, embeddings=embeddings, metadatas=metadatas
                )

        await anyio.to_thread.run_sync(write)
        return len(chunks)

    async def ingest_file(
        self, scenario_id: str, path: str | Path, *, document_id: str | None = None
    ) -> int:
        """Ingest a text or markdown file (its stem is the default document id)."""
        path = Path(path)
        if path.suffix.lower() not in _TEXT_SUFFIXES:
            raise ConfigurationError(
                f"{path}: only text and markdown files can be ingested ({', '.join(sorted(_TEXT_SUFFIXES))})"
            )
        text = await anyio.to_thread.run_sync(
            lambda: read_text_capped(path, MAX_DOCUMENT_BYTES, what="the document")
        )
        return await self.ingest(scenario_id, document_id or path.stem, text, source_file=path.name)

    async def retrieve(
        self,
        question: str,
        scenario_id: str,
        *,
        document_ids: Sequence[str] | None = None,
        top_k: int = 4,
        min_score: float = 0.0,
    ) -> list[Reference]:
        """The ``top_k`` chunks of the scenario (and of the chosen documents) closest to ``question``."""
        vector = await query_embedding(self.embedder)(question)
        conditions: list[dict[str, Any]] = [{"scenario_id": scenario_id}]
        if document_ids:
            conditions.append({"document_id": {"$in": list(document_ids)}})
        where: Any = conditions[0] if len(conditions) == 1 else {"$and": conditions}
        query: Any = [list(vector)]

        def search() -> Any:
            return self._collection.query(
                query_embeddings=query,
                n_results=top_k,
                where=where,
                include=["documents", "metadatas", "distances"],
            )

        result = await anyio.to_thread.run_sync(search)
        out: list[Reference] = []
        for text, meta, distance in zip(
            result["documents"][0], result["metadatas"][0], result["distances"][0], strict=True
        ):
            score = 1.0 - float(distance)
            if score < min_score:
                continue
            out.append(
                Reference(
                    content=text,
                    source_file=str(meta["source_file"]),
                    document_id=str(meta["document_id"]),
                    chunk_id=str(meta["chunk_id"]),
                    score=round(score, 4),
                )
            )
        return out

    async def aclose(self) -> None:
        """Close the embeddings endpoint client, if the embedder has one."""
        aclose = getattr(self.embedder, "aclose", None)
        if aclose is not None:
            await aclose()

    async def documents(self, scenario_id: str) -> dict[str, int]:
        """Document ids of a scenario and their number of chunks."""
        where: Any = {"scenario_id": scenario_id}

        def read() -> Any:
            return self._collection.get(where=where, include=["metadatas"])

        result = await anyio.to_thread.run_sync(read)
        counts: dict[str, int] = {}
        for meta in result["metadatas"] or []:
            counts[str(meta["document_id"])] = counts.get(str(meta["document_id"]), 0) + 1
        return counts
