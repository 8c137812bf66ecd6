"""The memory prefix: the facts a new Session starts with, dated, grouped by topic, in budget.

Stable (L2) facts come before tentative (L1) ones. Within a tier, facts relevant
to the purpose come first (by cosine similarity, then recurrence, then
strength), then the rest by recurrence then strength. Without a purpose, by
recurrence then strength. The chosen facts are then grouped by topic (the
fact's kind: preferences, facts, commitments, events) under a tier title, each
line dated with the day the fact was first learned.

Cost: the order by recurrence and strength is kept per tier and rebuilt only
after a write (decay does not change it: a fact's strength is its confidence
halved per half-life since last seen, so at any one moment it sorts as
``log2(confidence) + last_seen / half_life``); a prefix then reads only as many
facts as its budget takes, not every fact.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Final

from xai.memory._dates import day_of
from xai.memory._types import Fact, Tier

__all__ = ["PrefixOrder", "compose_prefix", "relevant_first", "render_groups"]

_DAY = 86_400.0
STABLE_TITLE: Final = "Stable facts:"
TENTATIVE_TITLE: Final = "Tentative (may be outdated):"
_TOPICS: Final = {
    "preference": "preferences",
    "fact": "facts",
    "commitment": "commitments",
    "event": "events",
    "other": "other",
}


class PrefixOrder:
    """Active facts of each tier by recurrence, then strength (best first)."""

    def __init__(self, facts: Iterable[Fact], half_life_days: float) -> None:
        half_life = max(half_life_days, 1e-9) * _DAY

        def key(fact: Fact) -> tuple[int, float]:
            if fact.tier == "L2":  # L2 does not decay
                return (fact.count, math.log2(max(fact.confidence, 1e-12)))
            return (fact.count, math.log2(max(fact.confidence, 1e-12)) + fact.last_seen / half_life)

        self.tiers: dict[Tier, list[Fact]] = {"L1": [], "L2": []}
        for fact in facts:
            if fact.status == "active":
                self.tiers[fact.tier].append(fact)
        for group in self.tiers.values():
            group.sort(key=key, reverse=True)
        self._by_text: dict[str, list[str]] | None = None
        self._lengths: list[int] = []

    def shown(self, text: str) -> list[str]:
        """The ids of the facts (of either tier) whose ``- <fact text>`` occurs in ``text``:
        the same as testing ``f"- {fact.text}" in text`` for each fact, looked up instead
        at each place ``- `` occurs (a test per fact cost 0.4 s a prefix at 100k facts).
        The facts by text are indexed on first use, for as long as this order lasts."""
        if self._by_text is None:
            by_text: dict[str, list[str]] = {}
            for group in self.tiers.values():
                for fact in group:
                    by_text.setdefault(fact.text, []).append(fact.id)
            self._by_text = by_text
            self._lengths = sorted({len(t) for t in by_text})
        found: dict[str, None] = {}
        at = text.find("- ")
        while at >= 0:
            rest = len(text) - at - 2
            for length in self._lengths:
                if length > rest:
                    break
                ids = self._by_text.get(text[at + 2 : at + 2 + length])
                if ids:
                    found.update(dict.fromkeys(ids))
            at = text.find("- ", at + 1)
        return list(found)


def relevant_first(
    ordered: list[Fact],
    relevant: Iterable[Fact],
    rank: Callable[[Fact], tuple[float, float, float]],
    *,
    rest: bool = True,
) -> Iterator[Fact]:
    """``relevant`` (facts of this tier scored against the purpose), best by ``rank``
    first; then, when ``rest``, the others of ``ordered`` in their order (read lazily:
    only as far as the budget takes)."""
    first = sorted(relevant, key=rank, reverse=True)
    yield from first
    if rest:
        seen = {f.id for f in first}
        yield from (f for f in ordered if f.id not in seen)


def _line(fact: Fact) -> str:
    return f"- {fact.text} ({day_of(fact.first_seen).isoformat()})"


def _cost(text: str) -> int:
    return len(text) // 4 + 1


def compose_prefix(
    order: PrefixOrder,
    facts: Mapping[str, Fact],
    relevance: Mapping[str, float],
    rank: Callable[[Fact], tuple[float, float, float]],
    floor: float,
    budget: int,
) -> tuple[str, int, int]:
    """The prefix: L2 facts relevant to the purpose (``relevance``: cosine by fact id), then
    the other L2 facts; L1 facts at least ``floor`` relevant (all of them, without a
    purpose). Returns the text, the tokens used and the facts shown."""
    scored = [f for i in relevance if (f := facts.get(i)) is not None and f.status == "active"]
    stable = relevant_first(order.tiers["L2"], (f for f in scored if f.tier == "L2"), rank)
    tentative = relevant_first(
        order.tiers["L1"],
        (f for f in scored if f.tier == "L1" and relevance[f.id] >= floor),
        rank,
        rest=not relevance,
    )
    return render_groups(((STABLE_TITLE, stable), (TENTATIVE_TITLE, tentative)), budget)


def render_groups(
    groups: Iterable[tuple[str, Iterable[Fact]]], budget: int
) -> tuple[str, int, int]:
    """The prefix text of ``(title, facts in order)`` groups, spending at most ``budget``
    tokens (about four characters each): the text, the tokens used and the facts shown."""
    lines: list[str] = []
    used = shown = 0
    for title, facts in groups:
        chosen: dict[str, list[str]] = {}
        headed = _cost(title)
        for fact in facts:
            line = _line(fact)
            topic = _TOPICS[fact.kind]
            cost = _cost(line) + (headed if not chosen else 0)
            if chosen and topic not in chosen:  # topics get headings from the second on
                cost += _cost(topic) + (_cost(next(iter(chosen))) if len(chosen) == 1 else 0)
            if used + cost > budget:
                break
            chosen.setdefault(topic, []).append(line)
            used += cost
            shown += 1
        if chosen:
            lines.append(title)
            if len(chosen) == 1:
                lines.extend(next(iter(chosen.values())))
            else:
                for topic, topic_lines in chosen.items():
                    lines.append(f"{topic.capitalize()}:")
                    lines.extend(topic_lines)
    return "\n".join(lines), used, shown
