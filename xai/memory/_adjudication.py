"""Adjudication: how a Session's candidate becomes a fact (add, reinforce, merge,
supersede or drop), by the rules or by an LLM judge, written through the memory's
``FactStore`` (the one commit point), which ``Adjudicator`` is handed."""

from __future__ import annotations

import itertools
from collections import deque
from collections.abc import Callable, Sequence
from typing import NamedTuple, assert_never

import anyio
import msgspec

from xai.logs import get_logger
from xai.memory._judge import Verdict, ask_judge
from xai.memory._policy import covers, negated, relation, restates, shares_attribute
from xai.memory._support import Support, support
from xai.memory._types import Decision, Fact
from xai.memory._writer import FactStore
from xai.messages import MemoryCandidate
from xai.providers import Provider

__all__ = ["Adjudicator", "fact_id_for"]

_log = get_logger(__name__)

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


_AHEAD = 64
"""Candidates whose neighbours in the index are fetched in one query, under the lock."""
_MARGIN = 8
"""Neighbours fetched beyond ``MemoryConfig.neighbours``: room for the facts the running
batch retires or re-embeds (then hidden) before a candidate's turn comes."""


def fact_id_for(candidate: MemoryCandidate) -> str:
    """Deterministic: re-deciding the same candidate (after a crash) makes the same fact."""
    return f"f{candidate.id}"


def _union(have: tuple[str, ...], more: Sequence[str]) -> tuple[str, ...]:
    """``have`` then what ``more`` adds, in order, nothing dropped or repeated."""
    extra = [e for e in dict.fromkeys(more) if e not in have]
    return (*have, *extra) if extra else have


def _breaks_policy(verdict: Verdict, candidate: str, target: Fact | None) -> str | None:
    """Why a judge's verdict breaks the adjudication policy, or ``None`` if it keeps it."""
    if target is None:
        return None
    decision = verdict.decision
    if decision == "reinforce" and not restates(candidate, target.text):
        return "the candidate has content the fact lacks"
    if decision == "update" and not covers(verdict.text, candidate, target.text):
        return "the merged text drops content of the candidate or the fact"
    if decision == "supersede" and relation(candidate, target.text) != "contradicts":
        if not shares_attribute(candidate, target.text):
            return "it names neither the fact's subject nor its attribute"
        if negated(candidate) != negated(target.text):
            return "a negated near-repeat on a different attribute is not a contradiction"
    return None


