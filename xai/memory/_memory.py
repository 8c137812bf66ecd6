"""Long-term memory (L1 and L2): opening, reading, search and the memory prefix.

One writer (``_writer.MemoryWriter``): every change goes through ``_write`` under
one lock, is appended to the ledger (synced) and only then applied to the vector
index. Reading the ledger back on open rebuilds every fact and repairs the index,
so a kill at any point loses no decided fact and duplicates none. Adjudication
(``_adjudication``) and decay/compaction (``_maintenance``) are written on top of
that writer; ``LongTermMemory`` puts the three together.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import anyio
import msgspec

from xai._files import write_atomic
from xai.exceptions import ConfigurationError
from xai.logs import get_logger
from xai.memory._adjudication import Adjudication
from xai.memory._embeddings import Embedder, local_minilm, query_embedding
from xai.memory._episode_index import EpisodeIndex
from xai.memory._episodes import EPISODES_FILE, EpisodeStore
from xai.memory._index import VectorIndex, open_index
from xai.memory._ledger import Ledger, LedgerState
from xai.memory._lexical import LexicalIndex
from xai.memory._maintenance import Maintenance
from xai.memory._prefix import PrefixOrder, compose_prefix
from xai.memory._search import SearchTier, search_hits
from xai.memory._store import IndexStore, collection_names
from xai.memory._types import Decision, Fact, FactStatus, MemoryConfig, MemoryHit, Tier
from xai.messages import Episode
from xai.providers import Provider

__all__ = ["LongTermMemory"]

_log = get_logger(__name__)


_DAY = 86_400.0
_EMBEDDER_FILE = "embedder.json"
"""The embeddings the memory's indexes hold (written when they are first opened)."""


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
        store: IndexStore | None = None,
        namespace: str | None = None,
        lazy_index: bool = False,
    ) -> None:
        self.directory = Path(directory).expanduser()
        self.embedder = embedder if embedder is not None else local_minilm()
        self._embed_query = query_embedding(self.embedder)  # its query encoder, if any
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
        self._order: PrefixOrder | None = None
        self._episodes = EpisodeStore(self.directory / EPISODES_FILE, sync=sync)
        self._episode_index: EpisodeIndex | None = None
        self._shared_store = store
        """The caller's (shared by many memories, never closed here); None: an own
        embedded store under ``directory/index``, made when the index is first needed."""
        self._store: IndexStore | None = None
        self._names = collection_names(namespace if store is not None else None)
        self._lazy_index = lazy_index
        self._opening: anyio.Lock | None = None

    # -- lifecycle -----------------------------------------------------------------

    async def open(self) -> None:
        """Replay the ledger and the episodes; open the indexes and make them agree with
        both (with ``lazy_index``, when a search, a prefix or a decision first needs them:
        a memory nobody asks starts no chromadb client)."""
        await self.close()  # a second open starts afresh
        self.directory.mkdir(parents=True, exist_ok=True)
        path = self.directory / "ledger.jsonl"
        self._state = await anyio.to_thread.run_sync(Ledger.replay, path)
        self._order = None
        self._episodes = await EpisodeStore.open(self.directory / EPISODES_FILE, sync=self._sync)
        await anyio.to_thread.run_sync(self._check_embedder)
        self._ledger = Ledger(path, sync=self._sync)
        self._lock = anyio.Lock()
        self._opening = anyio.Lock()
        self._lexical = None  # rebuilt from this state on the next search
        if not self._lazy_index:
            await self._ensure_index()

    async def _ensure_index(self) -> None:
        """Open the indexes if they are not open yet, and repair them from the truth."""
        if self._index is not None:
            return
        if self._opening is None:
            raise RuntimeError("the memory is not open: call open() or use `async with`")
        async with self._opening:
            if self._indexed():  # by another task meanwhile
                return
            store = self._store or self._shared_store or IndexStore.local(self.directory / "index")
            facts, episodes = self._names
            own = self._shared_store is None
            try:
                index, indexed, store = await anyio.to_thread.run_sync(
                    functools.partial(open_index, store, facts, self.embedder, own=own)
                )
                self._store = store
                episode_index = await anyio.to_thread.run_sync(
                    EpisodeIndex.open, store, episodes, self.embedder
                )
                self._index = index
                await self._reconcile(indexed)
                await self._prune_episodes()
                known = list(self._episodes)
                await episode_index.repair(known)
                # Episodes recorded while it was repaired found no index to queue them in:
                # queued here, with no await before it is published, so none is missed.
                seen = {e.id for e in known}
                episode_index.add([e for e in self._episodes if e.id not in seen])
                self._episode_index = episode_index
                if not (self.directory / _EMBEDDER_FILE).exists():
                    data = msgspec.json.encode({"embedder": self.embedder.name})
                    await anyio.to_thread.run_sync(
                        write_atomic, self.directory / _EMBEDDER_FILE, data
                    )
            except BaseException:
                self._index = self._episode_index = None
                with anyio.CancelScope(shield=True):
                    await self._close_store()
                raise

    def _check_embedder(self) -> None:
        """Refuse at once (not at the first search) a memory indexed with other embeddings:
        ``embedder.json`` names them from the first time the indexes were opened."""
        path = self.directory / _EMBEDDER_FILE
        try:
            stored = msgspec.json.decode(path.read_bytes(), type=dict[str, str]).get("embedder")
        except FileNotFoundError:
            return
        except (msgspec.DecodeError, msgspec.ValidationError):
            return  # derived: rewritten when the indexes next open
        if stored is not None and stored != self.embedder.name:
            raise ConfigurationError(
                f"the memory at {self.directory} was built with embeddings {stored!r}, "
                f"not {self.embedder.name!r}"
            )

    def _indexed(self) -> bool:
        return self._index is not None

    def _index_lost(self) -> None:
        self._index = None
        self._episode_index = None

    async def _close_store(self) -> None:
        store, self._store = self._store, None
        if store is not None and store is not self._shared_store:
            await anyio.to_thread.run_sync(store.close)

    async def close(self) -> None:
        self._episodes.close()
        self._episode_index = None
        self._index = None
        if self._ledger is not None:
            self._ledger.close()
            self._ledger = None
        await self._close_store()

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
        """Keep episodes not known yet (by id); on disk when this returns, and searchable:
        the next search embeds them first. How many were new."""
        fresh = await self._episodes.record(episodes)
        if self._episode_index is not None:
            self._episode_index.add(fresh)  # embedded by the next search (or index_episodes)
            await self._prune_episodes()
        return len(fresh)

    async def index_episodes(self) -> None:
        """Embed and index the episodes recorded since (``search`` does it first anyway)."""
        await self._ensure_index()
        if self._episode_index is not None:
            await self._episode_index.flush()

    async def _prune_episodes(self) -> None:
        """Apply the retention settings (``episode_retention_days``, ``max_episodes``)."""
        days, cap = self.config.episode_retention_days, self.config.max_episodes
        if days is None and cap is None:
            return
        before = self.clock() - days * _DAY if days is not None else None
        gone = await self._episodes.prune(before=before, keep=cap)
        if gone and self._episode_index is not None:
            await self._episode_index.remove([e.id for e in gone])

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
        self, query: str, k: int = 5, *, tiers: Sequence[SearchTier] | None = None
    ) -> list[MemoryHit]:
        """The ``k`` facts and episodes that best match ``query``, best first (``_recall``:
        dense and BM25 candidates with their session neighbours, fused with length,
        neighbour, answer, session, speaker and date cues). ``tiers`` limits them to
        facts of those tiers and, with ``"episodes"``, episodes. Each hit's score is its
        cosine similarity.

        ``MemoryUnavailableError`` (retryable) when the index store cannot be reached."""
        with self._repaired_if_unreachable():
            await self.index_episodes()  # opens the indexes first if they are not open yet
            index = self._require_index()
            if k <= 0:
                return []
            weights = msgspec.structs.replace(
                self.config.recall, lexical=self.config.lexical_weight
            )
            return await search_hits(
                query, self._embed_query, k, facts=self._state.facts, index=index,
                lexicon=await self._lexicon(), episodes=self._episodes,
                episode_index=self._episode_index, tiers=tiers, weights=weights,
            )  # fmt: skip

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

    def _prefix_order(self) -> PrefixOrder:
        """The prefix's order of the facts, made again after a write."""
        if self._order is None:
            self._order = PrefixOrder(self._state.facts.values(), self.config.l1_half_life_days)
        return self._order

    async def prefix(self, purpose: str | None = None, *, budget_tokens: int | None = None) -> str:
        """The facts most relevant to ``purpose``, stable (L2) before tentative (L1), dated,
        grouped by topic, in budget (``_prefix`` says the order). Superseded facts never
        appear; with a purpose, L1 facts less relevant than ``prefix_min_relevance`` neither."""
        budget = budget_tokens if budget_tokens is not None else self.config.prefix_tokens
        if budget <= 0:
            return ""
        order = self._prefix_order()
        if not order.tiers["L1"] and not order.tiers["L2"]:
            return ""
        relevance: dict[str, float] = {}
        if purpose and purpose.strip():
            vector = await self._embed_query(purpose)
            await self._ensure_index()
            hits = await self._require_index().nearest(vector, self.config.prefix_candidates)
            relevance = dict(hits)
            order = self._prefix_order()  # a decision made meanwhile reset it
        now = self.clock()
        text, used, shown = compose_prefix(
            order, self._state.facts, relevance,
            lambda f: (relevance.get(f.id, -1.0), float(f.count), self.strength(f, now)),
            self.config.prefix_min_relevance, budget,
        )  # fmt: skip
        _log.debug("memory.prefix", facts=shown, tokens=used)
        return text
