"""Which episodes still hold: an episode whose facts were all superseded is stale.

A fact points at the episodes it was drawn from (``Fact.evidence``). When every fact
drawn from an episode is retired and at least one of them was superseded, what the
episode said no longer holds: it is stale from the latest ``valid_to`` of those
facts, and the facts that replaced them (followed to the one active now) say what
holds instead. A search marks such an episode (``ScoredEpisode.valid_to``,
``superseded_by``) and ranks it below what replaced it (``current_first``); with
``current_only`` it is left out. Facts carry their own validity (``Fact.valid_to``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import msgspec

from xai.memory._types import Fact, MemoryHit, ScoredEpisode, ScoredFact
from xai.messages import Episode

__all__ = ["EpisodeValidity", "current_first"]


class _Stale(msgspec.Struct, frozen=True):
    valid_to: float
    successors: tuple[str, ...]
    """The active facts that replaced the episode's facts, in order."""


class EpisodeValidity:
    """The stale and the withdrawn episodes of a set of facts (made again when they change)."""

    __slots__ = ("_facts", "stale", "withdrawn")

    def __init__(self, facts: Mapping[str, Fact]) -> None:
        self._facts = facts
        cited: dict[str, list[Fact]] = {}
        for fact in facts.values():
            for episode_id in fact.evidence:
                cited.setdefault(episode_id, []).append(fact)
        self.withdrawn = frozenset(
            e
            for f in facts.values()
            if f.status == "forgotten" and f.forget_scope in ("evidence", "erase")
            for e in f.evidence
        )
        """Episodes forgotten with their fact (scope ``evidence`` or ``erase``): never found."""
        self.stale: dict[str, _Stale] = {}
        for episode_id, drawn in cited.items():
            if any(f.status == "active" for f in drawn):
                continue
            replaced = [f for f in drawn if f.status == "superseded" and f.superseded_by]
            if not replaced:
                continue  # forgotten or decayed: not a change of value
            successors = tuple(dict.fromkeys(self._current(f) for f in replaced))
            valid_to = max(f.valid_to or f.last_seen for f in replaced)
            self.stale[episode_id] = _Stale(valid_to, tuple(s for s in successors if s))

    def _current(self, fact: Fact) -> str:
        """The fact that holds now in place of ``fact`` (a chain of supersessions followed)."""
        seen = {fact.id}
        while fact.superseded_by and fact.superseded_by not in seen:
            nxt = self._facts.get(fact.superseded_by)
            if nxt is None:
                break
            seen.add(nxt.id)
            fact = nxt
        return fact.id if fact.status == "active" else ""

    def successor_episodes(self, episode_id: str) -> list[str]:
        """The episodes the replacing facts were drawn from (current ones), in order."""
        stale = self.stale.get(episode_id)
        if stale is None:
            return []
        out: list[str] = []
        for fact_id in stale.successors:
            fact = self._facts.get(fact_id)
            if fact is not None:
                out.extend(
                    e
                    for e in fact.evidence
                    if e not in self.stale and e not in self.withdrawn and e not in out
                )
        return out

    def mark(self, hit: MemoryHit) -> MemoryHit:
        if isinstance(hit, ScoredEpisode) and (stale := self.stale.get(hit.episode.id)):
            return msgspec.structs.replace(
                hit, valid_to=stale.valid_to, superseded_by=stale.successors
            )
        return hit


def _id(hit: MemoryHit) -> str:
    return hit.fact.id if isinstance(hit, ScoredFact) else hit.episode.id


def current_first(
    hits: Sequence[MemoryHit],
    validity: EpisodeValidity,
    k: int,
    *,
    current_only: bool,
    episode: Callable[[str], Episode | None],
    score: Callable[[str], float],
) -> list[MemoryHit]:
    """``hits`` (best first, deeper than ``k``) marked, with every stale episode moved
    below what replaced it: below its successor where that is among the hits, else after the successor's episode brought in at its place (``score``
    gives that one's cosine). The first ``k``; stale ones left out if ``current_only``.
    A successor is a replacing fact or an episode it was drawn from."""
    marked = [validity.mark(h) for h in hits]
    if current_only:
        return [h for h in marked if not (isinstance(h, ScoredEpisode) and not h.current)][:k]
    later = {_id(h) for h in marked}
    out: list[MemoryHit] = []
    placed: set[str] = set()
    waiting: dict[str, list[MemoryHit]] = {}

    def place(hit: MemoryHit) -> None:
        if _id(hit) in placed:
            return
        out.append(hit)
        placed.add(_id(hit))
        for held in waiting.pop(_id(hit), []):
            place(held)

    for hit in marked:
        later.discard(_id(hit))
        if not isinstance(hit, ScoredEpisode) or hit.current:
            place(hit)
            continue
        # Below the replacing fact or the episode it was drawn from (the search folds an
        # episode into the fact drawn from it: either one says what holds now).
        successors = [*hit.superseded_by, *validity.successor_episodes(hit.episode.id)]
        if any(s in placed for s in successors):
            place(hit)
            continue
        coming = next((s for s in successors if s in later), None)
        if coming is not None:
            waiting.setdefault(coming, []).append(hit)
            continue
        for successor_id in validity.successor_episodes(hit.episode.id)[:1]:
            found = episode(successor_id)
            if found is not None:
                place(ScoredEpisode(found, score(successor_id)))
        place(hit)
    for held in waiting.values():  # (a successor id that never came: kept, last)
        for hit in held:
            place(hit)
    return out[:k]
