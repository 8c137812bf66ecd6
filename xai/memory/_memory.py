"""Long-term memory (L1 and L2): opening, reading, search and the memory prefix.

One store (``_writer.FactStore``, ``LongTermMemory.fact_store``) is the commit point:
every change goes through its ``write`` under one lock, is appended to the ledger
(synced) and only then applied to the vector index. Reading the ledger back on open
rebuilds every fact and repairs the index, so a kill at any point loses no decided
fact and duplicates none. Adjudication (``_adjudication.Adjudicator``) and
decay/compaction (``_maintenance.Maintenance``) are handed that store;
``LongTermMemory`` opens the indexes, reads, and puts the three together.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

import anyio
import msgspec

from xai._files import write_atomic
from xai.exceptions import (
    ConfigurationError,
    MemoryUnavailableError,
    NotOpenError,
    StateFileError,
)
from xai.logs import get_logger
from xai.memory import _snapshot
from xai.memory._adjudication import Adjudicator
from xai.memory._embeddings import Embedder, local_minilm, query_embedding
from xai.memory._episode_index import EpisodeIndex
from xai.memory._episodes import EPISODES_FILE, EpisodeStore
from xai.memory._erase import Erasure, erase_fact, erased_here, scrub_index_files
from xai.memory._index import open_index, warm_collections
from xai.memory._ledger import Ledger
from xai.memory._maintenance import Maintenance
from xai.memory._prefix import PrefixOrder, compose_prefix
from xai.memory._recency import RECALLED_FILE, Recency
from xai.memory._search import SearchTier, search_hits
from xai.memory._store import IndexStore, collection_names
from xai.memory._types import (
    Decision,
    Fact,
    FactStatus,
    ForgetScope,
    MemoryConfig,
    MemoryHit,
    ScoredFact,
    Tier,
)
from xai.memory._validity import EpisodeValidity
from xai.memory._writer import FactStore
from xai.messages import Episode, MemoryCandidate
from xai.providers import Provider

__all__ = ["LongTermMemory"]

_log = get_logger(__name__)


_DAY = 86_400.0
_EMBEDDER_FILE = "embedder.json"
"""The embeddings the memory's indexes hold (written when they are first opened)."""


