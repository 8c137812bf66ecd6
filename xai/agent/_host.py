"""Reaching Agents by id: the host, the seam where Agents move to other processes.

Applications talk to a host with plain values (msgspec structs and strings), never with
live objects: every operation is a request of the host API (``_host_api``), run by
``call``/``stream`` through the one dispatch (``_host_dispatch``) that Ray host actors and
the HTTP gateway use too.
"""

from __future__ import annotations

import functools
import shutil
from collections import Counter, OrderedDict
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Coroutine, Iterable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import Any, TypeVar

import anyio
import anyio.abc
import msgspec
from anyio import AsyncContextManagerMixin

from xai.agent._agent import Agent, AgentConfig
from xai.agent._clock import Clock, SystemClock
from xai.agent._host_api import (
    GetFacts,
    GetSession,
    HostCall,
    HostStream,
    OpenSession,
    SearchMemory,
)
from xai.agent._host_dispatch import Dispatcher
from xai.agent._host_lookup import open_session_of
from xai.agent._host_streams import HostStreams
from xai.agent._host_views import SessionInfo, session_info
from xai.agent._host_wakeups import HostWakeups
from xai.agent._ids import check_id, is_id
from xai.agent._streams import DEFAULT_REPLAY_EVENTS, SessionStream
from xai.events import SessionEvent
from xai.exceptions import (
    AgentBusyError,
    ConfigurationError,
    DiskFullError,
    IdempotencyKeyReusedError,
    SessionClosedError,
)
from xai.logs import get_logger
from xai.memory import Embedder, Fact, IndexStore, MemoryHit, default_embedder
from xai.messages import CloseReason, Origin, TurnOutcome, UserMessage
from xai.providers import Provider
from xai.session import JOURNAL_FILE, Session, SessionState
from xai.tools import Tool

__all__ = ["AgentHost"]

T = TypeVar("T")

_log = get_logger(__name__)

_ROOM = 1 << 20
"""Free bytes a full disk must have again before a Session it stopped is resumed."""
INDEX_DIR = ".index"
"""Under the host's root: the memory indexes of all its Agents (one chromadb store)."""


