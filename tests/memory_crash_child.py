"""Long-term memory in a child process that stops dead at a chosen write, for the kill -9 tests.

``python -m tests.memory_crash_child DIR POINT N [deferred]``: decide the candidates in
DIR/candidates.json one by one, noting each decided id in DIR/acked.log, and
freeze (writing DIR/frozen) at the N-th write of kind POINT: ``before_ledger``,
``after_ledger`` (ledger synced, index not written), ``after_index``, or ``acked``
(after the N-th candidate's decision is acknowledged, before the memory closes).

Without ``deferred`` every adjudication pass writes its index changes at its end (the
index writes the ``after_index`` point counts); with it, passes defer them as they do
by default (``_writer``): none is written before the memory closes.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import anyio
import msgspec

from xai.memory import LongTermMemory, _writer
from xai.memory._index import VectorIndex
from xai.memory._ledger import Ledger
from xai.messages import MemoryCandidate


def main(directory: Path, point: str, n: int, deferred: bool) -> None:
    counts = {"ledger": 0, "index": 0}
    if not deferred:
        _writer._DEFER_CHANGES = 1  # every pass writes its index changes at its end
    else:
        _writer._DEFER_SECONDS = 3600.0  # none written before the memory closes, however slow

    async def freeze() -> None:
        (directory / "frozen").write_text(point)
        await anyio.sleep(3600)

    real_append = Ledger.append
    real_upsert = VectorIndex.upsert
    real_update = VectorIndex.update_metadata

    async def append(self: Ledger, decision: Any, **options: Any) -> None:
        if point == "before_ledger" and counts["ledger"] == n:
            await freeze()
        await real_append(self, decision, **options)
        counts["ledger"] += 1
        if point == "after_ledger" and counts["ledger"] == n:
            await freeze()

    async def after_index() -> None:
        counts["index"] += 1
        if point == "after_index" and counts["index"] == n:
            await freeze()

    async def upsert(self: VectorIndex, facts: Any, vectors: Any) -> None:
        await real_upsert(self, facts, vectors)
        await after_index()

    async def update(self: VectorIndex, facts: Any) -> None:
        await real_update(self, facts)
        await after_index()

    Ledger.append = append  # type: ignore[method-assign]
    VectorIndex.upsert = upsert  # type: ignore[method-assign]
    VectorIndex.update_metadata = update  # type: ignore[method-assign]

    candidates = msgspec.json.decode(
        (directory / "candidates.json").read_bytes(), type=list[MemoryCandidate]
    )

    async def run() -> None:
        async with LongTermMemory(directory / "memory") as memory:
            for candidate in candidates:
                await memory.adjudicate([candidate])
                with (directory / "acked.log").open("a") as f:
                    f.write(candidate.id + "\n")
                if point == "acked" and candidate.id == candidates[n - 1].id:
                    await freeze()
        (directory / "finished").write_text("yes")

    anyio.run(run)


if __name__ == "__main__":
    main(Path(sys.argv[1]), sys.argv[2], int(sys.argv[3]), sys.argv[4:] == ["deferred"])
