"""Maintenance of the long-term memory: decay of L1 facts, L2 compaction, forgetting
(on request, and by policy: what went unused is demoted, then forgotten)."""

from __future__ import annotations

import msgspec

from xai.exceptions import FactForgottenError, FactNotFoundError
from xai.memory._policy import restates
from xai.memory._recency import Recency
from xai.memory._types import Decision, Fact, ForgetScope
from xai.memory._writer import FactStore

__all__ = ["Maintenance"]

_DAY = 86_400.0
_WIDTH: dict[ForgetScope, int] = {"fact": 0, "evidence": 1, "erase": 2}


class Maintenance:
    """``strength``, ``maintain`` and ``forget``, written to ``store``."""

    def __init__(self, store: FactStore, recency: Recency) -> None:
        self.store = store
        self.recency = recency

    def strength(self, fact: Fact, now: float | None = None) -> float:
        """Confidence decayed by time since last seen (L2 does not decay)."""
        if fact.tier == "L2":
            return fact.confidence
        age = max(0.0, (now if now is not None else self.store.clock()) - fact.last_seen)
        return float(fact.confidence * 0.5 ** (age / (self.store.config.l1_half_life_days * _DAY)))

    async def forget(
        self, fact_id: str, reason: str = "forgotten on request", scope: ForgetScope = "fact"
    ) -> Decision:
        lock = self.store.require_lock()
        await self.store.ensure_index()
        async with lock, self.store.batch():
            fact = self.store.state.facts.get(fact_id)
            if fact is None:
                raise FactNotFoundError(fact_id)
            if fact.status == "forgotten" and (  # decided once, under the lock: never twice
                fact.forget_scope == scope or _WIDTH[fact.forget_scope or "fact"] > _WIDTH[scope]
            ):
                raise FactForgottenError(fact_id)
            gone = msgspec.structs.replace(
                fact, status="forgotten", forget_scope=scope, version=fact.version + 1
            )
            return await self.store.write("forget", reason, (gone,))

    async def maintain(self) -> list[Decision]:
        """Decay unreinforced L1 facts below the floor; merge near-duplicate L2 facts."""
        lock = self.store.require_lock()
        await self.store.ensure_index()
        async with lock, self.store.batch():
            decisions: list[Decision] = []
            now = self.store.clock()
            for fact in [
                f
                for f in self.store.state.facts.values()
                if f.status == "active" and f.tier == "L1"
            ]:
                strength = self.strength(fact, now)
                if strength < self.store.config.decay_floor:
                    gone = msgspec.structs.replace(fact, status="decayed", version=fact.version + 1)
                    decisions.append(
                        await self.store.write(
                            "decay", f"strength {strength:.3f} below the floor", (gone,)
                        )
                    )
            decisions.extend(await self._compact_l2())
            decisions.extend(await self._unused(now))
            return decisions

    async def _unused(self, now: float) -> list[Decision]:
        """Forgetting by policy: an active fact neither recalled nor reinforced for
        ``forget_unused_days`` is forgotten if tentative (L1), and a stable one idle for
        ``demote_unused_days`` becomes tentative first: two decisions, at two ``maintain``
        calls, each saying how long it went unused."""
        config = self.store.config
        demote, forget = config.demote_unused_days, config.forget_unused_days
        if demote is None and forget is None:
            return []
        decisions: list[Decision] = []
        for fact in [f for f in self.store.state.facts.values() if f.status == "active"]:
            idle = (now - max(fact.last_seen, self.recency.last(fact.id))) / _DAY
            if fact.tier == "L2" and demote is not None and idle >= demote:
                lower = msgspec.structs.replace(fact, tier="L1", version=fact.version + 1)
                reason = f"not recalled or reinforced for {idle:.0f} days (policy: {demote:g})"
                decisions.append(await self.store.write("demote", reason, (lower,)))
            elif fact.tier == "L1" and forget is not None and idle >= forget:
                gone = msgspec.structs.replace(
                    fact, status="forgotten", forget_scope="fact", version=fact.version + 1
                )
                reason = f"not recalled or reinforced for {idle:.0f} days (policy: {forget:g})"
                decisions.append(await self.store.write("forget", reason, (gone,)))
        return decisions

    async def _compact_l2(self) -> list[Decision]:
        stable = sorted(
            (f for f in self.store.state.facts.values() if f.status == "active" and f.tier == "L2"),
            key=lambda f: f.first_seen,
        )
        if len(stable) < 2:
            return []
        decisions: list[Decision] = []
        index = self.store.require_index()
        stored = await index.vectors([f.id for f in stable])
        missing = [f for f in stable if f.id not in stored]
        if missing:
            fresh = await self.store.embedder.embed([f.text for f in missing])
            stored.update({f.id: v for f, v in zip(missing, fresh, strict=True)})
        vectors = [stored[f.id] for f in stable]
        for fact, vector in zip(stable, vectors, strict=True):
            keeper = self.store.state.facts[fact.id]
            if keeper.status != "active":
                continue
            for other_id, similarity in await self.store.nearest(vector, 4, tiers=["L2"]):
                other = self.store.state.facts.get(other_id)
                if other is None or other.id == keeper.id or other.status != "active":
                    continue
                if similarity < self.store.config.l2_merge_similarity or not restates(
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
                    valid_to=self.store.clock(),
                    version=other.version + 1,
                )
                decisions.append(
                    await self.store.write(
                        "compact",
                        f"near-duplicate stable facts ({similarity:.2f})",
                        (keeper, retired),
                    )
                )
        return decisions
