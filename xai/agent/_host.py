"""Reaching Agents by id: the host, the seam where Agents will move to other processes.

Applications talk to a host with plain values (msgspec structs and strings),
never with live objects, so the same calls can later cross a process boundary
(Ray actors, with Chroma in server mode) without the Agent's API changing.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import anyio.abc
import msgspec

from xai.agent._agent import Agent, AgentConfig
from xai.exceptions import ConfigurationError, SessionClosedError
from xai.memory import Embedder, Fact, MemoryHit, default_embedder
from xai.messages import CloseReason, Origin, TurnOutcome, Usage
from xai.providers import Provider

__all__ = ["AgentHost", "OpenSession", "SessionInfo"]

_AGENT_ID = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")


class OpenSession(msgspec.Struct, frozen=True, kw_only=True):
    """A request to open a Session on an Agent."""

    purpose: str | None = None
    instructions: str | None = None
    prefix_tokens: int | None = None
    origin: Origin = "user"


class SessionInfo(msgspec.Struct, frozen=True, kw_only=True):
    agent_id: str
    session_id: str
    parent_id: str | None
    state: str
    turns: int
    usage: Usage
    memory_prefix: str = ""


class AgentHost:
    """Starts Agents on demand under ``root/<agent_id>`` and routes calls to them.

    ``provider_for(agent_id)`` gives each Agent its provider (one shared
    provider is fine). Every Agent gets the one ``embedder``: the caller's if
    given (the caller closes it), else one the host makes when it starts and
    closes when it stops. Use as ``async with AgentHost(...) as host``.
    """

    def __init__(
        self,
        root: str | Path,
        provider_for: Callable[[str], Provider],
        *,
        embedder: Embedder | None = None,
        config: AgentConfig | None = None,
    ) -> None:
        self.root = Path(root)
        self._provider_for = provider_for
        self._embedder = embedder
        self._made_embedder: Embedder | None = None
        self._config = config
        self._agents: dict[str, Agent] = {}
        self._group: anyio.abc.TaskGroup | None = None
        self._lock: anyio.Lock | None = None

    async def __aenter__(self) -> AgentHost:
        self._lock = anyio.Lock()
        if self._embedder is None:
            self._made_embedder = default_embedder()
        self._group = anyio.create_task_group()
        await self._group.__aenter__()
        return self

    async def __aexit__(self, *exc_info: Any) -> bool | None:
        assert self._group is not None
        with anyio.CancelScope(shield=True):
            await self.close()
        group, self._group = self._group, None
        try:
            return await group.__aexit__(*exc_info)
        finally:
            made, self._made_embedder = self._made_embedder, None
            aclose = getattr(made, "aclose", None)
            if aclose is not None:  # an endpoint client the host made: its to close
                with anyio.CancelScope(shield=True):
                    await aclose()

    async def agent(self, agent_id: str) -> Agent:
        """The running Agent ``agent_id``, started (from its directory) if needed."""
        if not _AGENT_ID.match(agent_id):
            raise ConfigurationError(f"agent id {agent_id!r}: use 1-64 of letters, digits, _ . -")
        if self._group is None or self._lock is None:
            raise SessionClosedError("the host is not running: use `async with AgentHost(...)`")
        async with self._lock:
            agent = self._agents.get(agent_id)
            if agent is None:
                agent = Agent(
                    self.root / agent_id,
                    self._provider_for(agent_id),
                    agent_id=agent_id,
                    embedder=self._embedder or self._made_embedder,
                    config=self._config,
                )
                await self._group.start(agent.run)
                self._agents[agent_id] = agent
            return agent

    @property
    def agent_ids(self) -> list[str]:
        return sorted(self._agents)

    def _info(self, agent: Agent, session_id: str) -> SessionInfo:
        session = agent.session(session_id)
        return SessionInfo(
            agent_id=agent.id,
            session_id=session.id,
            parent_id=session.parent_id,
            state=session.state,
            turns=session.turns,
            usage=session.usage,
            memory_prefix=session.system.memory_prefix,
        )

    async def open_session(self, agent_id: str, request: OpenSession) -> SessionInfo:
        agent = await self.agent(agent_id)
        options: dict[str, Any] = {"prefix_tokens": request.prefix_tokens, "origin": request.origin}
        if request.instructions is not None:
            options["instructions"] = request.instructions
        session = await agent.open_session(request.purpose, **options)
        return self._info(agent, session.id)

    async def send(
        self, agent_id: str, session_id: str, text: str, *, origin: Origin = "user"
    ) -> TurnOutcome:
        agent = await self.agent(agent_id)
        return await agent.session(session_id).send(text, origin=origin).result()

    async def session_info(self, agent_id: str, session_id: str) -> SessionInfo:
        return self._info(await self.agent(agent_id), session_id)

    async def close_session(
        self, agent_id: str, session_id: str, reason: CloseReason = "closed"
    ) -> None:
        agent = await self.agent(agent_id)
        await agent.session(session_id).close(reason)

    async def search_memory(self, agent_id: str, query: str, k: int = 5) -> list[MemoryHit]:
        agent = await self.agent(agent_id)
        return await agent.memory.search(query, k)

    async def facts(self, agent_id: str) -> list[Fact]:
        return (await self.agent(agent_id)).memory.facts()

    async def close_agent(self, agent_id: str) -> None:
        """Stop one Agent (its Sessions close first); the next call for it starts it again."""
        if self._lock is None:
            return
        async with self._lock:
            agent = self._agents.pop(agent_id, None)
        if agent is not None:
            await agent.close()

    async def close(self) -> None:
        """Close every Agent (each closes its Sessions first)."""
        agents, self._agents = list(self._agents.values()), {}
        async with anyio.create_task_group() as group:
            for agent in agents:
                group.start_soon(agent.close)
