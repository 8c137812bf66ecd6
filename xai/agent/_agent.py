"""The Agent actor: a long-lived owner of Sessions, a persona and long-term memory.

Everything an Agent has lives under one directory::

    agent.lock            held (flock) by the one process running the Agent
    agent.json            its id and creation time
    persona.md            the persona (L3)
    schedules.json        the wake-ups
    memory/ledger.jsonl   every memory decision (the truth)
    mood/ledger.jsonl     the mood, one digest per finished Session (docs/mood.md)
    memory/index/         the chromadb index of facts (derived, repaired on start)
    sessions/<id>/        one journal per Session (parents and children alike)

Constructing an ``Agent`` only reads; ``run`` takes the directory's lock before
it writes anything. Starting an Agent on an existing directory brings back its
memory and reopens every Session that had not closed (see ``_resume``). The
Agent is the only writer of long-term memory: Sessions propose candidates (as
events, and in their finalising hooks), one adjudication task decides them in
order.

The Agent is a small shell over objects that each own one part of its state: its
lifecycle (``Lifecycle``: one ``AgentState``, checked transitions), its open Sessions
(``SessionSet``), the adjudication (``Adjudication``), the wake-ups (``Scheduler``)
and the memory (``LongTermMemory``). Each is handed what it needs, never the Agent.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
import anyio.abc
from anyio import AsyncContextManagerMixin

from xai import _actor
from xai.agent._adjudication import Adjudication, AdjudicationStopped
from xai.agent._clock import Clock, SystemClock
from xai.agent._config import (
    AGENT_TURN_MAX_TOKENS,
    DEFAULT_INSTRUCTIONS,
    AgentClosed,
    AgentConfig,
    OwnEmbedder,
    make_memory,
    with_turn_cap,
)
from xai.agent._erase import erase_everywhere
from xai.agent._identity import AgentInfo, read_identity, settle_identity
from xai.agent._lifecycle import AgentState, Lifecycle
from xai.agent._lock import DirectoryLock
from xai.agent._persona import Persona, load_persona, save_persona
from xai.agent._restart import resume_sessions
from xai.agent._scheduler import Scheduler
from xai.agent._sessions import SessionSet
from xai.agent._tools import memory_search_tool
from xai.events import AgentEvent, SessionOpened
from xai.exceptions import AgentBusyError, ConfigurationError, SessionClosedError
from xai.logs import bind_ids, get_logger
from xai.memory import Decision, Embedder, ForgetScope, IndexStore, LongTermMemory
from xai.messages import CandidateKind, Origin
from xai.mood import MoodState
from xai.providers import Provider
from xai.session import Hub, OverflowPolicy, Session, SessionConfig, Subscription, SystemPrompt
from xai.tools import Tool, ToolSet

if TYPE_CHECKING:
    from xai.telemetry import Telemetry

__all__ = [
    "AGENT_TURN_MAX_TOKENS",
    "JOB_QUEUE",
    "AdjudicationStopped",
    "Agent",
    "AgentClosed",
    "AgentConfig",
    "AgentState",
    "with_turn_cap",
]

_log = get_logger(__name__)

JOB_QUEUE = 64
"""Adjudication jobs waiting at most: a Session that proposes more waits (back-pressure)."""


class Agent(AsyncContextManagerMixin):
    """An actor owning Sessions, a persona and long-term memory under ``directory``.

    Run it with ``async with Agent(...) as agent`` or in your own task group (``await
    group.start(agent.run)``). Open conversations with ``open_session``; observe
    everything with ``events()``; ``close()`` closes every Session (their candidates are
    adjudicated first), then the memory. ``embedder`` and ``judge`` are the caller's: the
    Agent never closes what it was given, only the embedder it made. ``telemetry`` traces
    its Sessions' turns as ``invoke_agent {persona name}``, adjudication and wake-ups. The
    memory's indexes open when first needed, in ``index_store`` if given (shared, or a
    Chroma server), else in ``memory/index`` of its own.
    """

    def __init__(
        self,
        directory: str | Path,
        provider: Provider,
        *,
        agent_id: str | None = None,
        tools: ToolSet | Iterable[Tool | Callable[..., Any]] = (),
        embedder: Embedder | None = None,
        judge: Provider | None = None,
        persona: Persona | None = None,
        config: AgentConfig | None = None,
        clock: Clock | None = None,
        telemetry: Telemetry | None = None,
        index_store: IndexStore | None = None,
    ) -> None:
        self.directory = Path(directory).expanduser()
        self.telemetry = telemetry
        self.provider = provider
        self.config = config if config is not None else AgentConfig()
        self.clock: Clock = clock if clock is not None else SystemClock()
        # Nothing is written before `run` holds the directory's lock: what is new waits.
        self._identity = read_identity(self.directory, agent_id)
        self.id = self._identity.agent_id
        stored = load_persona(self.directory / "persona.md")
        self._persona = stored if stored is not None else (persona or Persona())
        self._persona_unsaved = persona is not None and stored is None
        self._embedder = OwnEmbedder(mine=embedder is None)
        parts = (embedder, provider if judge is None else judge, index_store)
        self.memory = make_memory(self.directory, self.id, self.config, self.clock.now, *parts)
        extra = [memory_search_tool(self.memory)] if self.config.memory_tool else []
        base = tools if isinstance(tools, ToolSet) else ToolSet(tools)
        # MCP servers among the tools are the Agent's: open while it runs, shared by its Sessions.
        self._tools = base.derive(context=base.context, extra=extra)  # (policies kept)
        self._hub = _hub(self.id)
        self._lock = DirectoryLock(self.directory)
        self._files: anyio.Lock | None = None
        self._life = Lifecycle(self.id)
        self._closed = AgentClosed()
        self._adjudication = Adjudication(
            self.id, self.memory, self._publish, self._session_telemetry
        )
        view = _WakeView(
            self.id,
            self.memory,
            lambda: len(self._sessions) > 0,
            self._publish,
            self._session_telemetry,
            lambda purpose, origin: self.open_session(purpose, origin=origin),
        )
        self.scheduler = Scheduler(view, self.directory, self.clock)
        self._sessions = SessionSet(
            agent_id=self.id,
            directory=self.directory,
            provider=provider,
            config=self.config.session,
            tools=lambda: self._tools,
            persona=lambda: self._persona,
            telemetry=self._session_telemetry,
            clock=self.clock.now,
            publish=self._publish,
            adjudication=self._adjudication,
            changed=lambda n, user: self.scheduler.sessions_changed(n, user_opened=user),
            mood=self.config.mood,
            notify=self.notify,
        )

    @property
    def state(self) -> AgentState:
        """Where the Agent is in its lifecycle (see ``AgentState``)."""
        return self._life.state

    @property
    def adjudication(self) -> Adjudication:
        """The Agent's adjudication of memory candidates (its job queue)."""
        return self._adjudication

    @property
    def persona(self) -> Persona:
        return self._persona

    async def set_persona(self, persona: Persona) -> None:
        """Replace the persona for Sessions opened from now on (on disk when this returns)."""
        self._persona = persona
        self._persona_unsaved = True
        if self._files is not None and self._lock.held:
            async with self._files:  # one writer of the file at a time; the last one wins
                current = self._persona
                await anyio.to_thread.run_sync(save_persona, self.directory / "persona.md", current)
                if self._persona is current:
                    self._persona_unsaved = False

    @property
    def mood(self) -> MoodState:
        """The user's and the Agent's mood now, decayed since last set (docs/mood.md)."""
        return self._sessions.mood.state()

    @property
    def sessions(self) -> dict[str, Session]:
        """Open Sessions by id (a copy)."""
        return self._sessions.copy()

    def session(self, session_id: str) -> Session:
        """The open Session ``session_id`` (``SessionClosedError`` if none is open)."""
        return self._sessions.open_one(session_id)

    def events(
        self, *, buffer: int | None = None, overflow: OverflowPolicy = "drop_oldest"
    ) -> Subscription[AgentEvent]:
        """Every event of the Agent and of each of its Sessions, as ``AgentEvent``s."""
        return self._hub.subscribe(buffer or self.config.event_buffer, overflow)

    def listen(self, callback: Callable[[AgentEvent], None]) -> Callable[[], None]:
        """Call ``callback`` (quick, synchronous) with every event; returns the way to stop."""
        return self._hub.listen(callback)

    def _publish(self, session_id: str | None, body: Any) -> None:  # (to ``events()``)
        self._hub.publish((session_id, body))

    def _session_telemetry(self) -> Telemetry | None:
        """The Agent's telemetry, naming it: its Sessions' turns are ``invoke_agent`` spans."""
        if self.telemetry is None:
            return None
        return self.telemetry.for_agent(self.id, self._persona.name)

    @asynccontextmanager
    async def __asynccontextmanager__(self) -> AsyncIterator[Agent]:
        """Its task in a task group of its own; leaving closes it (shielded). An error while
        starting is raised as itself; one from the body as a task group raises it."""
        async with _actor.running(self, lambda _ending: self.close()):
            yield self

    async def run(
        self, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED
    ) -> None:
        """The Agent's task: returns once every Session is closed and the memory is flushed.
        It first takes the directory's lock (``AgentLockedError`` if another holds it). An
        error while starting is raised as itself (no ``ExceptionGroup``); run it again then."""
        if self._life.active:
            raise ConfigurationError(f"agent {self.id} is already running")
        self._life.move(AgentState.STARTING)
        self._closed = AgentClosed()
        try:
            with bind_ids(agent_id=self.id), _actor.single_errors():
                await anyio.to_thread.run_sync(self._lock.acquire)
                _log.debug("agent.lock_acquired", directory=str(self.directory))
                try:
                    await self._run_locked(task_status)
                finally:
                    self._lock.release()
        finally:
            self._hub.end()
            self._life.move(AgentState.STOPPED)

    async def _run_locked(self, task_status: anyio.abc.TaskStatus[None]) -> None:
        started = time.perf_counter()
        self._files = anyio.Lock()
        async with self._files:
            persona = self._persona if self._persona_unsaved else None
            await anyio.to_thread.run_sync(_settle, self.directory, self._identity, persona)
            self._persona_unsaved = self._persona_unsaved and self._persona is not persona
        await self.scheduler.load()
        self._embedder.renew(self.memory)
        try:
            await self.memory.open()
            async with self._tools.open(), anyio.create_task_group() as group:
                self._sessions.bind(group, lambda: self._life.live)
                await group.start(self._adjudication.run, JOB_QUEUE)
                if self.config.resume_sessions:
                    # Whole even if told to stop meanwhile: what it recovers is then
                    # decided by the close, not left for the next start.
                    root = self.directory / "sessions"
                    adjudication, sessions = self._adjudication, self._sessions
                    await resume_sessions(root, self.memory, adjudication, sessions, self._publish)
                await group.start(self.scheduler.run)
                _log_started(self, len(self._sessions), started)
                if self._life.state is AgentState.STARTING:
                    self._life.move(AgentState.RUNNING)
                task_status.started()
                await self._life.wait_for_stop()
                with anyio.CancelScope(shield=True):
                    await self._stop()
        finally:
            self._sessions.bind(None, lambda: False)
            with anyio.CancelScope(shield=True):
                await self.memory.close()
                await self._embedder.close(self.memory)
            _log.info("agent.stopped", uptime_s=round(time.perf_counter() - started, 1))

    async def _stop(self) -> None:
        self.scheduler.stop()
        left = await self._sessions.end(suspend=self._life.state is AgentState.SUSPENDING)
        # What is queued is decided (within the bound) before the memory closes.
        await self._adjudication.finish(self.config.session.hook_timeout)
        self._closed = _undecided(left)

    async def close(self) -> AgentClosed:
        """Close every Session (hooks run, candidates adjudicated), then stop. Idempotent.
        What is queued and what a start recovered (also if the close comes while starting)
        is decided first, within ``SessionConfig.hook_timeout``; returns what was not (it
        waits in the journals for the next start; logged as ``agent.closed_undecided``)."""
        if self._life.live:
            self._life.move(AgentState.CLOSING)
        await self._life.wait_stopped()
        return self._closed

    async def suspend(self) -> None:
        """Stop WITHOUT closing the Sessions (no hooks, no ``closed`` record): the next start
        reopens each as it was (same id, history, inputs accepted and not started). For
        evicting an idle Agent (``AgentHost``). Refused with ``AgentBusyError`` while a turn
        (or the extraction after one) runs: it never interrupts or waits for a turn. From the
        call on, no turn starts and no input is accepted. Idempotent; a no-op if not running.
        """
        if self._life.live:
            busy = self._sessions.busy()
            if busy:
                raise AgentBusyError(self.id, busy)
            self._sessions.begin_suspend()
            self._life.move(AgentState.SUSPENDING)
        await self._life.wait_stopped()

    async def open_session(
        self,
        purpose: str | None = None,
        *,
        instructions: str = DEFAULT_INSTRUCTIONS,
        config: SessionConfig | None = None,
        prefix_tokens: int | None = None,
        origin: Origin = "user",
    ) -> Session:
        """Open a Session for ``purpose``: it gets the persona and a memory prefix chosen for
        that purpose within ``prefix_tokens`` (default ``MemoryConfig.prefix_tokens``)."""
        self._sessions.check_open()
        with bind_ids(agent_id=self.id):
            prefix = await self.memory.prefix(purpose, budget_tokens=prefix_tokens)
        persona = self._persona.render()
        system = SystemPrompt(instructions=instructions, persona=persona, memory_prefix=prefix)
        session = self._sessions.make(system, None if config is None else with_turn_cap(config))
        await self._sessions.start(session, SessionOpened(purpose=purpose, origin=origin))
        return session

    async def adopt(
        self,
        session: Session,
        *,
        purpose: str | None = None,
        origin: Origin = "user",
        resumed: bool = False,
    ) -> None:
        """Own a Session built elsewhere (not running yet): start, hear, decide, close it."""
        self._sessions.check_open()
        if session.state != "new":
            raise SessionClosedError(f"session {session.id} has already run: adopt it before")
        opened = SessionOpened(purpose=purpose, origin=origin, resumed=resumed)
        await self._sessions.start(session, opened)

    async def maintain(self) -> list[Decision]:
        """Decay weak tentative facts and merge duplicate stable ones; observers hear of each."""
        return await self._adjudication.announced(self.memory.maintain())

    async def forget(
        self, fact_id: str, reason: str = "forgotten on request", *, scope: ForgetScope = "fact"
    ) -> Decision:
        """Forget the fact ``fact_id`` (one ledger decision, announced). ``scope``: ``"fact"``
        (search and prefix), ``"evidence"`` (what was said, too), ``"erase"`` (their text
        leaves every file under the Agent's directory but open Sessions'; docs/memory.md).
        ``FactNotFoundError``, or ``FactForgottenError`` if forgotten already: concurrent
        requests make exactly one decision."""
        if scope == "erase":
            sessions = set(self.sessions)
            forgetting = erase_everywhere(self.memory, self.directory, sessions, fact_id, reason)
        else:
            forgetting = self.memory.forget(fact_id, reason, scope=scope)
        (decision,) = await self._adjudication.announced(forgetting)
        return decision

    async def remember(
        self, text: str, *, kind: CandidateKind = "fact", source: str = "api"
    ) -> list[Decision]:
        """Adjudicate ``text``, a memory candidate the user asked for outside any Session
        (e.g. over MCP), as a Session's would be. ``source`` is its provenance in the ledger
        (``"mcp"`` for the MCP server). Returns the decisions made."""
        self._sessions.check_open()
        return await self._adjudication.remember(text, kind, source, self.clock.now())

    def notify(self, name: str, payload: Any = None) -> int:
        """Tell the Agent that ``name`` happened: wake-ups waiting for it fire. Returns how many."""
        return self.scheduler.notify(name, payload)


