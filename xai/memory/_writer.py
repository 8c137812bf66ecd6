"""The memory's facts and the one way they change: ``FactStore``, the commit point.

Every change is one decision, made under the store's lock: appended to the ledger
(synced) first, then applied to the in-memory state, then to the vector index. A kill
between the two is repaired from the ledger on the next open.

The index writes of adjudication passes are grouped across passes (``batch(defer=True)``):
chromadb syncs each write to disk (8 fsyncs, 20-90 ms on a shared machine), more than
embedding a closing Session's few candidates costs. A pass's decisions are acknowledged
when the ledger is synced; its index changes stay in memory (``FactStore.nearest`` sees
them) until something reads the index (``settle``: search, the prefix, any other write,
a snapshot, close), or until a pass starts when ``_DEFER_CHANGES`` of them wait or one
of them is ``_DEFER_SECONDS`` old (``write_due``: the adjudicator writes them while it
embeds that pass's candidates, outside the lock). A kill meanwhile loses only derived
data: the next open finds the index behind the ledger and repairs it. Adjudication
(``_adjudication.Adjudicator``) and decay/compaction (``_maintenance.Maintenance``) are
handed this one object and change facts only through ``write``; reading (search, the
prefix) lives with ``LongTermMemory``, which opens the indexes the store writes to.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Mapping, Sequence
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path

import anyio
import numpy as np

from xai.exceptions import MemoryUnavailableError, NotOpenError
from xai.logs import get_logger
from xai.memory._embeddings import Embedder
from xai.memory._index import VectorIndex
from xai.memory._ledger import Ledger, LedgerState
from xai.memory._lexical import LexicalIndex
from xai.memory._types import Decision, DecisionKind, Fact, MemoryConfig
from xai.messages import MemoryCandidate

__all__ = ["FactStore"]

_log = get_logger(__name__)

_DEFER_CHANGES = 256
"""Index changes (facts to delete, upsert or update) deferred adjudication passes may leave
waiting: the next pass writes them (so at most this many and one pass's wait). Bounds
what a restart after a kill re-embeds and what waits in memory."""
_DEFER_SECONDS = 10.0
"""Nor does the next pass leave a change waiting that is older than this."""


class _Pending:
    """Index changes decided (and in the ledger) but not yet written to the index."""

    __slots__ = ("arrays", "deletes", "since", "updates", "upserts")

    def __init__(self) -> None:
        self.upserts: dict[str, tuple[Fact, list[float]]] = {}
        self.updates: dict[str, Fact] = {}
        self.deletes: set[str] = set()
        self.arrays: dict[str, np.ndarray] = {}
        """The vectors of ``upserts`` as arrays (compared with each candidate of the batch)."""
        self.since = time.monotonic()

    def __len__(self) -> int:
        return len(self.upserts) + len(self.updates) + len(self.deletes)

    def due(self) -> bool:
        """Whether the next adjudication pass writes these (``FactStore.write_due``)."""
        return len(self) >= _DEFER_CHANGES or time.monotonic() - self.since >= _DEFER_SECONDS

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


class FactStore:
    """The facts replayed from the ledger, the ledger, the vector index and the one lock
    every change is made under; ``write`` is the only way a fact changes."""

    def __init__(
        self,
        path: Path,
        *,
        embedder: Embedder,
        config: MemoryConfig,
        clock: Callable[[], float],
        sync: bool,
        open_index: Callable[[], Awaitable[None]],
        index_lost: Callable[[], None],
    ) -> None:
        self.path = path
        """The ledger file."""
        self.embedder = embedder
        """The embeddings of the facts in the index (and of candidates compared with them)."""
        self.config = config
        self.clock = clock
        self.state = LedgerState()
        self.index: VectorIndex | None = None
        """The facts' vector index, once the memory opened it (``ensure_index``)."""
        self.lexical: LexicalIndex | None = None
        """The BM25 index of the active facts, built on first use (``lexicon``)."""
        self.version = 0
        """Counts the writes since the store opened: what was derived from the facts at
        another count (the prefix's order) is derived again."""
        self._sync = sync
        self.ledger: Ledger | None = None
        """The ledger file's writer, while the store is open."""
        self._lock: anyio.Lock | None = None
        self._pending: _Pending | None = None
        """Index changes in the ledger and not yet in the index (``None``: none)."""
        self._batching = False
        self._open_index = open_index
        self._index_lost = index_lost

    @property
    def facts(self) -> Mapping[str, Fact]:
        """Every fact by id, at its latest version (retired ones too)."""
        return self.state.facts

    def decided(self, candidate_id: str) -> bool:
        return candidate_id in self.state.decided

    async def open(self) -> None:
        """Replay the ledger (in a worker thread) and get ready to write."""
        self.state = await anyio.to_thread.run_sync(Ledger.replay, self.path)
        self.ledger = Ledger(self.path, sync=self._sync)
        self._lock = anyio.Lock()
        self._pending = None
        self.lexical = None  # rebuilt from this state on the next search
        self.version += 1

    def close(self) -> None:
        """(What ``settle`` did not write to the index is repaired from the ledger on the
        next open.)"""
        self.index = None
        self._pending = None
        if self.ledger is not None:
            self.ledger.close()
            self.ledger = None

    def require_lock(self) -> anyio.Lock:
        if self._lock is None:
            raise NotOpenError("the memory")
        return self._lock

    async def ensure_index(self) -> None:
        """Open the indexes if they are not open yet (the memory does, and repairs them)."""
        await self._open_index()

    def indexed(self) -> bool:
        """Whether the index is open (a call: a check made before an await is stale after)."""
        return self.index is not None

    def require_index(self) -> VectorIndex:
        if self.index is None:
            raise NotOpenError("the memory")
        return self.index

    async def lexicon(self) -> LexicalIndex:
        """The BM25 index of the active facts, built (in a worker thread) on first use.

        The build takes the store's lock, so that no decision lands half-seen; never
        search from code that holds it (``anyio.Lock`` is not reentrant)."""
        if self.lexical is None:
            async with self.require_lock():  # no write lands while the index is being built
                if self.lexical is None:
                    active = [
                        (f.id, f.text) for f in self.state.facts.values() if f.status == "active"
                    ]
                    self.lexical = await anyio.to_thread.run_sync(LexicalIndex.of, active)
        return self.lexical

    async def write(
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
        assert self.ledger is not None, "the memory is not open"
        decision = Decision(
            seq=self.state.seq + 1,
            kind=kind,
            reason=reason,
            at=self.clock(),
            candidate=candidate,
            session_id=session_id,
            facts=tuple(facts),
            judge=judge,
        )
        await self.ledger.append(decision, known=self.state.facts, sync=not self._batching)
        self.state.seq = decision.seq  # only once it is written: no gap after a failed write
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
            self.state.decided.add(candidate.id)
        self.version += 1  # the prefix's order is rebuilt on its next use
        for fact in facts:
            self.state.facts[fact.id] = fact
            if self.lexical is not None:
                if fact.status == "active":
                    self.lexical.set(fact.id, fact.text)
                else:
                    self.lexical.discard(fact.id)
        # The index holds active facts only: retired ones stay in the ledger (and in
        # `facts(status=...)`), so searches need no status filter as history grows.
        if self._pending is None:
            self._pending = _Pending()
        self._pending.add(facts, vectors or {})
        if not self._batching:  # alone: written now, with whatever waited before it
            await self._write_index()
        return decision

    async def _write_index(self) -> None:
        """Write what waits to the index (under the lock: no decision lands half-written)."""
        pending, self._pending = self._pending, None
        index = self.index  # None: let go of (unreachable): reopened and repaired from the ledger
        if pending is None or not len(pending) or index is None:
            return
        with anyio.CancelScope(shield=True), self.repaired_if_unreachable():
            await _apply(index, pending)

    async def write_due(self) -> None:
        """Write what deferred passes left waiting if it is due (``_Pending.due``): the
        adjudicator calls it while it embeds the next pass's candidates (never holding the
        lock). An index that cannot be reached is let go of (``repaired_if_unreachable``)
        and no error raised: the pass opens and repairs it again."""
        pending = self._pending
        if pending is None or not pending.due():
            return
        try:
            await self.settle()
        except MemoryUnavailableError:
            _log.warning("memory.index_unwritten", changes=len(pending))

    @property
    def waiting(self) -> int:
        """Index changes decided (in the ledger) and not yet written to the index."""
        return 0 if self._pending is None else len(self._pending)

    async def settle(self) -> None:
        """Write to the index what deferred adjudication passes left waiting: called before
        anything reads the index. Takes the store's lock when there is something to write
        (never call it holding the lock)."""
        if self._pending is None or self._lock is None:
            return
        async with self._lock:
            if not self._batching:
                await self._write_index()

    @contextmanager
    def repaired_if_unreachable(self) -> Iterator[None]:
        """The index store could not be reached (a Chroma server down): the decision is in
        the ledger, the index may lack it. Let go of the indexes, so the next use opens
        them again and repairs them from the ledger."""
        try:
            yield
        except MemoryUnavailableError:
            self.index = None
            self._index_lost()
            raise

    @asynccontextmanager
    async def batch(self, *, defer: bool = False) -> AsyncIterator[None]:
        """Group index writes (chromadb syncs to disk on every write) and the ledger's
        fsync: one of each per batch, ledger first. With ``defer`` (an adjudication pass),
        the index changes wait for later passes (the module says until when); without,
        what earlier passes left is written first, so the batch reads a whole index. A kill
        before the index is written is repaired from the ledger on the next open."""
        if self._batching:
            yield
            return
        if not defer and self._pending is not None:
            await self._write_index()
        self._batching = True
        try:
            yield
        finally:
            self._batching = False
            with anyio.CancelScope(shield=True):
                if self.ledger is not None:
                    await self.ledger.flush()  # the acknowledgement
                if not defer:
                    await self._write_index()

    async def nearest(
        self,
        vector: list[float],
        k: int,
        *,
        tiers: Sequence[str] | None = None,
        indexed: Sequence[tuple[str, float]] | None = None,
    ) -> list[tuple[str, float]]:
        """Nearest active facts, including those decided but not yet written to the index
        (earlier in the running batch, or by deferred passes before it), scored exactly
        from the vectors kept with them.

        ``indexed``: the index's nearest for ``vector`` fetched earlier in this batch (the
        index is not written while a batch runs, so they still hold), at least ``k``
        plus a margin of them; they are queried again only if what waits to be retired or
        re-embedded leaves fewer than ``k``."""
        pending = self._pending
        busy = pending is not None and bool(pending.upserts or pending.deletes or pending.updates)
        if pending is None or not busy:
            if indexed is not None:
                return list(indexed[:k])
            return await self.require_index().nearest(vector, k, tiers=tiers)
        hidden = len(pending.deletes) + sum(f.version > 1 for f, _ in pending.upserts.values())
        scores = {
            i: s
            for i, s in (indexed or ())
            if i not in pending.deletes and i not in pending.upserts
        }
        if indexed is None or (len(scores) < k and len(indexed) > len(scores)):
            hits = await self.require_index().nearest(vector, k + hidden, tiers=tiers)
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
            if (f := self.state.facts.get(i)) is not None and f.status == "active"
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
