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
from collections.abc import Callable, Hashable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from xai.exceptions import ConfigurationError, MemoryUnavailableError
from xai.memory._chroma import chromadb_module
from xai.memory._clients import SharedClient, shared_client
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
    cannot be reached, fetched from its client for each call: when the client is parked
    and made again, the collection is fetched again (every call is blocking: the callers
    run them in worker threads)."""

    __slots__ = ("_get", "_name", "_shared", "_where", "metadata")

    def __init__(
        self, shared: SharedClient, name: str, get: Callable[[Any], Any], metadata: Any, where: str
    ) -> None:
        self._shared = shared
        self._name = name
        self._get = get
        """Fetches the collection from a client (the same call that made it)."""
        self._where = where
        self.metadata = metadata

    def __getattr__(self, name: str) -> Any:
        def call(*args: Any, **kwargs: Any) -> Any:
            with reachable(self._where), self._shared.using() as client:
                method = getattr(self._shared.collection(self._name, self._get, client), name)
                del client
                try:
                    return method(*args, **kwargs)
                finally:  # an error's traceback holds this frame: not the client with it
                    del method

        return call


class IndexStore:
    """A handle on the process's chromadb client for one directory or server (blocking:
    call from a worker thread). Handles on the same place share one client (``_clients``),
    made on first use and closed when the last handle closes."""

    def __init__(
        self,
        make: Callable[[], Any],
        *,
        where: str,
        path: Path | None = None,
        key: Hashable | None = None,
    ) -> None:
        self.where = where
        """Where it is, for messages: a directory or a server's address."""
        self.path = path
        """The directory of an embedded store (None for a server)."""
        self._make = make
        self._key: Hashable = key if key is not None else ("own", id(self))
        self._shared: SharedClient | None = None
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

        key = ("local", str(directory.absolute()))
        return cls(make, where=str(directory), path=directory, key=key)

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

        key = ("server", host, port, ssl, tuple(sorted((headers or {}).items())))
        return cls(make, where=f"{'https' if ssl else 'http'}://{host}:{port}", key=key)

    @property
    def started(self) -> bool:
        """Whether this store holds a running client (not parked)."""
        shared = self._shared
        return shared is not None and shared.started

    def _held(self) -> SharedClient:
        with self._guard:
            if self._shared is None:
                self._shared = shared_client(self._key, self._make, embedded=self.path is not None)
            return self._shared

    def client(self) -> Any:
        """The chromadb client (made if needed). Held by nobody: parked, it is made again by
        the next call through a collection; code that keeps it should not."""
        with reachable(self.where), self._held().using() as client:
            return client

    def collection(
        self, name: str, embedder: Embedder, *, embedding_function: Any = None, what: str = "index"
    ) -> Any:
        """The cosine-space collection ``name``, made if missing; refused if it was built
        with other embeddings than ``embedder``."""
        options: dict[str, Any] = {"configuration": {"hnsw": {"space": "cosine"}}}
        if embedding_function is not None:
            options["embedding_function"] = embedding_function

        def get(client: Any) -> Any:
            return client.get_or_create_collection(
                name, metadata={"embedder": embedder.name}, **options
            )

        shared = self._held()
        try:
            with reachable(self.where), shared.using() as client:
                collection = shared.collection(name, get, client)
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
        return _Guarded(shared, name, get, collection.metadata, self.where)

    def close(self) -> None:
        """Let go of the client: the last store on its place closes it (chromadb stops an
        embedded store when its last client closes). Idempotent; ``client()`` or
        ``collection()`` after it take it up again."""
        with self._guard:
            shared, self._shared = self._shared, None
        if shared is not None:
            shared.release()