class Adjudicator:
    """``adjudicate`` and the decisions it makes, written to ``store``; ``judge`` (when set
    and ``MemoryConfig.use_judge``) is asked about the candidates the rules cannot settle."""

    def __init__(
        self,
        store: FactStore,
        judge: Provider | None,
        evidence: Callable[[Sequence[str]], list[str]] | None = None,
    ) -> None:
        self.store = store
        self.judge = judge
        self._evidence = evidence
        """The text of the episodes of some ids (those the memory holds)."""
        self._ungrounded: dict[str, Support] = {}
        """Candidates their evidence does not support, until decided (``_support``)."""

    def _cited(self, candidates: Sequence[MemoryCandidate]) -> list[tuple[int, list[str]]]:
        """The candidates (by position) whose support is checked, with their cited
        episodes' texts; a candidate whose episodes are unknown is not checked."""
        if self._evidence is None or not self.store.config.check_support:
            return []
        cited = [(n, self._evidence(c.evidence)) for n, c in enumerate(candidates)]
        return [(n, texts) for n, texts in cited if texts]

    def _check_support(
        self,
        candidates: Sequence[MemoryCandidate],
        vectors: Sequence[list[float]],
        cited: Sequence[tuple[int, list[str]]],
        said: Sequence[list[float]],
    ) -> None:
        """Note the candidates whose cited episodes do not support them (``said``: the
        embedding of each ``cited`` candidate's evidence, joined)."""
        config = self.store.config
        for (n, texts), evidence_vector in zip(cited, said, strict=True):
            candidate = candidates[n]
            found = support(candidate.text, texts, vectors[n], evidence_vector)
            if not found.holds(config.support_overlap, config.support_similarity):
                self._ungrounded[candidate.id] = found

    async def adjudicate(
        self, candidates: Sequence[MemoryCandidate], *, session_id: str | None = None
    ) -> list[Decision]:
        """Decide every candidate not decided before, in order. Returns the decisions made now.

        The embedding and the LLM judge run outside the memory's lock, so a search never
        waits behind them. A verdict is applied only if the facts the judge was shown
        are still the nearest ones when the lock is taken again; else the judge is asked
        again (at most ``_JUDGE_ASKS`` times, then the rules decide).
        """
        lock = self.store.require_lock()
        todo = list({c.id: c for c in candidates if c.id not in self.store.state.decided}.values())
        if not todo:
            return []
        await self.store.ensure_index()
        # The candidates and their evidence in one embedding call (the model batches
        # texts of like length together).
        cited = self._cited(todo)
        texts = [c.text for c in todo] + [" ".join(said) for _, said in cited]
        async with anyio.create_task_group() as group:
            # What earlier passes left for the index, if due, written meanwhile (chromadb
            # waits on its disk syncs while the model computes).
            group.start_soon(self.store.write_due)
            embedded = await self.store.embedder.embed(texts)
        await self.store.ensure_index()  # (let go of if it could not be written)
        vectors = embedded[: len(todo)]
        self._check_support(todo, vectors, cited, embedded[len(todo) :])
        queue = deque(zip(todo, vectors, strict=True))
        answers: dict[str, _Answer] = {}
        decisions: list[Decision] = []
        while queue:
            question: _Question | None = None
            async with lock, self.store.batch(defer=True):
                ahead: dict[str, list[tuple[str, float]]] = {}
                while queue:
                    candidate, vector = queue[0]
                    if candidate.id in self.store.state.decided:  # by a concurrent delivery
                        queue.popleft()
                        continue
                    if candidate.id not in ahead:  # the next ones' neighbours, in one query
                        chunk = list(itertools.islice(queue, _AHEAD))
                        found = await self.store.require_index().nearest_many(
                            [v for _, v in chunk], self.store.config.neighbours + _MARGIN
                        )
                        ahead = {c.id: hits for (c, _), hits in zip(chunk, found, strict=True)}
                    step = await self._decide(
                        candidate,
                        vector,
                        session_id or candidate.session_id or None,
                        answers.get(candidate.id),
                        ahead[candidate.id],
                    )
                    if isinstance(step, _Question):
                        question = step
                        break
                    decisions.extend(step)
                    queue.popleft()
            if question is not None:  # the lock is released (and the ledger synced) here
                assert self.judge is not None
                verdict = await ask_judge(
                    self.judge,
                    question.text,
                    [text for _, text in question.shown],
                    max_tokens=self.store.config.judge_max_tokens,
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
        indexed: list[tuple[str, float]] | None = None,
    ) -> list[Decision] | _Question:
        """Decide one candidate under the lock, or say what to ask the judge first."""
        config = self.store.config
        if not candidate.evidence or not candidate.text.strip():
            return [
                await self.store.write(
                    "drop", "no user evidence", (), candidate=candidate, session_id=session_id
                )
            ]
        ungrounded = self._ungrounded.pop(candidate.id, None)
        if ungrounded is not None:
            _log.info("memory.ungrounded", candidate_id=candidate.id, support=repr(ungrounded))
            reason = f"not supported by its evidence ({ungrounded!r})"
            return [
                await self.store.write(
                    "drop", reason, (), candidate=candidate, session_id=session_id
                )
            ]
        hits = await self.store.nearest(vector, config.neighbours, indexed=indexed)
        near = [(self.store.state.facts[i], s) for i, s in hits if i in self.store.state.facts]
        if _log.enabled("debug"):
            top_id, top_similarity = (near[0][0].id, round(near[0][1], 3)) if near else (None, None)
            _log.debug(
                "memory.nearest",
                candidate_id=candidate.id,
                fact_id=top_id,
                similarity=top_similarity,
            )
        if not near or near[0][1] < config.novel_similarity:
            # Nothing close enough to restate; a changed value of the same attribute ("lives
            # in Paris" -> "moved to Berlin") can still be far apart in meaning.
            for fact, sim in near:
                if sim >= config.contradiction_similarity and (
                    relation(candidate.text, fact.text) == "contradicts"
                ):
                    return await self._supersede(
                        fact, candidate, vector, session_id,
                        f"contradicts a known fact ({sim:.2f}, rules)",
                    )  # fmt: skip
            return await self._add(candidate, vector, session_id, "nothing similar is known")
        top, similarity = near[0]
        related = [(f, sim) for f, sim in near if sim >= config.contradiction_similarity]
        if similarity >= config.duplicate_similarity and restates(candidate.text, top.text):
            return await self._reinforce(
                top, candidate, session_id, f"restates a known fact ({similarity:.2f})"
            )
        if self.judge is not None and config.use_judge:
            shown = tuple((f.id, f.text) for f, _ in near)
            if answer is None or (answer.shown != shown and answer.asks < _JUDGE_ASKS):
                return _Question(candidate.id, candidate.text, shown)
            if answer.shown == shown and answer.verdict is not None:
                return await self._apply_verdict(
                    candidate, vector, session_id, near, answer.verdict
                )
        # Rules (the same policy the judge is held to): a restatement recurs, a
        # contradiction of the same subject and attribute replaces, the rest is new.
        for fact, sim in related:
            kind = relation(candidate.text, fact.text)
            if kind == "restates":
                if sim >= config.novel_similarity:
                    return await self._reinforce(
                        fact, candidate, session_id, f"restates a known fact ({sim:.2f}, rules)"
                    )
            elif kind == "contradicts":
                return await self._supersede(
                    fact,
                    candidate,
                    vector,
                    session_id,
                    f"contradicts a known fact ({sim:.2f}, rules)",
                )
            elif kind != "distinct":
                assert_never(kind)
        return await self._add(
            candidate, vector, session_id, f"related but distinct ({similarity:.2f}, rules)"
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
        target = near[verdict.fact - 1][0] if verdict.fact is not None else None
        broken = _breaks_policy(verdict, candidate.text, target)
        if broken:  # the judge is held to the rules' policy: a distinct fact is added
            _log.info("memory.verdict_downgraded", decision=decision, why=broken)
            decision, reason = "add", f"judge said {decision}, but {broken}: added"
        if decision == "drop":
            return [
                await self.store.write(
                    "drop", reason, (), candidate=candidate, session_id=session_id, judge=True
                )
            ]
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
        now = self.store.clock()
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
            evidence=tuple(dict.fromkeys(candidate.evidence)),
            valid_from=now,
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
            await self.store.write(
                "add", reason, (fact,), candidate=candidate, session_id=session_id,
                judge=judge, vectors={fact.id: vector},
            )
        ]  # fmt: skip

    def _recur(
        self, fact: Fact, candidate: MemoryCandidate, session_id: str | None, *, important: bool
    ) -> Fact:
        new_session = session_id is not None and session_id not in fact.sessions
        tier = fact.tier
        if important or (
            new_session and fact.count + 1 >= self.store.config.promote_after_sessions
        ):
            tier = "L2"
        return msgspec.structs.replace(
            fact,
            count=fact.count + 1 if new_session else fact.count,
            sessions=(*fact.sessions, session_id) if new_session and session_id else fact.sessions,
            last_seen=self.store.clock(),
            confidence=max(fact.confidence, candidate.confidence),
            sources=(*fact.sources, candidate.id),
            evidence=_union(fact.evidence, candidate.evidence),
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
            await self.store.write(
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
        return [await self.store.write("promote", why, (after,), session_id=session_id)]

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
        (vector,) = await self.store.embedder.embed([text])
        decisions = [
            await self.store.write(
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
            old,
            status="superseded",
            superseded_by=new.id,
            valid_to=new.valid_from,
            version=old.version + 1,
        )
        return [
            await self.store.write(
                "supersede", reason, (retired, new), candidate=candidate, session_id=session_id,
                judge=judge, vectors={new.id: vector},
            )
        ]  # fmt: skip
