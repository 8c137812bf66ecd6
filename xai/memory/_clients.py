"""The process's chromadb clients: one per directory or server, shared, and parked when idle.

Every ``IndexStore`` on the same directory (or the same server and settings) uses one
``SharedClient`` from a process-wide registry; the client closes when the last store
using it closes. That alone does not help Agents that each keep their memory in a
directory of their own (a standalone ``Agent``, the README's quick start): each of their
embedded clients is a chromadb system with its own Rust runtime, about 6 threads,
7 descriptors and 1.2 MB (measured: 1,000 Agents, 50 of them searched once,
``bench/agents_footprint.py``). So embedded clients nobody is using are *parked*: once
more than ``IDLE_EMBEDDED`` of them are open, the least recently used idle ones are
closed, and made again (with their collections) by their next call. Only the threads
and files of chromadb go: the memory keeps its state, and the index its vectors.

A call holds its client busy for as long as it runs (``using``), so a client is never
closed under a call; parking is done by the thread that ends a call, which is always a
worker thread (every chromadb call is blocking).
"""

from __future__ import annotations

import ctypes
import functools
import itertools
import sys
import threading
from collections.abc import Callable, Hashable, Iterator
from contextlib import contextmanager
from typing import Any

__all__ = ["IDLE_EMBEDDED", "SharedClient", "open_clients", "shared_client"]

IDLE_EMBEDDED = 1
"""Embedded clients kept open while idle: the one used last. One Agent that searches
keeps its client; a process of many standalone Agents holds one client's threads, not
one per Agent. Its next call opens a parked client again (about 20 ms)."""

_registry: dict[Hashable, SharedClient] = {}
_open: set[SharedClient] = set()
"""The embedded clients that may be open (the ones parking looks at)."""
_registry_lock = threading.Lock()
_ticks = itertools.count(1)


class SharedClient:
    """One chromadb client, made on first use, for every store on its directory or server."""

    def __init__(self, key: Hashable, make: Callable[[], Any], *, embedded: bool) -> None:
        self.key = key
        self.embedded = embedded
        """An embedded store (a ``PersistentClient``): parked when idle. A server's
        client holds no runtime of its own and stays open."""
        self._make = make
        self._client: Any = None
        self._users = 0
        self._busy = 0
        self._used = 0
        self._lock = threading.RLock()
        self._collections: dict[str, Any] = {}
        """The collections fetched from the open client (dropped with it)."""

    @property
    def started(self) -> bool:
        return self._client is not None

    def acquire(self) -> None:
        with self._lock:
            self._users += 1

    def release(self) -> None:
        """One store lets go; the last one closes the client (and leaves the registry)."""
        with _registry_lock, self._lock:
            self._users -= 1
            if self._users > 0:
                return
            if _registry.get(self.key) is self:
                del _registry[self.key]
            _open.discard(self)
            client, self._client = self._client, None
            self._collections.clear()
        _close(client)

    @contextmanager
    def using(self) -> Iterator[Any]:
        """The client (made if needed), held busy until the block ends; then idle embedded
        clients beyond ``IDLE_EMBEDDED`` are parked."""
        with self._lock:
            if self._client is None:
                self._client = self._make()
            self._busy += 1
        try:
            # Not kept in a local: an error's traceback holds this frame, and with it a
            # client closed since (and the connections a dead server cut).
            yield self._client
        finally:
            with self._lock:
                self._busy -= 1
                self._used = next(_ticks)
            if self.embedded:
                _park_idle(self)

    def collection(self, name: str, get: Callable[[Any], Any], client: Any) -> Any:
        """The collection ``name`` of ``client`` (the open one, from ``using``), fetched
        with ``get`` once per client made."""
        with self._lock:
            collection = self._collections.get(name)
            if collection is None:
                collection = self._collections[name] = get(client)
            return collection

    def park(self) -> bool:
        """Close the client if nobody is using it (the next call makes it again)."""
        with self._lock:
            if self._busy or self._client is None:
                return False
            client, self._client = self._client, None
            self._collections.clear()
        _close(client)
        _give_back_memory()
        return True

    def idle_since(self) -> int | None:
        """When an open client was last used (a tick), or None if it is closed or busy."""
        with self._lock:
            if self._client is None or self._busy:
                return None
            return self._used


def shared_client(key: Hashable, make: Callable[[], Any], *, embedded: bool) -> SharedClient:
    """The process's client for ``key`` (a directory or a server's settings), one user more."""
    with _registry_lock:
        shared = _registry.get(key)
        if shared is None:
            shared = _registry[key] = SharedClient(key, make, embedded=embedded)
        shared.acquire()
        return shared


def open_clients() -> int:
    """How many chromadb clients this process holds open (for tests and benches)."""
    with _registry_lock:
        shared = list(_registry.values())
    return sum(1 for s in shared if s.started)


def _park_idle(used: SharedClient) -> None:
    """``used`` was just used: park the idle embedded clients beyond ``IDLE_EMBEDDED``."""
    with _registry_lock:
        if used.started and _registry.get(used.key) is used:
            _open.add(used)
        if len(_open) <= IDLE_EMBEDDED:
            return
        candidates = list(_open)
    idle = [(tick, s) for s in candidates if (tick := s.idle_since()) is not None]
    idle.sort(key=lambda item: item[0], reverse=True)  # the most recently used first
    for _, shared in idle[IDLE_EMBEDDED:]:
        if shared.park():
            with _registry_lock:
                if not shared.started:
                    _open.discard(shared)


def _give_back_memory() -> None:
    """Hand the heap a closed chromadb runtime freed back to the system (glibc's
    ``malloc_trim``; nothing elsewhere). Its threads freed their memory into arenas
    that glibc keeps for the process: 166 KiB of RSS stayed per searched Agent without
    this, 35 KiB per client opened and closed in chromadb alone; the call takes about
    0.3 ms, once per client parked."""
    trim = _malloc_trim()
    if trim is not None:
        trim(0)


@functools.cache
def _malloc_trim() -> Callable[[int], int] | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(None)
        trim: Callable[[int], int] = libc.malloc_trim
    except (OSError, AttributeError):  # not glibc (musl has no malloc_trim)
        return None
    return trim


def _close(client: Any) -> None:
    """Release a chromadb client (chromadb stops an embedded system when its last client
    closes)."""
    if client is None:
        return
    close = getattr(client, "close", None)
    if close is not None:
        close()
    # chromadb's HTTP client keeps an httpx session its close() leaves open (1.5):
    # close it, or its connections linger until the garbage collector finds them.
    session = getattr(getattr(client, "_server", None), "_session", None)
    if session is not None and callable(getattr(session, "close", None)):
        session.close()
