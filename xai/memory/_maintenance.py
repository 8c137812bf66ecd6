"""Maintenance of the long-term memory: decay of L1 facts, L2 compaction, forgetting."""

from __future__ import annotations

import msgspec

from xai.memory._policy import restates
from xai.memory._types import Decision, Fact
from xai.memory._writer import MemoryWriter

__all__ = ["Maintenance"]

_DAY = 86_400.0


class Maintenance(MemoryWriter):
    """``strength``, ``maintain`` and ``forget`` (a base of ``LongTermMemory``)."""

    def strength(self, fact: Fact, now: float | None = None) -> float:
        """Confidence decayed by time since last seen (L2 does not decay)."""
        if fact.tier == "L2":
            return fact.confidence
        age = max(0.0, (now if now is not None else self.clock()) - fact.last_seen)
        return float(fact.confidence * 0.5 ** (age / (self.config.l1_half_life_days * _DAY)))

    async def forget(self, fact_id: str, reason: str = "forgotten on request") -> Decision:
        assert self._lock is not None, "the memory is not open"
        await self._ensure_index()
        async with self._lock, self._batch():
            fact = self._state.facts.get(fact_id)
            if fact is None:
                raise KeyError(f"no fact {fact_id!r}")
            gone = msgspec.structs.replace(fact, status="forgotten", version=fact.version + 1)
            return await self._write("forget", reason, (gone,))

    async def maintain(self) -> list[Decision]:
        """Decay unreinforced L1 facts below the floor; merge near-duplicate L2 facts."""
        assert self._lock is not None, "the memory is not open"
        await self._ensure_index()
        async with self._lock, self._batch():
            decisions: list[Decision] = []
            now = self.clock()
            for fact in [
                f for f in self._state.facts.values() if f.status == "active" and f.tier == "L1"
            ]:
                strength = self.strength(fact, now)
                if strength < self.config.decay_floor:
                    gone = msgspec.structs.replace(fact, status="decayed", version=fact.version + 1)
                    decisions.append(
                        await self._write(
                            "decay", f"strength {strength:.3f} below the floor", (gone,)
                        )
                    )
            decisions.extend(await self._compact_l2())
            return decisions

    async def _compact_l2(self) -> list[Decision]:
        stable = sorted(
            (f for f in self._state.facts.values() if f.status == "active" and f.tier == "L2"),
            key=lambda f: f.first_seen,
        )
        if len(stable) < 2:
            return []
        decisions: list[Decision] = []
        index = self._require_index()
        stored = await index.vectors([f.id for f in stable])
        missing = [f for f in stable if f.id not in stored]
        if missing:
            fresh = await self.embedder.embed([f.text for f in missing])
            stored.update({f.id: v for f, v in zip(missing, fresh, strict=True)})
        vectors = [stored[f.id] for f in stable]
        for fact, vector in zip(stable, vectors, strict=True):
            keeper = self._state.facts[fact.id]
            if keeper.status != "active":
                continue
            for other_id, similarity in await self._nearest(vector, 4, tiers=["L2"]):
                other = self._state.facts.get(other_id)
                if other is None or other.id == keeper.id or other.status != "active":
                    continue
                if similarity < self.config.l2_merge_similarity or not restates(
                    other.text, keeper.text
                ):
                    continue  # only a restatement is folded in: distinct facts stay apart
                sessions = tuple(dict.fromkeys((*keeper.sessions, *other.sessions)))
                keeper = msgspec.structs.replace(
                    keeper,
                    count=len(sessions) or keeper.count + other.count,
                    sessions=sessions,
                    last_seen=max(keeper.last_seen, other.last_seen),
                    sources=(*keeper.sources, *other.sources),
                    evidence=(
                        *keeper.evidence,
                        *(e for e in other.evidence if e not in keeper.evidence),
                    ),
                    supersedes=(*keeper.supersedes, other.id),
                    version=keeper.version + 1,
                )
                retired = msgspec.structs.replace(
                    other,
                    status="superseded",
                    superseded_by=keeper.id,
                    valid_to=self.clock(),
                    version=other.version + 1,
                )
                decisions.append(
                    await self._write(
                        "compact",
                        f"near-duplicate stable facts ({similarity:.2f})",
                        (keeper, retired),
                    )
                )
        return decisions
