"""The runner's long-term memory, through Agents (rule 7: only an Agent writes memory).

A memory folder belongs to an Agent whose directory is the folder's parent:
``$XAI_HOME/runner`` for the global memory (``runner/memory/``), and
``$XAI_HOME/runner/conversations/ID`` for a conversation's own. A run that saves
memory hands its Session to that Agent (``adopt``): the Agent adjudicates the
Session's candidates as they come and when it closes, by the rules (no judge
model). Reading the global memory into a prompt goes through its Agent too.

``RunnerMemory`` holds the Agents of one ``run_input`` or ``run_batch`` call:
the global Agent is shared by the call's runs, a conversation's Agent lives for
its run. Nothing is kept at module level, so every event loop (asyncio, trio,
one ``anyio.run`` after another) gets its own.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import anyio.abc

from xai.agent import Agent, AgentConfig
from xai.exceptions import ConfigurationError
from xai.memory import Embedder, MemoryConfig, default_embedder
from xai.providers import ProviderEvent, ProviderRequest

__all__ = ["RunnerMemory", "memory_agent_dir"]

AGENT_CONFIG = AgentConfig(
    memory=MemoryConfig(use_judge=False),
    memory_tool=False,
    resume_sessions=False,  # the runner's Sessions live in its checkpoints, not here
)


def memory_agent_dir(home: Path, scope: str, conversation_id: str) -> Path:
    """The directory of the Agent owning the ``global`` or ``conversation`` memory."""
    runner = home / "runner"
    return runner if scope == "global" else runner / "conversations" / conversation_id


class _NoModel:
    """The provider of the runner's Agents: they decide by the rules and never ask a model."""

    model = "none"

    def stream(self, request: ProviderRequest) -> AsyncIterator[ProviderEvent]:
        raise ConfigurationError("the runner's memory adjudicates by rules; it has no model")

    async def aclose(self) -> None:
        return None


class RunnerMemory:
    """The Agents owning the memories of one run or batch. ``async with RunnerMemory(home)``."""

    def __init__(self, home: Path) -> None:
        self.home = home
        self._stack: AsyncExitStack | None = None
        self._group: anyio.abc.TaskGroup | None = None
        self._lock: anyio.Lock | None = None
        self._shared: dict[Path, Agent] = {}

    async def __aenter__(self) -> RunnerMemory:
        self._lock = anyio.Lock()  # made here: a lock belongs to the loop that runs it
        self._stack = AsyncExitStack()
        self._group = await self._stack.enter_async_context(anyio.create_task_group())
        return self

    async def __aexit__(self, *exc_info: Any) -> None:
        assert self._stack is not None
        stack, self._stack = self._stack, None
        with anyio.CancelScope(shield=True):
            agents, self._shared = list(self._shared.values()), {}
            for agent in agents:
                await agent.close()
        # The Agents have stopped, so the task group ends at once. It is left as if nothing
        # happened: what the block raised goes on as itself, not inside an ExceptionGroup.
        await stack.aclose()

    def _require(self) -> tuple[anyio.abc.TaskGroup, anyio.Lock, AsyncExitStack]:
        if self._group is None or self._lock is None or self._stack is None:
            raise ConfigurationError("RunnerMemory is not open: use `async with RunnerMemory()`")
        return self._group, self._lock, self._stack

    async def _embedder(self, stack: AsyncExitStack) -> Embedder:
        """An embedder for one Agent, closed (if it holds a client) when its owner ends."""
        embedder = await anyio.to_thread.run_sync(default_embedder)
        aclose = getattr(embedder, "aclose", None)
        if aclose is not None:
            stack.push_async_callback(aclose)
        return embedder

    async def _build(self, directory: Path, stack: AsyncExitStack) -> Agent:
        embedder = await self._embedder(stack)

        def build() -> Agent:  # reads and writes agent.json: not on the event loop
            return Agent(directory, _NoModel(), embedder=embedder, config=AGENT_CONFIG)

        return await anyio.to_thread.run_sync(build)

    async def shared(self, directory: Path) -> Agent:
        """The Agent of ``directory``, started on first use; it lives until this closes."""
        group, lock, stack = self._require()
        async with lock:
            agent = self._shared.get(directory)
            if agent is None:
                agent = await self._build(directory, stack)
                await group.start(agent.run)
                self._shared[directory] = agent
            return agent

    @asynccontextmanager
    async def private(self, directory: Path) -> AsyncIterator[Agent]:
        """An Agent of ``directory`` for the block only (a conversation's own memory)."""
        async with AsyncExitStack() as stack:
            agent = await self._build(directory, stack)
            async with agent:
                yield agent
