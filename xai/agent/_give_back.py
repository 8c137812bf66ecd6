"""Memory a host gives back to the system as Sessions close (issue 33, item 6).

Two things stay in a long-running host's RSS after a Session has closed although
nothing uses them (``bench/soak.py``, 200 Sessions of 3 turns over ``xai serve``):

- The closed Session itself. Its parts refer to each other (its bound methods, closures
  over it), so only the cyclic collector frees it, and CPython runs a full collection
  only once the objects that survived since the last one reach a quarter of all
  long-lived objects: in a process holding chromadb, onnxruntime and the web stack, some
  thousands of Sessions apart. Until then every closed Session's objects stay (about
  3.5 KiB of RSS slope per Session in the soak).
- What the threads (chromadb, the embedder, file writes) freed into glibc's arenas,
  kept for the process (about 4 KiB of slope, and the RSS 50 MiB higher after 200
  Sessions).

So every ``EVERY`` Sessions a host has seen close it runs a full collection and then
``malloc_trim`` (glibc only; in a worker thread: ctypes lets go of the GIL). The
collection holds the event loop: with some 125,000 tracked objects (one Agent, chromadb,
onnxruntime) it took 220-310 ms on a 2-core machine at load 9, so once per 32 closed
Sessions (every 8: slope 14 KiB instead of 16, four times the stalls). A Session that
broke its own cycles when it closes would make the collection unnecessary.
"""

from __future__ import annotations

import ctypes
import functools
import gc
import sys
from collections.abc import Callable, Coroutine
from typing import Any

import anyio

__all__ = ["EVERY", "GiveBack"]

EVERY = 32
"""Closed Sessions between two collections."""


class GiveBack:
    """Counts closed Sessions; every ``every`` of them, collects and trims."""

    def __init__(
        self,
        start_soon: Callable[[Callable[[], Coroutine[Any, Any, Any]]], None],
        every: int = EVERY,
    ) -> None:
        self.every = every
        self.closed = 0
        """Closed Sessions counted since the host started."""
        self.collections = 0
        """Collections run since the host started."""
        self._start_soon = start_soon

    def session_closed(self) -> None:
        self.closed += 1
        if self.closed % self.every:
            return
        gc.collect()
        self.collections += 1
        trim = _malloc_trim()
        if trim is not None:
            self._start_soon(functools.partial(anyio.to_thread.run_sync, trim, 0))


@functools.cache
def _malloc_trim() -> Callable[[int], int] | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        trim: Callable[[int], int] = ctypes.CDLL(None).malloc_trim
    except (OSError, AttributeError):  # not glibc (musl has no malloc_trim)
        return None
    return trim
