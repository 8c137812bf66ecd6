"""Where the memory's vector indexes live: one chromadb client, many collections.

A memory alone keeps its indexes in its own directory (``IndexStore.local``:
an embedded chromadb, started when the index is first needed). Many memories
in one process share one store (an ``AgentHost`` makes one for all its
Agents), each under its own collection names, so an idle Agent holds no
chromadb client, threads or files of its own. A cluster puts them on a Chroma
server (``IndexStore.server``): every host reaches the same collections.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from xai.exceptions import ConfigurationError, MemoryUnavailableError
from xai.memory._chroma import chromadb_module
from xai.memory._embeddings import Embedder

__all__ = ["IndexStore", "collection_names", "reachable"]

_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")


def collection_names(namespace: str | None) -> tuple[str, str]:
    """The facts' and the episodes' collection names of one memory in a shared store
    (``facts`` and ``episodes`` in a store of its own)."""
    if namespace is None:
        return "facts", "episodes"
    safe = _UNSAFE.sub(lambda m: f"_{ord(m.group()):02x}", namespace)
    return f"xai-{safe}-facts", f"xai-{safe}-episodes"


@contextmanager
def reachable(where: str) -> Iterator[None]:
    """Turn "the store cannot be reached" (a Chroma server down, a connection cut or timed
    out) into ``MemoryUnavailableError``; every other error passes as it is."""
    try:
        yield
    except Exception as exc:
        import httpx

        if isinstance(exc, httpx.TransportError):
            raise MemoryUnavailableError(
                f"the memory's index store at {where} cannot be reached: "
                f"{type(exc).__name__}: {exc}",
                where=where,
            ) from exc
        raise


class _Guarded:
    """A chromadb collection whose calls raise ``MemoryUnavailableError`` when its store
    cannot be reached (every call is blocking: the callers run them in worker threads)."""

    __slots__ = ("_collection", "_where")

    def __init__(self, collection: Any, where: str) -> None:
        self._collection = collection
        self._where = where

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._collection, name)
        if not callable(value):
            return value

        def call(*args: Any, **kwargs: Any) -> Any:
            with reachable(self._where):
                return value(*args, **kwargs)

        return call


class IndexStore:
    """A chromadb client made on first use (blocking: call from a worker thread)."""

    def __init__(self, make: Callable[[], Any], *, where: str, path: Path | None = None) -> None:
        self.where = where
        """Where it is, for messages: a directory or a server's address."""
        self.path = path
        """The directory of an embedded store (None for a server)."""
        self._make = make
        self._client: Any = None
        self._guard = threading.Lock()

    @classmethod
    def local(cls, path: str | Path) -> IndexStore:
        """An embedded store on disk (chromadb ``PersistentClient``)."""
        directory = Path(path).expanduser()

        def make() -> Any:
            chromadb = chromadb_module()
            from chromadb.config import Settings

            directory.mkdir(parents=True, exist_ok=True)
            return chromadb.PersistentClient(
                path=str(directory), settings=Settings(anonymized_telemetry=False)
            )

        return cls(make, where=str(directory), path=directory)

    @classmethod
    def server(
        cls, host: str, port: int, *, ssl: bool = False, headers: dict[str, str] | None = None
    ) -> IndexStore:
        """A Chroma server (``chroma run``), through chromadb's ``HttpClient``."""

        def make() -> Any:
            chromadb = chromadb_module()
            from chromadb.config import Settings

            return chromadb.HttpClient(
                host=host,
                port=port,
                ssl=ssl,
                headers=headers,
                settings=Settings(anonymized_telemetry=False),
            )

        return cls(make, where=f"{'https' if ssl else 'http'}://{host}:{port}")

    @property
    def started(self) -> bool:
        return self._client is not None

    def client(self) -> Any:
        with self._guard:
            if self._client is None:
                with reachable(self.where):
                    self._client = self._make()
            return self._client

    def collection(
        self, name: str, embedder: Embedder, *, embedding_function: Any = None, what: str = "index"
    ) -> Any:
        """The cosine-space collection ``name``, made if missing; refused if it was built
        with other embeddings than ``embedder``."""
        options: dict[str, Any] = {"configuration": {"hnsw": {"space": "cosine"}}}
        if embedding_function is not None:
            options["embedding_function"] = embedding_function
        try:
            with reachable(self.where):
                collection = self.client().get_or_create_collection(
                    name, metadata={"embedder": embedder.name}, **options
                )
        except ValueError as exc:  # chromadb: "Embedding function conflict" and the like
            raise ConfigurationError(
                f"the {what} {name!r} at {self.where} cannot be opened with embeddings "
                f"{embedder.name!r}: {exc}"
            ) from None
        stored = (collection.metadata or {}).get("embedder")
        if stored is not None and stored != embedder.name:
            raise ConfigurationError(
                f"the {what} {name!r} at {self.where} was built with embeddings {stored!r}, "
                f"not {embedder.name!r}"
            )
        return _Guarded(collection, self.where)

    def close(self) -> None:
        """Release the client (chromadb stops an embedded store when its last user closes)."""
        with self._guard:
            client, self._client = self._client, None
        close = getattr(client, "close", None)
        if close is not None:
            close()
        # chromadb's HTTP client keeps an httpx session its close() leaves open (1.5):
        # close it, or its connections linger until the garbage collector finds them.
        session = getattr(getattr(client, "_server", None), "_session", None)
        if session is not None and callable(getattr(session, "close", None)):
            session.close()
