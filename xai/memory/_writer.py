"""The memory's single writer: every change is one decision, ledger first, then the index.

``MemoryWriter`` is the base of ``LongTermMemory``: it owns the state replayed from
the ledger, the ledger, the vector index and the lock, and ``_write`` is the only
way a fact changes. Adjudication (``_adjudication``) and maintenance
(``_maintenance``) are written on top of it; reading (search, prefix) lives with
``LongTermMemory``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from contextlib import asynccontextmanager, contextmanager

import anyio
import numpy as np

from xai.exceptions import MemoryUnavailableError
from xai.logs import get_logger
from xai.memory._embeddings import Embedder
from xai.memory._index import VectorIndex
from xai.memory._ledger import Ledger, LedgerState
from xai.memory._lexical import LexicalIndex
from xai.memory._prefix import PrefixOrder
from xai.memory._types import Decision, DecisionKind, Fact, MemoryConfig
from xai.messages import MemoryCandidate
from xai.providers import Provider

__all__ = ["MemoryWriter"]

_log = get_logger(__name__)


class _Pending:
    """Index changes decided (and in the ledger) but not yet written to the index."""

    __slots__ = ("arrays", "deletes", "updates", "upserts")

    def __init__(self) -> None:
        self.upserts: dict[str, tuple[Fact, list[float]]] = {}
        self.updates: dict[str, Fact] = {}
        self.deletes: set[str] = set()
        self.arrays: dict[str, np.ndarray] = {}
        """The vectors of ``upserts`` as arrays (compared with each candidate of the batch)."""

    def add(self, facts: Sequence[Fact], vectors: dict[str, list[float]]) -> None:
        for fact in facts:
            if fact.status != "active":
                self.upserts.pop(fact.id, None)
                self.arrays.pop(fact.id, None)
                self.updates.pop(fact.id, None)
                self.deletes.add(fact.id)
            elif fact.id in vectors:
                self.deletes.discard(fact.id)
                self.updates.pop(fact.id, None)
                self.upserts[fact.id] = (fact, vectors[fact.id])
                self.arrays[fact.id] = np.asarray(vectors[fact.id], dtype=np.float32)
            elif fact.id in self.upserts:
                self.upserts[fact.id] = (fact, self.upserts[fact.id][1])
            else:
                self.updates[fact.id] = fact


class MemoryWriter:
    """The state, the ledger, the index and the one lock every change is made under."""

    embedder: Embedder
    judge: Provider | None
    config: MemoryConfig
    clock: Callable[[], float]
    _state: LedgerState
    _ledger: Ledger | None
    _index: VectorIndex | None
    _lock: anyio.Lock | None
    _pending: _Pending | None
    _lexical: LexicalIndex | None
    _order: PrefixOrder | None
    """The prefix's order of the facts, rebuilt on its next use after a write."""

    def _require_lock(self) -> anyio.Lock:
        if self._lock is None:
            raise RuntimeError("the memory is not open: call open() or use `async with`")
        return self._lock

    async def _ensure_index(self) -> None:
        """Open the indexes if they are not open yet (``LongTermMemory`` does)."""
        raise NotImplementedError

    def _require_index(self) -> VectorIndex:
        if self._index is None:
            raise RuntimeError("the memory is not open: call open() or use `async with`")
        return self._index

    async def _write(
        self,
        kind: DecisionKind,
        reason: str,
        facts: Sequence[Fact],
        *,
        candidate: MemoryCandidate | None = None,
        session_id: str | None = None,
        judge: bool = False,
        vectors: dict[str, list[float]] | None = None,
    ) -> Decision:
        """Ledger first (the commit point), then the in-memory state, then the index."""
        assert self._ledger is not None, "the memory is not open"
        decision = Decision(
            seq=self._state.seq + 1,
            kind=kind,
            reason=reason,
            at=self.clock(),
            candidate=candidate,
            session_id=session_id,
            facts=tuple(facts),
            judge=judge,
        )
        pending = self._pending
        await self._ledger.append(decision, known=self._state.facts, sync=pending is None)
        self._state.seq = decision.seq  # only once it is written: no gap after a failed write
        if _log.enabled("debug"):
            _log.debug(
                "memory.written",
                seq=decision.seq,
                kind=kind,
                candidate_id=candidate.id if candidate is not None else None,
                fact_ids=[f.id for f in facts],
                judge=judge,
            )
        if candidate is not None:
            self._state.decided.add(candidate.id)
        self._order = None  # the prefix's order is rebuilt on its next use
        for fact in facts:
            self._state.facts[fact.id] = fact
            if self._lexical is not None:
                if fact.status == "active":
                    self._lexical.set(fact.id, fact.text)
                else:
                    self._lexical.discard(fact.id)
        vectors = vectors or {}
        if pending is not None:  # applied to the index when the batch ends
            pending.add(facts, vectors)
            return decision
        # The index holds active facts only: retired ones stay in the ledger (and in
        # `facts(status=...)`), so searches need no status filter as history grows.
        index = self._require_index()
        retired = [f.id for f in facts if f.status != "active"]
        with self._repaired_if_unreachable():
            if retired:
                await index.delete(retired)
            fresh = [f for f in facts if f.status == "active" and f.id in vectors]
            if fresh:
                await index.upsert(fresh, [vectors[f.id] for f in fresh])
            changed = [f for f in facts if f.status == "active" and f.id not in vectors]
            if changed:
                await index.update_metadata(changed)
        return decision

    @contextmanager
    def _repaired_if_unreachable(self) -> Iterator[None]:
        """The index store could not be reached (a Chroma server down): the decision is in
        the ledger, the index may lack it. Let go of the indexes, so the next use opens
        them again and repairs them from the ledger."""
        try:
            yield
        except MemoryUnavailableError:
            self._index_lost()
            raise

    def _index_lost(self) -> None:
        self._index = None

    @asynccontextmanager
    async def _batch(self) -> AsyncIterator[None]:
        """Group index writes (chromadb syncs to disk on every write, ~10 ms each) and the
        ledger's fsync: one of each per batch. Ledger first, index after, as always; a kill
        in between is repaired from the ledger on the next open."""
        if self._pending is not None:
            yield
            return
        self._pending = pending = _Pending()
        try:
            yield
        finally:
            self._pending = None
            with anyio.CancelScope(shield=True):
                if self._ledger is not None:
                    await self._ledger.flush()
                index = self._index  # None: let go of (unreachable) during the batch
                if index is not None:
                    with self._repaired_if_unreachable():
                        await _apply(index, pending)

    async def _nearest(
        self,
        vector: list[float],
        k: int,
        *,
        tiers: Sequence[str] | None = None,
        indexed: Sequence[tuple[str, float]] | None = None,
    ) -> list[tuple[str, float]]:
        """Nearest active facts, including those written earlier in the running batch.

        ``indexed``: the index's nearest for ``vector`` fetched earlier in this batch (the
        index is not written until the batch ends, so they still hold), at least ``k``
        plus a margin of them; they are queried again only if what the batch retired or
        re-embedded since leaves fewer than ``k``."""
        pending = self._pending
        busy = pending is not None and bool(pending.upserts or pending.deletes or pending.updates)
        if pending is None or not busy:
            if indexed is not None:
                return list(indexed[:k])
            return await self._require_index().nearest(vector, k, tiers=tiers)
        hidden = len(pending.deletes) + sum(f.version > 1 for f, _ in pending.upserts.values())
        scores = {
            i: s
            for i, s in (indexed or ())
            if i not in pending.deletes and i not in pending.upserts
        }
        if indexed is None or (len(scores) < k and len(indexed) > len(scores)):
            hits = await self._require_index().nearest(vector, k + hidden, tiers=tiers)
            scores = {
                i: s for i, s in hits if i not in pending.deletes and i not in pending.upserts
            }
        if pending.upserts:
            ids = list(pending.upserts)
            stored = np.stack([pending.arrays[i] for i in ids])
            cosines = stored @ np.asarray(vector, dtype=np.float32)
            for fact_id, cosine in zip(ids, cosines.tolist(), strict=True):
                fact = pending.upserts[fact_id][0]
                if not tiers or fact.tier in tiers:
                    scores[fact_id] = cosine
        live = {
            i: s for i, s in scores.items()
            if (f := self._state.facts.get(i)) is not None and f.status == "active"
            and (not tiers or f.tier in tiers)
        }  # fmt: skip
        return sorted(live.items(), key=lambda item: -item[1])[:k]


async def _apply(index: VectorIndex, pending: _Pending) -> None:
    if pending.deletes:
        await index.delete(sorted(pending.deletes))
    if pending.upserts:
        facts = [fact for fact, _ in pending.upserts.values()]
        await index.upsert(facts, [v for _, v in pending.upserts.values()])
    if pending.updates:
        await index.update_metadata(list(pending.updates.values()))
