"""Long-term memory (L1 and L2): adjudication, promotion, decay, search and the memory prefix.

One writer: every change goes through ``_write`` under one lock, is appended
to the ledger (synced) and only then applied to the vector index. Reading the
ledger back on open rebuilds every fact and repairs the index, so a kill at
any point loses no decided fact and duplicates none.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import NamedTuple, assert_never

import anyio
import msgspec

from xai.logs import get_logger
from xai.memory._embeddings import Embedder, local_minilm
from xai.memory._episode_index import EpisodeIndex
from xai.memory._episodes import EPISODES_FILE, EpisodeStore
from xai.memory._index import VectorIndex, open_index
from xai.memory._judge import Verdict, ask_judge, contradicts
from xai.memory._ledger import Ledger, LedgerState
from xai.memory._lexical import LexicalIndex
from xai.memory._prefix import (
    PrefixOrder,
    compose_prefix,
)
from xai.memory._search import SearchTier, search_hits
from xai.memory._types import (
    Decision,
    DecisionKind,
    Fact,
    FactStatus,
    MemoryConfig,
    MemoryHit,
    Tier,
)
from xai.messages import Episode, MemoryCandidate
from xai.providers import Provider

__all__ = ["LongTermMemory"]

_log = get_logger(__name__)
_DAY = 86_400.0


class _Pending:
    """Index changes decided (and in the ledger) but not yet written to the index."""

    __slots__ = ("deletes", "updates", "upserts")

    def __init__(self) -> None:
        self.upserts: dict[str, tuple[Fact, list[float]]] = {}
        self.updates: dict[str, Fact] = {}
        self.deletes: set[str] = set()

    def add(self, facts: Sequence[Fact], vectors: dict[str, list[float]]) -> None:
        for fact in facts:
            if fact.status != "active":
                self.upserts.pop(fact.id, None)
                self.updates.pop(fact.id, None)
                self.deletes.add(fact.id)
            elif fact.id in vectors:
                self.deletes.discard(fact.id)
                self.updates.pop(fact.id, None)
                self.upserts[fact.id] = (fact, vectors[fact.id])
            elif fact.id in self.upserts:
                self.upserts[fact.id] = (fact, self.upserts[fact.id][1])
            else:
                self.updates[fact.id] = fact


_JUDGE_ASKS = 3
"""How often one candidate's judge is asked again when the facts it was shown changed
meanwhile (another writer got the lock first); then the rules decide."""


class _Question(NamedTuple):
    """A candidate the judge must see before it can be decided, and the facts to show it."""

    candidate_id: str
    text: str
    shown: tuple[tuple[str, str], ...]
    """(fact id, text) of the nearest facts, in order: the judge answers by position."""


class _Answer(NamedTuple):
    shown: tuple[tuple[str, str], ...]
    verdict: Verdict | None
    asks: int


def fact_id_for(candidate: MemoryCandidate) -> str:
    """Deterministic: re-deciding the same candidate (after a crash) makes the same fact."""
    return f"f{candidate.id}"


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
        self._pending: _Pending | None = None
        self._lexical: LexicalIndex | None = None
        self._order: PrefixOrder | None = None
        self._episodes = EpisodeStore(self.directory / EPISODES_FILE, sync=sync)
        self._episode_index: EpisodeIndex | None = None

    # -- lifecycle -----------------------------------------------------------------

    async def open(self) -> None:
        """Replay the ledger and make the index agree with it."""
        await self.close()  # a second open starts afresh
        self.directory.mkdir(parents=True, exist_ok=True)
        path = self.directory / "ledger.jsonl"
        self._state = await anyio.to_thread.run_sync(Ledger.replay, path)
        self._order = None
        self._episodes = await EpisodeStore.open(self.directory / EPISODES_FILE, sync=self._sync)
        self._index, indexed = await anyio.to_thread.run_sync(
            open_index, self.directory / "index", self.embedder
        )
        try:
            self._ledger = Ledger(path, sync=self._sync)
            self._lock = anyio.Lock()
            self._lexical = None  # rebuilt from this state on the next search
            await self._reconcile(indexed)
            self._episode_index = await anyio.to_thread.run_sync(
                EpisodeIndex, self.directory / "index", self.embedder
            )
            await self._prune_episodes()
            await self._episode_index.repair(list(self._episodes))
        except BaseException:
            with anyio.CancelScope(shield=True):
                await self.close()
            raise

    async def close(self) -> None:
        self._episodes.close()
        if self._episode_index is not None:
            episode_index, self._episode_index = self._episode_index, None
            await anyio.to_thread.run_sync(episode_index.close)
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

    def _require_lock(self) -> anyio.Lock:
        if self._lock is None:
            raise RuntimeError("the memory is not open: call open() or use `async with`")
        return self._lock

    def _require_index(self) -> VectorIndex:
        if self._index is None:
            raise RuntimeError("the memory is not open: call open() or use `async with`")
        return self._index

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

    def decided(self, candidate_id: str) -> bool:
        return candidate_id in self._state.decided

    def ledger(self) -> list[Decision]:
        """Every decision ever made, oldest first (read from disk; works when closed too)."""
        return Ledger.read_path(self.directory / "ledger.jsonl")

    async def search(
        self, query: str, k: int = 5, *, tiers: Sequence[SearchTier] | None = None
    ) -> list[MemoryHit]:
        """The ``k`` facts and episodes that best match ``query``, best first (``_recall``:
        dense and BM25 candidates with their session neighbours, fused with date, speaker,
        neighbour and session cues). ``tiers`` limits them to facts of those tiers and, with
        ``"episodes"``, episodes. Each hit's score is its cosine similarity."""
        index = self._require_index()
        if k <= 0:
            return []
        weights = msgspec.structs.replace(self.config.recall, lexical=self.config.lexical_weight)
        await self.index_episodes()
        (vector,) = await self.embedder.embed([query])
        return await search_hits(
            query, vector, k, facts=self._state.facts, index=index,
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

    def strength(self, fact: Fact, now: float | None = None) -> float:
        """Confidence decayed by time since last seen (L2 does not decay)."""
        if fact.tier == "L2":
            return fact.confidence
        age = max(0.0, (now if now is not None else self.clock()) - fact.last_seen)
        return float(fact.confidence * 0.5 ** (age / (self.config.l1_half_life_days * _DAY)))

    async def prefix(self, purpose: str | None = None, *, budget_tokens: int | None = None) -> str:
        """The facts most relevant to ``purpose``, stable (L2) before tentative (L1), dated,
        grouped by topic, in budget (``_prefix`` says the order). Superseded facts never
        appear; with a purpose, L1 facts less relevant than ``prefix_min_relevance`` neither."""
        budget = budget_tokens if budget_tokens is not None else self.config.prefix_tokens
        if budget <= 0:
            return ""
        if self._order is None:
            self._order = PrefixOrder(self._state.facts.values(), self.config.l1_half_life_days)
        if not self._order.tiers["L1"] and not self._order.tiers["L2"]:
            return ""
        relevance: dict[str, float] = {}
        if purpose and purpose.strip():
            (vector,) = await self.embedder.embed([purpose])
            hits = await self._require_index().nearest(vector, self.config.prefix_candidates)
            relevance = dict(hits)
        now = self.clock()
        text, used, shown = compose_prefix(
            self._order, self._state.facts, relevance,
            lambda f: (relevance.get(f.id, -1.0), float(f.count), self.strength(f, now)),
            self.config.prefix_min_relevance, budget,
        )  # fmt: skip
        _log.debug("memory.prefix", facts=shown, tokens=used)
        return text

    # -- writing -------------------------------------------------------------------

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
        if retired:
            await index.delete(retired)
        fresh = [f for f in facts if f.status == "active" and f.id in vectors]
        if fresh:
            await index.upsert(fresh, [vectors[f.id] for f in fresh])
        changed = [f for f in facts if f.status == "active" and f.id not in vectors]
        if changed:
            await index.update_metadata(changed)
        return decision

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
                index = self._require_index()
                if pending.deletes:
                    await index.delete(sorted(pending.deletes))
                if pending.upserts:
                    facts = [fact for fact, _ in pending.upserts.values()]
                    await index.upsert(facts, [v for _, v in pending.upserts.values()])
                if pending.updates:
                    await index.update_metadata(list(pending.updates.values()))

    async def _nearest(
        self, vector: list[float], k: int, *, tiers: Sequence[str] | None = None
    ) -> list[tuple[str, float]]:
        """Nearest active facts, including those written earlier in the running batch."""
        pending = self._pending
        if pending is None or not (pending.upserts or pending.deletes or pending.updates):
            return await self._require_index().nearest(vector, k, tiers=tiers)
        hidden = len(pending.deletes) + len(pending.upserts)
        hits = await self._require_index().nearest(vector, k + hidden, tiers=tiers)
        scores = {i: s for i, s in hits if i not in pending.deletes and i not in pending.upserts}
        for fact_id, (fact, stored) in pending.upserts.items():
            if tiers and fact.tier not in tiers:
                continue
            scores[fact_id] = sum(a * b for a, b in zip(vector, stored, strict=True))
        live = {
            i: s for i, s in scores.items()
            if (f := self._state.facts.get(i)) is not None and f.status == "active"
            and (not tiers or f.tier in tiers)
        }  # fmt: skip
        return sorted(live.items(), key=lambda item: -item[1])[:k]

    async def adjudicate(
        self, candidates: Sequence[MemoryCandidate], *, session_id: str | None = None
    ) -> list[Decision]:
        """Decide every candidate not decided before, in order. Returns the decisions made now.

        The embedding and the LLM judge run outside the memory's lock, so a search never
        waits behind them. A verdict is applied only if the facts the judge was shown
        are still the nearest ones when the lock is taken again; else the judge is asked
        again (at most ``_JUDGE_ASKS`` times, then the rules decide).
        """
        lock = self._require_lock()
        todo = list({c.id: c for c in candidates if c.id not in self._state.decided}.values())
        if not todo:
            return []
        vectors = await self.embedder.embed([c.text for c in todo])
        queue = deque(zip(todo, vectors, strict=True))
        answers: dict[str, _Answer] = {}
        decisions: list[Decision] = []
        while queue:
            question: _Question | None = None
            async with lock, self._batch():
                while queue:
                    candidate, vector = queue[0]
                    if candidate.id in self._state.decided:  # by a concurrent delivery
                        queue.popleft()
                        continue
                    step = await self._decide(
                        candidate,
                        vector,
                        session_id or candidate.session_id or None,
                        answers.get(candidate.id),
                    )
                    if isinstance(step, _Question):
                        question = step
                        break
                    decisions.extend(step)
                    queue.popleft()
            if question is not None:  # the lock is released (and the batch written) here
                assert self.judge is not None
                verdict = await ask_judge(
                    self.judge,
                    question.text,
                    [text for _, text in question.shown],
                    max_tokens=self.config.judge_max_tokens,
                )
                earlier = answers.get(question.candidate_id)
                asks = earlier.asks + 1 if earlier is not None else 1
                answers[question.candidate_id] = _Answer(question.shown, verdict, asks)
        return decisions

    async def _decide(
        self,
        candidate: MemoryCandidate,
        vector: list[float],
        session_id: str | None,
        answer: _Answer | None,
    ) -> list[Decision] | _Question:
        """Decide one candidate under the lock, or say what to ask the judge first."""
        config = self.config
        if not candidate.evidence or not candidate.text.strip():
            return [
                await self._write(
                    "drop", "no user evidence", (), candidate=candidate, session_id=session_id
                )
            ]
        hits = await self._nearest(vector, config.neighbours)
        near = [(self._state.facts[i], s) for i, s in hits if i in self._state.facts]
        if _log.enabled("debug"):
            top_id, top_similarity = (near[0][0].id, round(near[0][1], 3)) if near else (None, None)
            _log.debug(
                "memory.nearest",
                candidate_id=candidate.id,
                fact_id=top_id,
                similarity=top_similarity,
            )
        if not near or near[0][1] < config.novel_similarity:
            return await self._add(candidate, vector, session_id, "nothing similar is known")
        top, similarity = near[0]
        if similarity >= config.duplicate_similarity and not contradicts(candidate.text, top.text):
            return await self._reinforce(
                top, candidate, session_id, f"same as a known fact ({similarity:.2f})"
            )
        if self.judge is not None and config.use_judge:
            shown = tuple((f.id, f.text) for f, _ in near)
            if answer is None or (answer.shown != shown and answer.asks < _JUDGE_ASKS):
                return _Question(candidate.id, candidate.text, shown)
            if answer.shown == shown and answer.verdict is not None:
                return await self._apply_verdict(
                    candidate, vector, session_id, near, answer.verdict
                )
        # Rules only: a contradiction replaces, a close match recurs, the rest is new.
        if contradicts(candidate.text, top.text):
            return await self._supersede(
                top, candidate, vector, session_id, "contradicts a known fact (rules)"
            )
        midpoint = (config.novel_similarity + config.duplicate_similarity) / 2
        if similarity >= midpoint:
            return await self._reinforce(
                top, candidate, session_id, f"close to a known fact ({similarity:.2f}, rules)"
            )
        return await self._add(
            candidate, vector, session_id, f"related but different ({similarity:.2f}, rules)"
        )

    async def _apply_verdict(
        self,
        candidate: MemoryCandidate,
        vector: list[float],
        session_id: str | None,
        near: list[tuple[Fact, float]],
        verdict: Verdict,
    ) -> list[Decision]:
        reason = verdict.reason or f"judge: {verdict.decision}"
        important = verdict.important
        decision = verdict.decision
        if decision == "drop":
            return [
                await self._write(
                    "drop", reason, (), candidate=candidate, session_id=session_id, judge=True
                )
            ]
        target = near[verdict.fact - 1][0] if verdict.fact is not None else None
        if decision == "add" or target is None:  # `ask_judge` names a fact for the others
            return await self._add(
                candidate, vector, session_id, reason, judge=True, important=important
            )
        if decision == "reinforce":
            return await self._reinforce(
                target, candidate, session_id, reason, judge=True, important=important
            )
        if decision == "update":
            text = verdict.text.strip()
            return await self._merge(
                target, candidate, text, session_id, reason, important=important
            )
        if decision == "supersede":
            return await self._supersede(
                target, candidate, vector, session_id, reason, judge=True, important=important
            )
        assert_never(decision)

    def _new_fact(
        self,
        candidate: MemoryCandidate,
        session_id: str | None,
        *,
        important: bool,
        supersedes: tuple[str, ...] = (),
    ) -> Fact:
        now = self.clock()
        return Fact(
            id=fact_id_for(candidate),
            text=candidate.text.strip(),
            kind=candidate.kind,
            tier="L2" if important else "L1",
            sessions=(session_id,) if session_id else (),
            first_seen=now,
            last_seen=now,
            confidence=candidate.confidence,
            supersedes=supersedes,
            sources=(candidate.id,),
            important=important,
        )

    async def _add(
        self,
        candidate: MemoryCandidate,
        vector: list[float],
        session_id: str | None,
        reason: str,
        *,
        judge: bool = False,
        important: bool = False,
    ) -> list[Decision]:
        fact = self._new_fact(candidate, session_id, important=important)
        return [
            await self._write(
                "add", reason, (fact,), candidate=candidate, session_id=session_id,
                judge=judge, vectors={fact.id: vector},
            )
        ]  # fmt: skip

    def _recur(
        self, fact: Fact, candidate: MemoryCandidate, session_id: str | None, *, important: bool
    ) -> Fact:
        new_session = session_id is not None and session_id not in fact.sessions
        tier = fact.tier
        if important or (new_session and fact.count + 1 >= self.config.promote_after_sessions):
            tier = "L2"
        return msgspec.structs.replace(
            fact,
            count=fact.count + 1 if new_session else fact.count,
            sessions=(*fact.sessions, session_id) if new_session and session_id else fact.sessions,
            last_seen=self.clock(),
            confidence=max(fact.confidence, candidate.confidence),
            sources=(*fact.sources, candidate.id),
            important=fact.important or important,
            tier=tier,
            version=fact.version + 1,
        )

    async def _reinforce(
        self,
        fact: Fact,
        candidate: MemoryCandidate,
        session_id: str | None,
        reason: str,
        *,
        judge: bool = False,
        important: bool = False,
    ) -> list[Decision]:
        updated = self._recur(fact, candidate, session_id, important=important)
        decisions = [
            await self._write(
                "reinforce",
                reason,
                (updated,),
                candidate=candidate,
                session_id=session_id,
                judge=judge,
            )
        ]
        decisions.extend(await self._promoted(fact, updated, session_id))
        return decisions

    async def _promoted(self, before: Fact, after: Fact, session_id: str | None) -> list[Decision]:
        if not (after.tier == "L2" and before.tier == "L1"):
            return []
        why = "judged important" if after.important else f"reported by {after.count} sessions"
        return [await self._write("promote", why, (after,), session_id=session_id)]

    async def _merge(
        self,
        fact: Fact,
        candidate: MemoryCandidate,
        text: str,
        session_id: str | None,
        reason: str,
        *,
        important: bool,
    ) -> list[Decision]:
        merged = msgspec.structs.replace(
            self._recur(fact, candidate, session_id, important=important), text=text
        )
        (vector,) = await self.embedder.embed([text])
        decisions = [
            await self._write(
                "merge", reason, (merged,), candidate=candidate, session_id=session_id,
                judge=True, vectors={merged.id: vector},
            )
        ]  # fmt: skip
        decisions.extend(await self._promoted(fact, merged, session_id))
        return decisions

    async def _supersede(
        self,
        old: Fact,
        candidate: MemoryCandidate,
        vector: list[float],
        session_id: str | None,
        reason: str,
        *,
        judge: bool = False,
        important: bool = False,
    ) -> list[Decision]:
        new = self._new_fact(
            candidate, session_id, important=important or old.tier == "L2", supersedes=(old.id,)
        )
        retired = msgspec.structs.replace(
            old, status="superseded", superseded_by=new.id, version=old.version + 1
        )
        return [
            await self._write(
                "supersede", reason, (retired, new), candidate=candidate, session_id=session_id,
                judge=judge, vectors={new.id: vector},
            )
        ]  # fmt: skip

    async def forget(self, fact_id: str, reason: str = "forgotten on request") -> Decision:
        assert self._lock is not None, "the memory is not open"
        async with self._lock, self._batch():
            fact = self._state.facts.get(fact_id)
            if fact is None:
                raise KeyError(f"no fact {fact_id!r}")
            gone = msgspec.structs.replace(fact, status="forgotten", version=fact.version + 1)
            return await self._write("forget", reason, (gone,))

    async def maintain(self) -> list[Decision]:
        """Decay unreinforced L1 facts below the floor; merge near-duplicate L2 facts."""
        assert self._lock is not None, "the memory is not open"
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
                if similarity < self.config.l2_merge_similarity or contradicts(
                    keeper.text, other.text
                ):
                    continue
                sessions = tuple(dict.fromkeys((*keeper.sessions, *other.sessions)))
                keeper = msgspec.structs.replace(
                    keeper,
                    count=len(sessions) or keeper.count + other.count,
                    sessions=sessions,
                    last_seen=max(keeper.last_seen, other.last_seen),
                    sources=(*keeper.sources, *other.sources),
                    supersedes=(*keeper.supersedes, other.id),
                    version=keeper.version + 1,
                )
                retired = msgspec.structs.replace(
                    other, status="superseded", superseded_by=keeper.id, version=other.version + 1
                )
                decisions.append(
                    await self._write(
                        "compact",
                        f"near-duplicate stable facts ({similarity:.2f})",
                        (keeper, retired),
                    )
                )
        return decisions
