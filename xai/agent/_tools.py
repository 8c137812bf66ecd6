"""Tools an Agent hands to its Sessions."""

from __future__ import annotations

import datetime as dt
from typing import Any, assert_never

from xai.memory import LongTermMemory, MemoryHit, ScoredEpisode, ScoredFact
from xai.tools import Tool

__all__ = ["memory_search_tool", "render_hit"]


def memory_search_tool(memory: LongTermMemory) -> Tool:
    """``search_memory``: the model looks things up in the Agent's long-term memory.

    (A Session never reads the store itself; this tool is the Agent's.)
    """

    async def search_memory(query: str, k: int = 5, history: bool = False) -> list[dict[str, Any]]:
        """Search what you remember about the user and earlier conversations: facts you
        learned, and things said (by the user or by you) with who said them and when.
        Only what still holds, unless you ask for history.

        Args:
            query: What to look for, in a few words.
            k: How many results to return (1-20).
            history: Also what no longer holds (things said that were since replaced,
                marked with when they stopped holding).
        """
        hits = await memory.search(query, max(1, min(k, 20)), current_only=not history)
        return [render_hit(hit) for hit in hits]

    return Tool(search_memory)


def _day(at: float) -> str:
    return dt.datetime.fromtimestamp(at, dt.UTC).strftime("%Y-%m-%d %H:%M UTC")


def render_hit(hit: MemoryHit) -> dict[str, Any]:
    """One search result as the model reads it: a fact, or something said (who, when)."""
    if isinstance(hit, ScoredFact):
        fact = hit.fact
        return {
            "fact": fact.text,
            "stable": fact.tier == "L2",
            "times_seen": fact.count,
            "learned": _day(fact.first_seen),
            "relevance": round(hit.score, 3),
        }
    if isinstance(hit, ScoredEpisode):
        episode = hit.episode
        return {
            "said": episode.text,
            "by": "you (the assistant)" if episode.origin == "assistant" else episode.speaker,
            "when": _day(episode.at),
            "conversation": episode.session_id,
            "relevance": round(hit.score, 3),
            **({} if hit.valid_to is None else {"no_longer_holds_since": _day(hit.valid_to)}),
        }
    assert_never(hit)
