"""A Session's memory candidates: those it proposed, and those the owner acknowledged."""

from __future__ import annotations

from collections.abc import Iterable

from xai.messages import MemoryCandidate

__all__ = ["Candidates"]


class Candidates:
    """Proposed candidates, in order, and the ids the owner has taken (acknowledged).

    The rest are undecided: the finalising hooks get them, and a Session is not recorded
    closed while any remain (the journal says ``closing``)."""

    __slots__ = ("acknowledged", "proposed")

    def __init__(
        self, proposed: Iterable[MemoryCandidate] = (), acknowledged: Iterable[str] = ()
    ) -> None:
        self.proposed: list[MemoryCandidate] = list(proposed)
        self.acknowledged: set[str] = set(acknowledged)

    def propose(self, candidates: Iterable[MemoryCandidate]) -> None:
        self.proposed.extend(candidates)

    def acknowledge(self, ids: Iterable[str]) -> tuple[str, ...]:
        """Mark ``ids`` taken; returns those that were not already."""
        new = tuple(i for i in ids if i not in self.acknowledged)
        self.acknowledged.update(new)
        return new

    def unacknowledged(self) -> tuple[MemoryCandidate, ...]:
        return tuple(c for c in self.proposed if c.id not in self.acknowledged)

    def __len__(self) -> int:
        return len(self.proposed)
