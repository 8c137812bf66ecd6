"""The audit ledger: every memory decision, append-only, and the source of truth.

A decision is on disk (written and synced) before the vector index hears of
it. Replaying the ledger gives every fact's latest version and the ids of the
candidates already decided, which is what makes adjudication idempotent and
lets the index be repaired after a kill at any point.
"""

from __future__ import annotations

import os
from pathlib import Path

import anyio
import msgspec

from xai._files import read_jsonl
from xai.logs import get_logger
from xai.memory._types import Decision, Fact

__all__ = ["Ledger", "LedgerState"]

_log = get_logger(__name__)
_encode = msgspec.json.Encoder().encode
_decode = msgspec.json.Decoder(Decision).decode


class LedgerState(msgspec.Struct, kw_only=True):
    facts: dict[str, Fact] = msgspec.field(default_factory=dict)
    decided: set[str] = msgspec.field(default_factory=set)
    """Candidate ids with a decision: a second delivery is ignored."""
    seq: int = 0


class Ledger:
    """``ledger.jsonl``: one ``Decision`` per line, synced after each append."""

    def __init__(self, path: Path, *, sync: bool = True) -> None:
        self.path = path
        self.sync = sync
        path.parent.mkdir(parents=True, exist_ok=True)
        self._fd: int | None = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        self._dirty = False

    @staticmethod
    def replay(path: Path) -> LedgerState:
        """Rebuild the state. A torn last line is cut off; a bad line elsewhere is an error."""
        state = LedgerState()
        if not path.exists():
            return state
        for decision in read_jsonl(path, _decode, repair=True, what="ledger"):
            state.seq = max(state.seq, decision.seq)
            if decision.candidate is not None:
                state.decided.add(decision.candidate.id)
            for fact in decision.facts:
                state.facts[fact.id] = fact
        return state

    async def append(self, decision: Decision, *, sync: bool = True) -> None:
        """Write one decision; sync it now unless ``sync=False`` (then ``flush`` later)."""
        if self._fd is None:
            raise RuntimeError(f"ledger {self.path} is closed")
        data = memoryview(_encode(decision) + b"\n")
        while data:
            data = data[os.write(self._fd, data) :]
        self._dirty = True
        if sync:
            await self.flush()

    async def flush(self) -> None:
        """fsync what was appended (when the ledger syncs at all)."""
        if self._fd is not None and self.sync and self._dirty:
            self._dirty = False
            await anyio.to_thread.run_sync(os.fsync, self._fd)

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    @staticmethod
    def read_path(path: Path) -> list[Decision]:
        """Every decision, oldest first (for audits and tools); a torn last line is skipped."""
        if not path.exists():
            return []
        return read_jsonl(path, _decode, repair=False, what="ledger")
