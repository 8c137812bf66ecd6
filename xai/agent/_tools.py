"""Tools an Agent hands to its Sessions."""

from __future__ import annotations

from typing import Any

from xai.memory import LongTermMemory
from xai.tools import Tool

__all__ = ["memory_search_tool"]


def memory_search_tool(memory: LongTermMemory) -> Tool:
    """``search_memory``: the model looks things up in the Agent's long-term memory.

    (A Session never reads the store itself; this tool is the Agent's.)
    """

    async def search_memory(query: str, k: int = 5) -> list[dict[str, Any]]:
        """Search what you remember about the user and earlier conversations.

        Args:
            query: What to look for, in a few words.
            k: How many facts to return (1-20).
        """
        hits = await memory.search(query, max(1, min(k, 20)))
        return [
            {
                "fact": hit.fact.text,
                "stable": hit.fact.tier == "L2",
                "times_seen": hit.fact.count,
                "relevance": round(hit.score, 3),
            }
            for hit in hits
        ]

    return Tool(search_memory)
