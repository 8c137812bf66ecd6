"""chromadb, imported once per process, under a lock, whole or not at all.

chromadb's package imports its submodules in an order of its own, and Python takes a
submodule's import lock before its parent's: two threads that start on different
chromadb modules at once (``import chromadb`` in one, ``chromadb.api.types`` or
``chromadb.utils.embedding_functions`` in another, as two memories opening side by
side in worker threads did) deadlock. Python breaks the deadlock by failing one
import, and the modules it had half run stay in ``sys.modules``: every later use in
that process fails ("cannot import name 'ServerAPI' from 'chromadb.api'") until a
restart. Measured before this module: 5 of 6 fresh processes that opened four
memories at once hit it.

So every use of chromadb in ``xai.memory`` goes through ``chromadb_module``: one
thread imports chromadb and every submodule the memory uses, the others wait for
it; an import that fails takes the modules it added out of ``sys.modules`` again,
so the next call imports afresh instead of finding them half run.
"""

from __future__ import annotations

import sys
import threading
from types import ModuleType

__all__ = ["chromadb_module"]

_SUBMODULES = (
    "chromadb",
    "chromadb.config",
    "chromadb.api.types",
    "chromadb.api.shared_system_client",
    "chromadb.utils.embedding_functions",
)
"""Every chromadb module ``xai.memory`` names, imported together."""

_ATTEMPTS = 2
"""A failed import is tried once more at once: code outside ``xai.memory`` importing
chromadb in another thread can still deadlock with it (then it fails, and is undone)."""

_lock = threading.Lock()
_loaded: ModuleType | None = None


def chromadb_module() -> ModuleType:
    """The ``chromadb`` package, with the submodules ``xai.memory`` uses loaded.

    Blocking (the first call imports it, about 0.6 s): call it in a worker thread.
    Raises the import's error when chromadb cannot be imported twice running; nothing
    of it is left in ``sys.modules`` then."""
    loaded = _loaded
    if loaded is not None:
        return loaded
    with _lock:
        if _loaded is None:
            _import()
        assert _loaded is not None
        return _loaded


def _import() -> None:
    global _loaded
    for attempt in range(_ATTEMPTS):
        before = set(sys.modules)
        try:
            for name in _SUBMODULES:
                __import__(name)
        except BaseException:
            _forget(set(sys.modules) - before)
            if attempt + 1 == _ATTEMPTS:
                raise
            continue
        _loaded = sys.modules["chromadb"]
        return


def _forget(names: set[str]) -> None:
    """Take the chromadb modules an import that failed added out of ``sys.modules``."""
    for name in names:
        if name == "chromadb" or name.startswith(("chromadb.", "chromadb_rust_bindings")):
            sys.modules.pop(name, None)
