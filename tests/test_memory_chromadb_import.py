"""chromadb's first import, made by memories opening side by side in worker threads.

Each check runs in fresh processes (the import happens once per process): four
memories, two with the local model and two with another embedder (so their worker
threads start on different chromadb modules), open at once through
``anyio.to_thread``; then every one of them must decide a candidate and find it.
Before the import went under one lock, 5 of 6 such processes deadlocked in the
import, and every memory write in them failed afterwards.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

_CHILD = r"""
import sys
from collections.abc import Sequence

import anyio

from xai.memory import LongTermMemory, local_minilm
from xai.messages import MemoryCandidate


class Other:
    name = "test:other"
    dimension = 4

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        return [[1.0, 0.0, 0.0, 0.0] for _ in texts]


async def main(root: str) -> None:
    memories = [
        LongTermMemory(f"{root}/{i}", embedder=local_minilm() if i % 2 else Other(), sync=False)
        for i in range(4)
    ]
    failed: list[str] = []

    async def use(i: int, memory: LongTermMemory) -> None:
        try:
            await memory.open()  # the indexes open in a worker thread: chromadb's first import
            candidate = MemoryCandidate(id=f"c{i}", text="I like green tea", evidence=("e",))
            await memory.adjudicate([candidate], session_id="s")
            hits = await memory.search("green tea", 1)
            assert hits, "the fact just written is not found"
        except Exception as exc:
            failed.append(f"{type(exc).__name__}: {exc}")
        finally:
            await memory.close()

    async with anyio.create_task_group() as group:
        for i, memory in enumerate(memories):
            group.start_soon(use, i, memory)
    print("failed:", failed if failed else "none")
    sys.exit(1 if failed else 0)


anyio.run(main, sys.argv[1])
"""


@pytest.mark.timeout(180)  # four fresh processes, each importing chromadb and the model
def test_memories_opening_at_once_import_chromadb_whole(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    results = []
    for n in range(4):  # one deadlock-prone first import per fresh process
        root = tmp_path / f"p{n}"
        done = subprocess.run(
            [sys.executable, "-c", _CHILD, str(root)],
            capture_output=True,
            text=True,
            env=env,
            timeout=50,
            check=False,
        )
        results.append((done.returncode, done.stdout.strip()[-400:], done.stderr.strip()[-400:]))
    assert all(code == 0 for code, _, _ in results), results


def test_a_failed_import_is_undone_and_retried() -> None:
    """An import that fails leaves no chromadb module half run: the next call imports it whole."""
    code = r"""
import builtins, sys
from xai.memory import _chroma

real = builtins.__import__
fail = {"left": 2}  # both attempts of the first call fail, in the middle of the import


def flaky(name, *args, **kwargs):
    if name == "chromadb.api.shared_system_client" and fail["left"]:
        fail["left"] -= 1
        raise ImportError("injected")
    return real(name, *args, **kwargs)


builtins.__import__ = flaky
try:
    _chroma.chromadb_module()
except ImportError as exc:
    assert str(exc) == "injected", exc
else:
    raise AssertionError("the first call did not fail")
assert not [m for m in sys.modules if m == "chromadb" or m.startswith("chromadb.")], "half run"
chromadb = _chroma.chromadb_module()
assert chromadb.PersistentClient is not None
from chromadb.api import ServerAPI  # what a half-run import lost
print("ok")
"""
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env=env,
        timeout=50,
        check=False,
    )
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr[-800:]
