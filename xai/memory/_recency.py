"""When each fact was last recalled: found by a search or put in a memory prefix.

Forgetting by policy (``MemoryConfig.demote_unused_days``, ``forget_unused_days``) asks
how long a fact went neither recalled nor reinforced. Reinforcement is in the ledger
(``Fact.last_seen``); recall happens on every search, too often for a ledger line, so it
is kept here, in memory, and written to ``recalled.json`` (fact id -> time, ids only,
no text) by ``maintain`` and on close. A kill loses the recalls since the last write:
those facts look idle a little longer than they were, never the other way round.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import msgspec

from xai._files import write_atomic
from xai.logs import get_logger

__all__ = ["RECALLED_FILE", "Recency"]

_log = get_logger(__name__)

RECALLED_FILE = "recalled.json"

_decode = msgspec.json.Decoder(dict[str, float]).decode


class Recency:
    """Fact id -> when it was last recalled."""

    __slots__ = ("_dirty", "at", "path")

    def __init__(self, path: Path) -> None:
        self.path = path
        self.at: dict[str, float] = {}
        self._dirty = False

    def load(self) -> None:
        """Read the file (blocking); a damaged one is set aside, recalls start afresh."""
        self.at, self._dirty = {}, False
        if not self.path.exists():
            return
        try:
            self.at = _decode(self.path.read_bytes())
        except (OSError, msgspec.DecodeError, msgspec.ValidationError) as exc:
            _log.warning("memory.recalled_unreadable", path=str(self.path), error=str(exc))

    def touch(self, fact_ids: Iterable[str], at: float) -> None:
        for fact_id in fact_ids:
            if self.at.get(fact_id, 0.0) < at:
                self.at[fact_id] = at
                self._dirty = True

    def last(self, fact_id: str) -> float:
        """When the fact was last recalled (0.0: never, since this file began)."""
        return self.at.get(fact_id, 0.0)

    def save(self) -> None:
        """Write what changed (blocking)."""
        if self._dirty:
            write_atomic(self.path, msgspec.json.encode(self.at))
            self._dirty = False
