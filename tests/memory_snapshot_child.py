"""A memory that is killed while it writes its index snapshot, for the kill -9 test.

``python -m tests.memory_snapshot_child DIR``: open the memory in DIR, record a Session's
episodes, then close it (which writes a new snapshot) and freeze in the middle of that
write, after the facts' vectors and before the episodes' (writing DIR/frozen).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import anyio
import numpy as np

from xai.memory import LongTermMemory, _snapshot
from xai.messages import Episode


def main(directory: Path) -> None:
    _snapshot.MIN_ITEMS = 0
    real = _snapshot._bytes
    matrices: list[int] = []

    def frozen_midway(rows: np.ndarray) -> memoryview:
        # Each matrix passes twice (its CRC, then its write): facts', then episodes'.
        # The episodes' second time is the write, the facts' rows already in the file.
        if rows.ndim == 2:
            if id(rows) not in matrices:
                matrices.append(id(rows))
            elif matrices.index(id(rows)) == 1:
                (directory / "frozen").write_text("writing the snapshot")
                time.sleep(3600)
        return real(rows)

    async def run() -> None:
        async with LongTermMemory(directory) as memory:
            await memory.record_episodes(
                [
                    Episode(
                        id=f"es3-{n}", session_id="s3", turn=1, seq=n,
                        origin="user" if n == 0 else "assistant",
                        speaker="Ana" if n == 0 else "assistant",
                        text=text, at=1_700_000_100.0 + n,
                    )
                    for n, text in enumerate(["Ana's dog Rex learned to sit.", "Good dog, Rex!"])
                ]
            )  # fmt: skip
            await memory.index_episodes()
            _snapshot._bytes = frozen_midway

    anyio.run(run)


if __name__ == "__main__":
    main(Path(sys.argv[1]))
