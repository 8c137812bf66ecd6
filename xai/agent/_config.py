"""How an Agent is configured (and its memory made from that), and what its close reports."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import msgspec

from xai.memory import Embedder, IndexStore, LongTermMemory, MemoryConfig, default_embedder
from xai.mood import MoodConfig
from xai.providers import Provider
from xai.query import QueryConfig
from xai.session import SessionConfig

__all__ = [
    "AGENT_TURN_MAX_TOKENS",
    "DEFAULT_INSTRUCTIONS",
    "AgentClosed",
    "AgentConfig",
    "OwnEmbedder",
    "make_memory",
    "with_turn_cap",
]

DEFAULT_INSTRUCTIONS = "Help the user. Use what you remember when it is relevant."

AGENT_TURN_MAX_TOKENS = 4_096
"""Output tokens per model request of an Agent's turn, by default. A model that runs away
(a small one behind llama.cpp wrote 16k characters for 400 s) is cut off there, ending the
turn as ``length``; the Session's own requests have caps of their own (``SessionConfig``
``extraction_max_tokens``, ``summary_max_tokens``; ``MemoryConfig.judge_max_tokens``)."""


class AgentConfig(msgspec.Struct, frozen=True, kw_only=True):
    """How an Agent runs its Sessions and its memory."""

    session: SessionConfig = SessionConfig(
        query=QueryConfig(max_tokens=AGENT_TURN_MAX_TOKENS), extract_memory=True, delegation=True
    )
    """The configuration of every Session it opens (extraction on: the Agent learns; each
    request of a turn capped at ``AGENT_TURN_MAX_TOKENS`` output tokens, also when the
    config given leaves ``query.max_tokens`` unset: pass a number to choose another cap)."""
    memory: MemoryConfig = MemoryConfig()
    memory_tool: bool = True
    """Give each Session's model a ``search_memory`` tool over the Agent's memory."""
    resume_sessions: bool = True
    """On start, reopen every Session whose journal did not end with a close."""
    sync_ledger: bool = True
    """fsync each memory decision (a power cut loses none)."""
    event_buffer: int = 10_000
    mood: MoodConfig = MoodConfig()
    """The user's and the Agent's mood across Sessions (``MoodConfig(enabled=False)``: off)."""

    def __post_init__(self) -> None:
        msgspec.structs.force_setattr(self, "session", with_turn_cap(self.session))


def with_turn_cap(config: SessionConfig) -> SessionConfig:
    """``config`` with ``AGENT_TURN_MAX_TOKENS`` as its turn cap when it names none.

    Every Session an Agent runs goes through here (its own config and one passed to
    ``open_session``), so no construction site can forget the cap."""
    if config.query.max_tokens is not None:
        return config
    query = msgspec.structs.replace(config.query, max_tokens=AGENT_TURN_MAX_TOKENS)
    return msgspec.structs.replace(config, query=query)


class AgentClosed(msgspec.Struct, frozen=True, kw_only=True):
    """What ``Agent.close`` left undone: the Sessions whose memory candidates are still
    undecided (their adjudication did not finish within ``SessionConfig.hook_timeout``).
    Their candidates wait in the journals; the Agent's next start decides them."""

    undecided: int = 0
    """Candidates left undecided."""
    sessions: tuple[str, ...] = ()
    """The Sessions that hold them (each recorded ``closing``, not closed)."""

    @property
    def complete(self) -> bool:
        """Everything queued and recovered was decided."""
        return self.undecided == 0


def make_memory(
    directory: Path,
    agent_id: str,
    config: AgentConfig,
    clock: Callable[[], float],
    embedder: Embedder | None,
    judge: Provider,
    store: IndexStore | None,
) -> LongTermMemory:
    """The Agent's memory under ``directory/memory``: the embedder given (else the default
    one), its collections named ``agent_id``."""
    return LongTermMemory(
        directory / "memory",
        embedder=embedder if embedder is not None else default_embedder(),
        judge=judge,
        config=config.memory,
        clock=clock,
        sync=config.sync_ledger,
        store=store,
        namespace=agent_id,
        lazy_index=True,  # an idle Agent starts no chromadb client
    )


class OwnEmbedder:
    """The embedder the Agent made itself (an endpoint client) is closed when it stops and
    made again when it runs again; one it was given is never closed."""

    __slots__ = ("closed", "mine")

    def __init__(self, *, mine: bool) -> None:
        self.mine = mine
        self.closed = False

    def renew(self, memory: LongTermMemory) -> None:
        if self.mine and self.closed:  # run again after a stop
            memory.embedder = default_embedder()
            self.closed = False

    async def close(self, memory: LongTermMemory) -> None:
        if not self.mine or self.closed:
            return
        self.closed = True
        aclose = getattr(memory.embedder, "aclose", None)
        if aclose is not None:
            await aclose()
