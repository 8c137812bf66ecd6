"""Long-term memory (L1 and L2): opening, reading, search and the memory prefix.

One writer (``_writer.MemoryWriter``): every change goes through ``_write`` under
one lock, is appended to the ledger (synced) and only then applied to the vector
index. Reading the ledger back on open rebuilds every fact and repairs the index,
so a kill at any point loses no decided fact and duplicates none. Adjudication
(``_adjudication``) and decay/compaction (``_maintenance``) are written on top of
that writer; ``LongTermMemory`` puts the three together.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from pathlib import Path

import anyio
import numpy as np

from xai.logs import get_logger
from xai.memory._adjudication import Adjudication
from xai.memory._embeddings import Embedder, local_minilm
from xai.memory._episodes import EPISODES_FILE, EpisodeStore
from xai.memory._index import VectorIndex, open_index
from xai.memory._ledger import Ledger, LedgerState
from xai.memory._lexical import LexicalIndex
from xai.memory._maintenance import Maintenance
from xai.memory._types import Decision, Fact, FactStatus, MemoryConfig, ScoredFact, Tier
from xai.messages import Episode
from xai.providers import Provider

__all__ = ["LongTermMemory"]

_log = get_logger(__name__)


def _z(values: np.ndarray) -> np.ndarray:
    """Scores on one scale: distance from their mean in standard deviations."""
    values = np.nan_to_num(values)
    spread = float(values.std()) or 1.0
    return np.asarray((values - values.mean()) / spread)


class LongTermMemory(Adjudication, Maintenance):
    """An Agent's L1/L2 memory under ``directory`` (``ledger.jsonl`` + ``index/``)."""

    def __init__(
        self,
        directory: str | Path,
        *,
        embedder: Embedder | None = None,
        judge: Provider | None = None,
        config: MemoryConfig | None = None,
        clock: Callable[[], float] = time.time,
        sync: bool = True,
    ) -> None:
        self.directory = Path(directory).expanduser()
        self.embedder = embedder if embedder is not None else local_minilm()
        self.judge = judge
        self.config = config if config is not None else MemoryConfig()
        self.clock = clock
        self._sync = sync
        self._state = LedgerState()
        self._ledger: Ledger | None = None
        self._index: VectorIndex | None = None
        self._lock: anyio.Lock | None = None
        self._pending = None
        self._lexical: LexicalIndex | None = None
        self._episodes = EpisodeStore(self.directory / EPISODES_FILE, sync=sync)

    # -- lifecycle -----------------------------------------------------------------

    async def open(self) -> None:
        """Replay the ledger and make the index agree with it."""
        await self.close()  # a second open starts afresh
        self.directory.mkdir(parents=True, exist_ok=True)
        path = self.directory / "ledger.jsonl"
        self._state = await anyio.to_thread.run_sync(Ledger.replay, path)
        self._episodes = await EpisodeStore.open(self.directory / EPISODES_FILE, sync=self._sync)
        self._index, indexed = await anyio.to_thread.run_sync(
            open_index, self.directory / "index", self.embedder
        )
        try:
            self._ledger = Ledger(path, sync=self._sync)
            self._lock = anyio.Lock()
            self._lexical = None  # rebuilt from this state on the next search
            await self._reconcile(indexed)
        except BaseException:
            with anyio.CancelScope(shield=True):
                await self.close()
            raise

    async def close(self) -> None:
        self._episodes.close()
        if self._ledger is not None:
            self._ledger.close()
            self._ledger = None
        if self._index is not None:
            index, self._index = self._index, None
            await anyio.to_thread.run_sync(index.close)

    async def __aenter__(self) -> LongTermMemory:
        await self.open()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    async def _reconcile(self, indexed: dict[str, int]) -> None:
        """Make the index hold exactly the active facts, each at its latest version."""
        index = self._require_index()
        active = {i: f for i, f in self._state.facts.items() if f.status == "active"}
        stale = [f for f in active.values() if indexed.get(f.id) != f.version]
        extra = [i for i in indexed if i not in active]
        if stale:
            _log.warning("memory.index_repaired", facts=len(stale))
            vectors = await self.embedder.embed([f.text for f in stale])
            await index.upsert(stale, vectors)
        if extra:
            await index.delete(extra)

    # -- reading -------------------------------------------------------------------

    def get(self, fact_id: str) -> Fact | None:
        return self._state.facts.get(fact_id)

    def facts(
        self, *, status: FactStatus | None = "active", tier: Tier | None = None
    ) -> list[Fact]:
        """Facts by status and tier, most recently seen first."""
        out = [
            f
            for f in self._state.facts.values()
            if (status is None or f.status == status) and (tier is None or f.tier == tier)
        ]
        out.sort(key=lambda f: f.last_seen, reverse=True)
        return out

    @property
    def episodes(self) -> EpisodeStore:
        """What was said in the Agent's Sessions: the evidence facts point to."""
        return self._episodes

    async def record_episodes(self, episodes: Sequence[Episode]) -> int:
        """Keep episodes not known yet (by id); on disk when this returns. How many were new."""
        return len(await self._episodes.record(episodes))

    def as_of(self, at: float, *, tier: Tier | None = None) -> list[Fact]:
        """The facts that held at ``at`` (``valid_from <= at < valid_to``), active or since
        superseded, most recently seen first: "what did the user say before?"."""
        return [
            f
            for f in self.facts(status=None, tier=tier)
            if f.status in ("active", "superseded") and f.valid_at(at)
        ]

    def decided(self, candidate_id: str) -> bool:
        return candidate_id in self._state.decided

    def ledger(self) -> list[Decision]:
        """Every decision ever made, oldest first (read from disk; works when closed too)."""
        return Ledger.read_path(self.directory / "ledger.jsonl")

    async def search(
        self, query: str, k: int = 5, *, tiers: Sequence[str] | None = None
    ) -> list[ScoredFact]:
        """The ``k`` active facts that best match ``query``: by meaning (cosine similarity)
        and by words (BM25), fused as ``MemoryConfig.lexical_weight`` says. Each hit's
        score is its cosine similarity."""
        index = self._require_index()
        weight = self.config.lexical_weight
        facts = self._state.facts

        def wanted(fact_id: str) -> bool:
            # The state, not chromadb, is the truth: during an adjudication batch the index
            # still holds facts just retired (or re-tiered) until the batch ends.
            fact = facts.get(fact_id)
            return (
                fact is not None and fact.status == "active" and (not tiers or fact.tier in tiers)
            )

        if weight <= 0 or k <= 0:
            (vector,) = await self.embedder.embed([query])
            hits = await index.nearest(vector, k, tiers=tiers)
            return [ScoredFact(facts[i], s) for i, s in hits if wanted(i)]
        depth = max(4 * k, 40)
        lexicon = await self._lexicon()
        lexical = dict(lexicon.top(query, depth, keep=wanted if tiers else None))
        (vector,) = await self.embedder.embed([query])
        dense = await index.nearest_and(vector, depth, list(lexical), tiers=tiers)
        ids = [i for i in dense if wanted(i)]
        if not ids:
            return []
        cosine = np.array([dense[i] for i in ids], dtype=np.float32)
        words = np.array([lexical.get(i, 0.0) for i in ids], dtype=np.float32)
        fused = weight * _z(words) + (1 - weight) * _z(cosine)
        order = np.argsort(-fused, kind="stable")[:k]
        return [ScoredFact(facts[ids[i]], float(cosine[i])) for i in order]

    async def _lexicon(self) -> LexicalIndex:
        """The BM25 index of the active facts, built (in a worker thread) on first use.

        The build takes the memory's lock, so that no decision lands half-seen; never
        search from code that holds it (``anyio.Lock`` is not reentrant)."""
        if self._lexical is None:
            assert self._lock is not None, "the memory is not open"
            async with self._lock:  # no write lands while the index is being built
                if self._lexical is None:
                    active = [
                        (f.id, f.text) for f in self._state.facts.values() if f.status == "active"
                    ]
                    self._lexical = await anyio.to_thread.run_sync(LexicalIndex.of, active)
        return self._lexical

    async def prefix(self, purpose: str | None = None, *, budget_tokens: int | None = None) -> str:
        """The facts most relevant to ``purpose``, stable (L2) before tentative (L1), in budget.

        Each tier is ordered by relevance (cosine similarity to the purpose),
        then recurrence, then strength; without a purpose, by recurrence then
        strength. Superseded facts never appear.
        """
        budget = budget_tokens if budget_tokens is not None else self.config.prefix_tokens
        active = [f for f in self._state.facts.values() if f.status == "active"]
        if not active or budget <= 0:
            return ""
        relevance: dict[str, float] = {}
        if purpose and purpose.strip():
            (vector,) = await self.embedder.embed([purpose])
            hits = await self._require_index().nearest(vector, self.config.prefix_candidates)
            relevance = dict(hits)
        now = self.clock()

        def rank(f: Fact) -> tuple[float, float, float]:
            return (relevance.get(f.id, -1.0), float(f.count), self.strength(f, now))

        stable = sorted((f for f in active if f.tier == "L2"), key=rank, reverse=True)
        tentative = sorted(
            (
                f
                for f in active
                if f.tier == "L1"
                and (not relevance or relevance.get(f.id, -1.0) >= self.config.prefix_min_relevance)
            ),
            key=rank,
            reverse=True,
        )
        lines: list[str] = []
        used = 0
        for title, group in (
            ("Stable facts:", stable),
            ("Tentative (may be outdated):", tentative),
        ):
            chosen: list[str] = []
            for fact in group:
                line = f"- {fact.text}"
                cost = len(line) // 4 + 1 + (len(title) // 4 + 1 if not chosen else 0)
                if used + cost > budget:
                    break
                chosen.append(line)
                used += cost
            if chosen:
                lines.append(title)
                lines.extend(chosen)
        _log.debug("memory.prefix", facts=sum(line[:2] == "- " for line in lines), tokens=used)
        return "\n".join(lines)