def _settle(directory: Path, identity: AgentInfo, persona: Persona | None) -> None:
    """Under the lock: write what construction only read or made up. Blocking."""
    settle_identity(directory, identity)
    if persona is not None:
        save_persona(directory / "persona.md", persona)


def _log_started(agent: Agent, resumed: int, started: float) -> None:
    _log.info(
        "agent.started",
        directory=str(agent.directory),
        resumed_sessions=resumed,
        facts=len(agent.memory.facts()),
        wakeups=len(agent.scheduler.list()),
        ms=round((time.perf_counter() - started) * 1000, 1),
    )


def _hub(agent_id: str) -> Hub[AgentEvent]:
    def wrap(seq: int, item: Any) -> AgentEvent:
        # Items are (session id, body); a gap marker for a slow subscriber comes bare.
        session_id, body = item if isinstance(item, tuple) else (None, item)
        return AgentEvent(agent_id, seq, session_id, body)

    return Hub(wrap)


def _undecided(closed: list[Session]) -> AgentClosed:
    """What a close left undecided (of the Sessions it closed); said in a warning too."""
    left = [s for s in closed if s.closing_pending]
    if not left:
        return AgentClosed()
    report = AgentClosed(
        undecided=sum(s.undecided for s in left), sessions=tuple(s.id for s in left)
    )
    _log.warning(
        "agent.closed_undecided",
        candidates=report.undecided,
        session_ids=list(report.sessions),
        reason="adjudication did not finish within hook_timeout: decided on the next start",
    )
    return report


class _WakeView:
    """What the scheduler sees of its Agent (a ``WakeTarget``), made of the Agent's parts."""

    __slots__ = ("_has_sessions", "_open", "_publish", "_telemetry", "agent_id", "memory")

    def __init__(
        self,
        agent_id: str,
        memory: LongTermMemory,
        has_sessions: Callable[[], bool],
        publish: Callable[[str | None, Any], None],
        telemetry: Callable[[], Telemetry | None],
        open_session: Callable[[str, Origin], Awaitable[Session]],
    ) -> None:
        self.agent_id = agent_id
        self.memory = memory
        self._has_sessions = has_sessions
        self._publish = publish
        self._telemetry = telemetry
        self._open = open_session

    def has_sessions(self) -> bool:
        return self._has_sessions()

    def publish(self, session_id: str | None, body: Any) -> None:
        self._publish(session_id, body)

    def telemetry(self) -> Telemetry | None:
        return self._telemetry()

    async def open_session(self, purpose: str, *, origin: Origin) -> Session:
        return await self._open(purpose, origin)