class AgentHost(AsyncContextManagerMixin):
    """Starts Agents on demand under ``root/<agent_id>`` and routes calls to them.

    ``provider_for(agent_id)`` gives each Agent its provider (one shared
    provider is fine); every Agent gets ``tools`` (each its own ``ToolSet`` of them).
    Every Agent gets the one ``embedder`` and the one ``index_store``: the caller's if
    given (the caller closes them), else ones the host makes when it starts and closes
    when it stops (the store: an embedded chromadb under ``root/.index``, each Agent's
    memory in collections named after its id, opened when first needed). So an idle
    Agent costs no chromadb client, thread or file of its own. Use as ``async with
    AgentHost(...) as host``. Agent ids are 1-64 letters, digits, ``_ . -``, not
    starting with ``.``.

    ``max_agents`` caps the Agents running at once: past it, the least recently
    used Agent that is idle (no host call for it in progress, no turn running in
    any of its Sessions) is suspended (``Agent.suspend``: its Sessions are not
    closed). ``idle_seconds`` suspends an Agent no call has used for that long
    (by ``clock``). Either way the next call for it starts it again from its
    directory, its open Sessions reopened with their ids, so callers never see
    an eviction. Every call touches the Agent it names. When every running Agent
    is busy the cap is exceeded until one is idle again (a turn is never
    interrupted or waited for).

    Wake-ups fire for every Agent under ``root`` that ``owns(agent_id)`` (default: all),
    running or not: one timer task knows when each Agent that is not running is next due
    (from its ``schedules.json``) and starts it then (docs/scheduler.md, "Agents on a
    host"). Agents share the host's ``clock``.

    ``events`` streams a Session's events with the host's own sequence numbers, kept
    across suspends and restarts: the last ``replay_events`` of each streamed Session stay
    replayable for readers that reconnect, from its events log
    (``<agent>/streams/<session>.jsonl``, see ``SessionStream``).

    Every operation of the host API is ``await host.call(request)`` (``host.stream`` for
    the event streams); the methods below are the common ones spelled as calls.
    """

    def __init__(
        self,
        root: str | Path,
        provider_for: Callable[[str], Provider],
        *,
        embedder: Embedder | None = None,
        config: AgentConfig | None = None,
        max_agents: int | None = None,
        idle_seconds: float | None = None,
        clock: Clock | None = None,
        replay_events: int = DEFAULT_REPLAY_EVENTS,
        tools: Iterable[Tool | Callable[..., Any]] = (),
        index_store: IndexStore | None = None,
        owns: Callable[[str], bool] | None = None,
    ) -> None:
        if max_agents is not None and max_agents < 1:
            raise ConfigurationError("max_agents: at least 1 (or None: no cap)")
        if idle_seconds is not None and idle_seconds <= 0:
            raise ConfigurationError("idle_seconds: more than 0 (or None: never)")
        if replay_events < 1:
            raise ConfigurationError("replay_events: at least 1")
        self.replay_events = replay_events
        self.streams = HostStreams(Path(root), replay_events, self._start_soon)
        """The event streams of the Sessions (``events``) the host keeps."""
        self._dispatch = Dispatcher(self)
        self.root = Path(root)
        self.max_agents = max_agents
        self.idle_seconds = idle_seconds
        self.clock: Clock = clock if clock is not None else SystemClock()
        self._provider_for = provider_for
        self._embedder = embedder
        self._made_embedder: Embedder | None = None
        self._index_store = index_store
        self._made_store: IndexStore | None = None
        self._config = config
        self._tools = tuple(tools)
        self._agents: OrderedDict[str, Agent] = OrderedDict()  # least recently used first
        self._used: dict[str, float] = {}  # when each was last used (by the clock)
        self._calls: Counter[str] = Counter()  # host calls in progress, per Agent
        self._touched: anyio.Event | None = None
        self.evictions = 0
        """Agents suspended by the cap or the idle timeout since the host started."""
        self._group: anyio.abc.TaskGroup | None = None
        self._lock: anyio.Lock | None = None
        self.wakeups = HostWakeups(
            self.root,
            self.clock,
            self.agent,
            lambda agent_id: is_id(agent_id) and (owns is None or owns(agent_id)),
        )
        """The timer that starts Agents whose wake-ups are due."""

    @asynccontextmanager
    async def __asynccontextmanager__(self) -> AsyncIterator[AgentHost]:
        """The host's tasks (wake-ups, the idle timer, its Agents) in a task group of its own;
        leaving closes every Agent (shielded), then what the host made for them."""
        self._lock = anyio.Lock()
        if self._embedder is None:
            self._made_embedder = default_embedder()
        if self._index_store is None:
            self._made_store = IndexStore.local(self.root / INDEX_DIR)  # started when needed
        try:
            async with anyio.create_task_group() as self._group:
                if self.idle_seconds is not None:
                    self._group.start_soon(self._suspend_idle_forever)
                await self._group.start(self.wakeups.run)
                try:
                    yield self
                finally:
                    self.wakeups.stop()  # (starts no Agent while they close)
                    with anyio.CancelScope(shield=True):
                        await self.close()
                    self._group.cancel_scope.cancel()  # the idle timer
        finally:
            self._group = None
            with anyio.CancelScope(shield=True):
                await self._let_go_of_made()

    async def _let_go_of_made(self) -> None:
        store, self._made_store = self._made_store, None
        if store is not None:
            await anyio.to_thread.run_sync(store.close)
        made, self._made_embedder = self._made_embedder, None
        aclose = getattr(made, "aclose", None)
        if aclose is not None:  # an endpoint client the host made: its to close
            await aclose()

    async def agent(self, agent_id: str) -> Agent:
        """The running Agent ``agent_id``, started (from its directory) if needed.

        The host may suspend it once this returns (the cap, the idle timeout): hold on to
        it only while you use it, or go through the host's calls, which keep it running
        while they run."""
        check_id("agent id", agent_id)
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
                    index_store=self._index_store or self._made_store,
                    config=self._config,
                    tools=self._tools,
                    clock=self.clock,
                )
                agent.scheduler.watched_since = self.wakeups.since_for(agent_id)
                # (before it starts: its reopened Sessions are streamed from their first event)
                agent.listen(functools.partial(self.streams.reopened, agent))
                await self._group.start(agent.run)
                self._agents[agent_id] = agent
                self.wakeups.started(agent_id)
                self._group.start_soon(self.streams.sweep, agent)
            self._touch(agent_id)
            if self.max_agents is not None and len(self._agents) > self.max_agents:
                await self._evict(self.max_agents, keep=agent_id)
            return agent

    def _start_soon(self, task: Callable[[], Coroutine[Any, Any, Any]]) -> None:
        assert self._group is not None
        self._group.start_soon(task)

    @asynccontextmanager
    async def _use(self, agent_id: str) -> AsyncIterator[Agent]:
        """The Agent, kept running (never evicted) until the block ends."""
        self._calls[agent_id] += 1
        try:
            yield await self.agent(agent_id)
        finally:
            self._calls[agent_id] -= 1
            if not self._calls[agent_id]:
                del self._calls[agent_id]
            if agent_id in self._agents:
                self._touch(agent_id)

    def using(self, agent_id: str) -> AbstractAsyncContextManager[Agent]:
        """``async with host.using(agent_id) as agent``: the running Agent, kept running
        (never suspended by the cap or the idle timeout) until the block ends. For calls
        the host has no method of its own for (its scheduler, its memory's ledger)."""
        return self._use(agent_id)

    def _touch(self, agent_id: str) -> None:
        self._agents.move_to_end(agent_id)
        self._used[agent_id] = self.clock.now()
        touched, self._touched = self._touched, None
        if touched is not None:
            touched.set()

    def _idle(self, agent_id: str, agent: Agent) -> bool:
        return (
            not self._calls[agent_id]
            and not agent.scheduler.busy
            and all(
                (s.idle or s.state is SessionState.WAITING) and not s.pending_inputs
                for s in agent.sessions.values()
            )
        )

    async def _evict(self, cap: int, *, keep: str | None = None) -> None:
        """Under the lock: suspend least recently used idle Agents until ``cap`` run."""
        for agent_id, agent in list(self._agents.items()):
            if len(self._agents) <= cap:
                return
            if agent_id != keep and self._idle(agent_id, agent):
                await self._suspend(agent_id, agent, "cap")

    async def _suspend(self, agent_id: str, agent: Agent, why: str) -> bool:
        del self._agents[agent_id]  # (not running from now on, for ``agent_ids`` too)
        used = self._used.pop(agent_id, None)
        streams = self.streams.of_agent(agent_id)
        for stream in streams:
            stream.flush()  # on disk before the Agent's lock is let go (another host may take it)
        try:
            await agent.suspend()
        except AgentBusyError:  # a turn began (a wake-up): it stays, as if just used
            self._agents[agent_id] = agent
            if used is not None:
                self._used[agent_id] = used
            self._touch(agent_id)
            return False
        for stream in streams:
            await stream.stop()  # sealed, nothing in memory; a reopen attaches it again
        self.evictions += 1
        _log.info("host.agent_suspended", agent_id=agent_id, why=why, running=len(self._agents))
        await self.wakeups.stopped(agent_id)
        return True

    async def _suspend_idle_forever(self) -> None:
        assert self.idle_seconds is not None and self._lock is not None
        while True:
            if not self._used:
                self._touched = anyio.Event()
                await self._touched.wait()
                continue
            await self.clock.sleep_until(min(self._used.values()) + self.idle_seconds)
            async with self._lock:
                cutoff = self.clock.now() - self.idle_seconds
                for agent_id, agent in list(self._agents.items()):
                    if self._used.get(agent_id, cutoff) > cutoff:
                        continue
                    if self._idle(agent_id, agent):
                        await self._suspend(agent_id, agent, "idle")
                    else:
                        self._touch(agent_id)  # busy now: idle from when it is done

    def has(self, agent_id: str) -> bool:
        """Whether the host has Agent ``agent_id``: running, or a directory under the root
        (``agent`` starts one it does not have; the host API's reads never do)."""
        if agent_id in self._agents:
            return True
        return is_id(agent_id) and (self.root / agent_id).is_dir()

    @property
    def agent_ids(self) -> list[str]:
        """The Agents running now (suspended ones are not: a call starts them again)."""
        return sorted(self._agents)

    async def call(self, request: HostCall[T]) -> T:
        """Run a request of the host API (``xai.agent.HostRequest``) and return its answer;
        a keyed write is run once per key (see its ``policy``)."""
        return await self._dispatch.call(request)

    async def stream(self, request: HostStream[T]) -> AsyncIterator[T]:
        """Open the stream a request asks for (``ReadEvents``, ``ReadAgentEvents``)."""
        return await self._dispatch.stream(request)

    async def open_session(self, agent_id: str, request: OpenSession) -> SessionInfo:
        """Open a Session; its events are streamed (``events``) from its first one."""
        options: dict[str, Any] = {"prefix_tokens": request.prefix_tokens, "origin": request.origin}
        if request.instructions is not None:
            options["instructions"] = request.instructions
        async with self._use(agent_id) as agent:
            session = await agent.open_session(request.purpose, **options)
            self.streams.of(agent_id, session)
            return session_info(agent, session.id)

    async def submit(
        self,
        agent_id: str,
        session_id: str,
        text: str,
        *,
        origin: Origin = "user",
        input_id: str | None = None,
    ) -> str:
        """Queue ``text`` as an input and return its id once it is accepted (on disk),
        without waiting for the turn: its events come through ``events``.

        ``input_id`` (the caller's id for the input) makes a repeated submit harmless: an
        input of that id the Session already has (waiting, run, or in its journal from
        before a restart) is not queued again, its id is returned
        (``IdempotencyKeyReusedError`` if it had another text)."""
        async with self._use(agent_id) as agent:
            try:
                session = self._session(agent, session_id)
            except DiskFullError:
                agent = await self._revive(agent_id, agent)
                session = self._session(agent, session_id)
            # (from before the turn: nothing is missed; it keeps the inputs the host accepted
            # while the Session is open, and goes once it has closed)
            sent = self.streams.of(agent_id, session).accepted
            if input_id is not None:
                known = sent.get(input_id)
                if known is None:
                    known = _input_text(session, input_id)
                if known is not None:
                    if known != text:
                        raise IdempotencyKeyReusedError(input_id)
                    _log.info("host.input_repeated", agent_id=agent_id, input_id=input_id)
                    return input_id
            message = UserMessage(content=text, origin=origin)
            if input_id is not None:
                message = msgspec.structs.replace(message, id=input_id)
            handle = session.send(message)
            assert handle.input is not None
            if input_id is not None:
                sent[input_id] = text
            return handle.input.id

    async def events(
        self, agent_id: str, session_id: str, after: int = 0
    ) -> AsyncGenerator[SessionEvent, None]:
        """The Session's events numbered above ``after`` (host numbers), then each new one,
        until it closes. Awaiting it checks first: ``SessionNotFoundError``,
        ``SessionClosedError`` (closed, and its stream no longer kept) and
        ``EventsExpiredError`` (the events after ``after`` are not kept, see
        ``SessionStream``) are raised before any event is read."""
        stream = await self.streams.find(agent_id, session_id)
        if stream is None or not (stream.closed or stream.attached):
            async with self._use(agent_id) as agent:  # (a start reattaches known streams)
                stream = self.streams.get(agent_id, session_id)
                if stream is None or not (stream.closed or stream.attached):
                    try:
                        session = self._session(agent, session_id)
                    except SessionClosedError:  # closed: its log may still be there
                        path = self.streams.log_path(agent_id, session_id)
                        if not path.is_file():
                            raise
                        journal = agent.directory / "sessions" / session_id / JOURNAL_FILE
                        stream = await SessionStream.of_closed(
                            session_id, path, self.replay_events, journal
                        )
                        self.streams.keep(agent_id, stream)
                    else:
                        stream = self.streams.of(agent_id, session)
        await stream.ready()  # (its log read)
        stream.check(after)  # refused before the first event, not in the middle
        return stream.since(after)

    async def _revive(self, agent_id: str, agent: Agent) -> Agent:
        """A Session of ``agent`` stopped on a full disk (``DiskFullError``, raised on): once
        its disk has room again, suspend the Agent and start it again from its directory,
        which resumes that Session from its journal (nothing acknowledged is lost)."""
        try:
            free = await anyio.to_thread.run_sync(shutil.disk_usage, agent.directory)
        except OSError:
            raise DiskFullError(str(agent.directory)) from None
        if free.free < _ROOM:
            raise DiskFullError(str(agent.directory))
        assert self._lock is not None
        async with self._lock:
            if self._agents.get(agent_id) is agent and not await self._suspend(
                agent_id, agent, "disk_full"
            ):
                raise DiskFullError(str(agent.directory))  # busy: a later call tries again
        _log.info("host.agent_revived", agent_id=agent_id, free_bytes=free.free)
        return await self.agent(agent_id)

    def _session(self, agent: Agent, session_id: str) -> Session:
        return open_session_of(agent, session_id)

    async def send(
        self, agent_id: str, session_id: str, text: str, *, origin: Origin = "user"
    ) -> TurnOutcome:
        async with self._use(agent_id) as agent:
            return await agent.session(session_id).send(text, origin=origin).result()

    async def session_info(self, agent_id: str, session_id: str) -> SessionInfo:
        return await self.call(GetSession(agent_id=agent_id, session_id=session_id))

    async def close_session(
        self, agent_id: str, session_id: str, reason: CloseReason = "closed"
    ) -> None:
        async with self._use(agent_id) as agent:
            await self._session(agent, session_id).close(reason)

    async def search_memory(self, agent_id: str, query: str, k: int = 5) -> list[MemoryHit]:
        return await self.call(SearchMemory(agent_id=agent_id, query=query, k=k))

    async def facts(self, agent_id: str) -> list[Fact]:
        return await self.call(GetFacts(agent_id=agent_id))

    async def close_agent(self, agent_id: str) -> None:
        """Stop one Agent (its Sessions close first); the next call for it, or its next due
        wake-up, starts it again."""
        if self._lock is None:
            return
        async with self._lock:
            agent = self._agents.pop(agent_id, None)
            self._used.pop(agent_id, None)
        if agent is not None:
            await agent.close()
            if agent_id not in self._agents:
                await self.wakeups.stopped(agent_id)

    async def close(self) -> None:
        """Close every Agent (each closes its Sessions first)."""
        agents = list(self._agents.values())
        self._agents.clear()
        self._used.clear()
        async with anyio.create_task_group() as group:
            for agent in agents:
                group.start_soon(agent.close)


def _input_text(session: Session, input_id: str) -> str | None:
    """The text of the input of this id the Session's journal had when it was (re)opened:
    in its history (run, or running when it stopped) or requeued (accepted, not started)."""
    for message in session.history:
        if isinstance(message, UserMessage) and message.id == input_id:
            return message.content
    for handle in session.requeued:
        if handle.input is not None and handle.input.id == input_id:
            return handle.input.content
    return None
