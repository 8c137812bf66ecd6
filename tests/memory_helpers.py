"""Reading ``LongTermMemory.search`` results in tests."""

from __future__ import annotations

from typing import assert_never

from xai.memory import Fact, MemoryHit, ScoredEpisode, ScoredFact


def fact_of(hit: MemoryHit) -> Fact:
    """The fact of a hit that must be a fact."""
    assert isinstance(hit, ScoredFact), f"expected a fact, got {hit!r}"
    return hit.fact


def text_of(hit: MemoryHit) -> str:
    """What a hit says, fact or episode."""
    if isinstance(hit, ScoredFact):
        return hit.fact.text
    if isinstance(hit, ScoredEpisode):
        return hit.episode.text
    assert_never(hit)