class LongTermMemory:
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
        self.fact_store = FactStore(
            self.directory / "ledger.jsonl",
            embedder=embedder if embedder is not None else local_minilm(),
            config=config if config is not None else MemoryConfig(),
            clock=clock,
            sync=sync,
            open_index=self._ensure_index,
            index_lost=self._index_lost,
        )
        """The facts and the one way they change (the ledger, then the index)."""
        self._adjudicator = Adjudicator(self.fact_store, judge, self._evidence_texts)
        self._recency = Recency(self.directory / RECALLED_FILE)
        self._maintenance = Maintenance(self.fact_store, self._recency)
        self._embed_query = query_embedding(self.fact_store.embedder)  # its query encoder
        self._sync = sync
        self._order: tuple[int, PrefixOrder] | None = None
        self._validity: tuple[int, EpisodeValidity] | None = None
        """The prefix's order of the facts and the store's version it was made at."""
        self._episodes = EpisodeStore(self.directory / EPISODES_FILE, sync=sync)
        self._episode_index: EpisodeIndex | None = None
        self._shared_store = store
        """The caller's (shared by many memories, never closed here); None: an own
        embedded store under ``directory/index``, made when the index is first needed."""
        self._store: IndexStore | None = None
        self._names = collection_names(namespace if store is not None else None)
        self._lazy_index = lazy_index
        self._opening: anyio.Lock | None = None
        self._snapshot_store: IndexStore | None = None
        self._snapshot_at: tuple[int, int] | None = None
        """The facts' and episodes' generations the snapshot on disk holds."""
        self._prefetched: tuple[_snapshot.IndexSnapshot | None, IndexStore] | None = None
        """The snapshot ``open`` read ahead, and for which store."""

    @property
    def embedder(self) -> Embedder:
        return self.fact_store.embedder

    @embedder.setter
    def embedder(self, embedder: Embedder) -> None:
        self.fact_store.embedder = embedder
        self._embed_query = query_embedding(embedder)

    @property
    def judge(self) -> Provider | None:
        return self._adjudicator.judge

    @judge.setter
    def judge(self, judge: Provider | None) -> None:
        self._adjudicator.judge = judge

    @property
    def config(self) -> MemoryConfig:
        return self.fact_store.config

    @config.setter
    def config(self, config: MemoryConfig) -> None:
        self.fact_store.config = config

    @property
    def clock(self) -> Callable[[], float]:
        return self.fact_store.clock

    # -- lifecycle -----------------------------------------------------------------

    async def open(self) -> None:
        """Replay the ledger and the episodes; open the indexes and make them agree with
        both (with ``lazy_index``, when a search, a prefix or a decision first needs them:
        a memory nobody asks starts no chromadb client)."""
        await self.close()  # a second open starts afresh
        self.directory.mkdir(parents=True, exist_ok=True)
        self._order = None
        self._episodes = await EpisodeStore.open(self.directory / EPISODES_FILE, sync=self._sync)
        if len(self._episodes) and not self.fact_store.path.exists():
            _log.warning(  # the facts decided from them would be gone: say so
                "memory.ledger_missing",
                path=str(self.fact_store.path),
                episodes=len(self._episodes),
                advice="if it was deleted, restore it from a backup (`xai doctor DIR`)",
            )
        await anyio.to_thread.run_sync(self._check_embedder)
        self._opening = anyio.Lock()
        try:
            failed: Exception | None = None  # raised as itself, not in an exception group
            async with anyio.create_task_group() as group:
                if not self._lazy_index and self._shared_store is None:
                    # chromadb's start and its HNSW graphs' load (most of a large memory's
                    # open from its snapshot) run beside the ledger's replay: its Rust
                    # code lets go of the GIL
                    self._store = IndexStore.local(self.directory / "index")
                    group.start_soon(anyio.to_thread.run_sync, self._start_store, self._store)
                    group.start_soon(self._prefetch_snapshot, self._store)
                try:
                    await self.fact_store.open()
                    await anyio.to_thread.run_sync(self._recency.load)
                    if not self._lazy_index:  # the facts' BM25, also beside chromadb's load
                        await self.fact_store.lexicon()
                except Exception as exc:
                    failed = exc
                    group.cancel_scope.cancel()
            if failed is not None:
                raise failed
        except BaseException:
            with anyio.CancelScope(shield=True):
                await self._close_store()
            self._opening = self._prefetched = None
            raise
        if not self._lazy_index:
            await self._ensure_index()

    async def _prefetch_snapshot(self, store: IndexStore) -> None:
        """Read (and check) the snapshot beside the ledger's replay, for ``_ensure_index``.
        Only a head start too: a failure here is met again when the indexes open."""
        try:
            self._prefetched = await self._read_snapshot(store), store
        except Exception as exc:
            _log.debug("memory.snapshot_prefetch_failed", error=f"{type(exc).__name__}: {exc}")

    def _start_store(self, store: IndexStore) -> None:
        """Start ``store``'s client and load both collections (blocking). Only a head
        start: any failure is met again, and handled, when the indexes open."""
        try:
            warm_collections(store, self._names, self.embedder)
        except Exception as exc:  # (a corrupt store: set aside by ``open_index``)
            _log.debug("memory.store_start_failed", error=f"{type(exc).__name__}: {exc}")

    async def _ensure_index(self) -> None:
        """Open the indexes if they are not open yet, and repair them from the truth."""
        if self.fact_store.index is not None:
            return
        if self._opening is None:
            raise NotOpenError("the memory")
        async with self._opening:
            if self.fact_store.indexed():  # opened by another task meanwhile
                return
            store = self._store or self._shared_store or IndexStore.local(self.directory / "index")
            facts, episodes = self._names
            own = self._shared_store is None
            prefetched, self._prefetched = self._prefetched, None
            if prefetched is not None and prefetched[1] is store:
                snapshot = prefetched[0]  # read by ``open`` (the files unchanged since)
            else:
                snapshot = await self._read_snapshot(store)
            try:
                opening = functools.partial(
                    open_index, store, facts, self.embedder, own=own,
                    snapshot=snapshot.facts if snapshot is not None else None,
                    suspects=self._suspects,
                )  # fmt: skip
                index, indexed, store = await anyio.to_thread.run_sync(opening)
                self._store = store
                episode_index = await anyio.to_thread.run_sync(
                    EpisodeIndex.open, store, episodes, self.embedder
                )
                if indexed and not self.fact_store.path.exists():
                    raise StateFileError(
                        f"{self.fact_store.path} is missing while the index holds "
                        f"{len(indexed)} facts",
                        path=str(self.fact_store.path),
                        advice="restore it from a backup; `xai doctor DIR --repair` empties "
                        "the index to start the memory over",
                    )
                self.fact_store.index = index
                await self._reconcile(indexed)
                await self._prune_episodes()
                known = self._searchable(self._episodes)
                await episode_index.repair(
                    known, snapshot.episodes if snapshot is not None else None
                )
                # Episodes recorded while it was repaired found no index to queue them in:
                # queued here, with no await before it is published, so none is missed.
                seen = {e.id for e in known}
                episode_index.add([e for e in self._searchable(self._episodes) if e.id not in seen])
                self._episode_index = episode_index
                self._snapshot_store = store
                exact = index.from_snapshot and episode_index.from_snapshot
                # the snapshot on disk holds this (else one is written at close, when large)
                self._snapshot_at = (
                    (self.fact_store.version, episode_index.changes) if exact else None
                )
                if not (self.directory / _EMBEDDER_FILE).exists():
                    data = msgspec.json.encode({"embedder": self.embedder.name})
                    await anyio.to_thread.run_sync(
                        write_atomic, self.directory / _EMBEDDER_FILE, data
                    )
            except BaseException:
                self.fact_store.index = self._episode_index = None
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

    def _index_lost(self) -> None:
        """The index store could not be reached: the episodes' index goes with the facts'
        (the store let go of that one), both opened and repaired again on next use."""
        self._episode_index = None

    async def _close_store(self) -> None:
        store, self._store = self._store, None
        if store is not None and store is not self._shared_store:
            await anyio.to_thread.run_sync(store.close)

    async def _read_snapshot(self, store: IndexStore) -> _snapshot.IndexSnapshot | None:
        if store.path is None:  # a server: other hosts may write to it
            return None
        return await anyio.to_thread.run_sync(
            functools.partial(
                _snapshot.read,
                self.directory / _snapshot.SNAPSHOT_FILE,
                embedder=self.embedder.name,
                where=store.where,
                names=self._names,
                ledger=self.fact_store.path,
                episodes_file=self._episodes.path,
            )
        )

    def _suspects(self, part: _snapshot.Part) -> set[str]:
        """Facts whose index entry may differ from the snapshot's: every change to the
        index follows a ledger decision giving the fact a new version."""
        facts = self.fact_store.facts
        known = dict(zip(part.ids, part.versions or (), strict=True))
        out = {
            i
            for i, version in known.items()
            if (f := facts.get(i)) is None or f.status != "active" or f.version != version
        }
        out.update(i for i, f in facts.items() if f.status == "active" and i not in known)
        return out

    async def write_snapshot(self) -> bool:
        """Write the indexes' snapshot now (``_snapshot``; done at close when the memory
        holds at least ``MIN_ITEMS`` facts and episodes and changed since its last
        snapshot). Whether one was written."""
        index, episode_index, store = (
            self.fact_store.index,
            self._episode_index,
            self._snapshot_store,
        )
        if index is None or episode_index is None or store is None or store.path is None:
            return False
        generation = (self.fact_store.version, episode_index.changes)
        if self._snapshot_at == generation:
            return False
        await self.fact_store.settle()  # the snapshot holds what chromadb holds
        if self.fact_store.index is not index:  # let go of (unreachable) meanwhile
            return False
        facts, episodes = index.snapshot_part(), episode_index.snapshot_part()
        write = functools.partial(
            _snapshot.write,
            self.directory / _snapshot.SNAPSHOT_FILE,
            embedder=self.embedder.name, where=store.where, names=self._names,
            ledger=_snapshot.mark(self.fact_store.path),
            episodes_file=_snapshot.mark(self._episodes.path),
            facts=facts, episodes=episodes, sync=self._sync,
        )  # fmt: skip
        with anyio.CancelScope(shield=True):
            await anyio.to_thread.run_sync(write)
        self._snapshot_at = generation
        _log.info("memory.snapshot_written", facts=len(facts.ids), episodes=len(episodes.ids))
        return True

    async def close(self) -> None:
        if self._opening is not None:  # (open)
            await anyio.to_thread.run_sync(self._recency.save)
        try:  # the index changes adjudication deferred
            await self.fact_store.settle()
        except MemoryUnavailableError as exc:  # repaired from the ledger on the next open
            _log.warning("memory.index_unwritten", error=f"{type(exc).__name__}: {exc}")
        episode_index = self._episode_index
        if (
            episode_index is not None
            and self.fact_store.index is not None
            and len(self.fact_store.facts) + len(episode_index.corpus) >= _snapshot.MIN_ITEMS
        ):
            try:
                await self.write_snapshot()
            except OSError as exc:  # derived data: the next open reads chromadb instead
                _log.warning("memory.snapshot_failed", error=f"{type(exc).__name__}: {exc}")
        self._episodes.close()
        self._episode_index = self._prefetched = None
        self.fact_store.close()
        index_path = self._store.path if self._store is not None else None
        await self._close_store()
        needles = erased_here(index_path) if index_path is not None else ()
        if needles and index_path is not None:  # what chromadb wrote as it closed
            await anyio.to_thread.run_sync(scrub_index_files, index_path, needles)

    async def __aenter__(self) -> LongTermMemory:
        await self.open()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    async def _reconcile(self, indexed: dict[str, int]) -> None:
        """Make the index hold exactly the active facts, each at its latest version."""
        index = self.fact_store.require_index()
        active = {i: f for i, f in self.fact_store.facts.items() if f.status == "active"}
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
        return self.fact_store.facts.get(fact_id)

    def facts(
        self, *, status: FactStatus | None = "active", tier: Tier | None = None
    ) -> list[Fact]:
        """Facts by status and tier, most recently seen first."""
        out = [
            f
            for f in self.fact_store.facts.values()
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
            # embedded by the next search (or index_episodes)
            self._episode_index.add(self._searchable(fresh))
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
        return self.fact_store.decided(candidate_id)

    def ledger(self) -> list[Decision]:
        """Every decision ever made, oldest first (read from disk; works when closed too)."""
        return Ledger.read_path(self.directory / "ledger.jsonl")

    async def search(
        self,
        query: str,
        k: int = 5,
        *,
        tiers: Sequence[SearchTier] | None = None,
        current_only: bool = False,
    ) -> list[MemoryHit]:
        """The ``k`` facts and episodes that best match ``query``, best first (``_recall``:
        dense and BM25 candidates with their session neighbours, fused with length,
        neighbour, answer, session, speaker and date cues). ``tiers`` limits them to
        facts of those tiers and, with ``"episodes"``, episodes. Each hit's score is its
        cosine similarity, and each carries its validity (``current``, ``valid_to``): an
        episode whose facts were all superseded is stale and ranks below what replaced
        it (``_validity``); ``current_only`` leaves stale ones out. Facts found are the
        active ones (superseded ones: ``as_of``).

        ``MemoryUnavailableError`` (retryable) when the index store cannot be reached."""
        with self.fact_store.repaired_if_unreachable():
            await self.index_episodes()  # opens the indexes first if they are not open yet
            await self.fact_store.settle()  # what adjudication deferred
            index = self.fact_store.require_index()
            if k <= 0:
                return []
            weights = msgspec.structs.replace(
                self.config.recall, lexical=self.config.lexical_weight
            )
            hits = await search_hits(
                query, self._embed_query, k, facts=self.fact_store.facts, index=index,
                lexicon=await self.fact_store.lexicon(), episodes=self._episodes,
                episode_index=self._episode_index, tiers=tiers, weights=weights,
                validity=self.validity(), current_only=current_only,
            )  # fmt: skip
            self._recency.touch(
                (h.fact.id for h in hits if isinstance(h, ScoredFact)), self.clock()
            )
            return hits

    def validity(self) -> EpisodeValidity:
        """Which episodes are stale (made again after a write)."""
        version = self.fact_store.version
        if self._validity is None or self._validity[0] != version:
            self._validity = (version, EpisodeValidity(self.fact_store.facts))
        return self._validity[1]

    def _prefix_order(self) -> PrefixOrder:
        """The prefix's order of the facts, made again after a write."""
        version = self.fact_store.version
        if self._order is None or self._order[0] != version:
            order = PrefixOrder(self.fact_store.facts.values(), self.config.l1_half_life_days)
            self._order = (version, order)
        return self._order[1]

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
            await self.fact_store.settle()  # what adjudication deferred
            index = self.fact_store.require_index()
            hits = await index.nearest(vector, self.config.prefix_candidates)
            relevance = dict(hits)
            order = self._prefix_order()  # a decision made meanwhile reset it
        now = self.clock()
        text, used, shown = compose_prefix(
            order, self.fact_store.facts, relevance,
            lambda f: (relevance.get(f.id, -1.0), float(f.count), self.strength(f, now)),
            self.config.prefix_min_relevance, budget,
        )  # fmt: skip
        self._recency.touch(order.shown(text), now)
        _log.debug("memory.prefix", facts=shown, tokens=used)
        return text

    # -- changing ------------------------------------------------------------------

    async def adjudicate(
        self, candidates: Sequence[MemoryCandidate], *, session_id: str | None = None
    ) -> list[Decision]:
        """Decide every candidate not decided before, in order; the decisions made now
        (``_adjudication.Adjudicator.adjudicate`` says how)."""
        return await self._adjudicator.adjudicate(candidates, session_id=session_id)

    @property
    def index_behind(self) -> bool:
        """Whether adjudication passes left index writes waiting (decided, in the ledger)."""
        return self.fact_store.waiting > 0

    async def flush_index(self) -> None:
        """Write to the index what adjudication passes deferred. A host calls it once the
        memory has been idle a moment, so a shared index store (a Chroma server) is at most
        that far behind the ledger; every read through the memory does it first anyway."""
        await self.fact_store.settle()

    def strength(self, fact: Fact, now: float | None = None) -> float:
        """Confidence decayed by time since last seen (L2 does not decay)."""
        return self._maintenance.strength(fact, now)

    async def forget(
        self, fact_id: str, reason: str = "forgotten on request", *, scope: ForgetScope = "fact"
    ) -> Decision:
        """Forget the fact (one ``forget`` decision; ``FactForgottenError`` if it was already,
        with this scope or a wider one). ``scope="evidence"``: what was said goes too, its
        evidence episodes leave the search index (they stay in ``episodes.jsonl``);
        ``"erase"``: the text of both leaves every file of the memory (``erase``)."""
        if scope == "erase":
            return (await self.erase(fact_id, reason)).decision
        decision = await self._maintenance.forget(fact_id, reason, scope)
        if scope == "evidence" and self._episode_index is not None:
            gone = [e for f in decision.facts for e in f.evidence]
            await self._episode_index.remove(gone)
        return decision

    def _evidence_texts(self, ids: Sequence[str]) -> list[str]:
        return [e.text for e in (self._episodes.get(i) for i in ids) if e is not None]

    async def erase(self, fact_id: str, reason: str = "erased on request") -> Erasure:
        """Forget the fact and erase its text and its evidence's from the ledger, the
        episodes and the index (``_erase`` says how); the needles come back, to scrub
        other files with (an Agent's Sessions)."""
        await self._ensure_index()
        store = self._store if self._shared_store is None else self._shared_store
        erased = await erase_fact(
            self.fact_store, self._episodes, self._episode_index,
            store.path if store is not None else None, fact_id, reason,
        )  # fmt: skip
        # The snapshot holds the erased turns' vectors and words: derived data, dropped
        # (the next close writes one from what is left).
        snapshot = self.directory / _snapshot.SNAPSHOT_FILE
        await anyio.to_thread.run_sync(functools.partial(snapshot.unlink, missing_ok=True))
        self._snapshot_at = None
        if store is not None and store.path is not None:
            erased_here(store.path, erased.needles)
        return erased

    def _searchable(self, episodes: Iterable[Episode]) -> list[Episode]:
        """``episodes`` less those forgotten with their fact."""
        withdrawn = self.validity().withdrawn
        return [e for e in episodes if e.id not in withdrawn]

    async def maintain(self) -> list[Decision]:
        """Decay unreinforced L1 facts below the floor; merge near-duplicate L2 facts;
        demote, then forget, what went unused (``demote_unused_days``,
        ``forget_unused_days``); write when facts were last recalled."""
        decisions = await self._maintenance.maintain()
        await anyio.to_thread.run_sync(self._recency.save)
        return decisions
