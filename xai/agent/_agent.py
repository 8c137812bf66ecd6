"""The Agent actor: a long-lived owner of Sessions, a persona and long-term memory.

Everything an Agent has lives under one directory::

    agent.lock            held (flock) by the one process running the Agent
    agent.json            its id and creation time
    persona.md            the persona (L3)
    schedules.json        the wake-ups
    memory/ledger.jsonl   every memory decision (the truth)
    memory/index/         the chromadb index of facts (derived, repaired on start)
    sessions/<id>/        one journal per Session (parents and children alike)

Constructing an ``Agent`` only reads; ``run`` takes the directory's lock before
it writes anything. Starting an Agent on an existing directory brings back its
memory and reopens every Session that had not closed (see ``_resume``). The
Agent is the only writer of long-term memory: Sessions propose candidates (as
events, and in their finalising hooks), one adjudication task decides them in
order.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
import anyio.abc
import msgspec

from xai import _actor
from xai._files import write_atomic
from xai.agent._adjudication import Adjudication, AdjudicationStopped
from xai.agent._clock import Clock, SystemClock
from xai.agent._jobs import Job
from xai.agent._lifecycle import AgentState, Lifecycle
from xai.agent._lock import DirectoryLock
from xai.agent._persona import Persona, load_persona, save_persona
from xai.agent._restart import resume_sessions
from xai.agent._resume import list_done
from xai.agent._scheduler import Scheduler
from xai.agent._tools import memory_search_tool
from xai.events import (
    AgentEvent,
    CandidatesProposed,
    SessionClosed,
    SessionEnded,
    SessionEvent,
    SessionOpened,
)
from xai.exceptions import AgentBusyError, ConfigurationError, SessionClosedError
from xai.logs import bind_ids, get_logger
from xai.memory import (
    Decision,
    Embedder,
    IndexStore,
    LongTermMemory,
    MemoryConfig,
    default_embedder,
)
from xai.messages import CandidateKind, MemoryCandidate, Origin, new_id
from xai.providers import Provider
from xai.query import QueryConfig
from xai.session import (
    HELPER_INSTRUCTIONS,
    FinalizingContext,
    Hub,
    OverflowPolicy,
    Session,
    SessionConfig,
    Subscription,
    SystemPrompt,
)
from xai.tools import Tool, ToolSet

if TYPE_CHECKING:
    from xai.telemetry import Telemetry

__all__ = [
    "AGENT_TURN_MAX_TOKENS",
    "AdjudicationStopped",
    "Agent",
    "AgentClosed",
    "AgentConfig",
    "AgentState",
]

_log = get_logger(__name__)

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


JOB_QUEUE = 64
"""Adjudication jobs waiting at most: a Session that proposes more waits (back-pressure)."""


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


class _AgentInfo(msgspec.Struct, frozen=True):
    agent_id: str
    created_at: float


class Agent:
    """An actor owning Sessions, a persona and long-term memory under ``directory``.

    Run it with ``async with Agent(...) as agent`` or in your own task group
    (``await group.start(agent.run)``). Open conversations with
    ``open_session``; observe everything with ``events()``; ``close()`` closes
    every Session (their candidates are adjudicated first), then the memory.

    ``embedder`` and ``judge`` are the caller's: the Agent never closes what it
    was given (an ``AgentHost`` shares one embedder among its Agents), only the
    embedder it made itself when none was given.

    ``telemetry`` traces every turn of its Sessions as ``invoke_agent {persona name}``,
    their requests and tool calls, adjudication and wake-ups (docs/telemetry.md).

    The memory's indexes open when first needed (a search, a prefix, a decision), in
    ``index_store`` if given (a store shared by many Agents, or a Chroma server: its
    collections are named after the Agent's id), else in ``memory/index`` of its own.
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
        # Nothing is written before `run` holds the directory's lock: what is new is kept
        # here until then.
        self._identity = self._read_identity(agent_id)
        self.id = self._identity.agent_id
        stored = load_persona(self.directory / "persona.md")
        self._persona = stored if stored is not None else (persona or Persona())
        self._persona_unsaved = persona is not None and stored is None
        self._own_embedder = embedder is None
        self._embedder_closed = False
        self.memory = LongTermMemory(
            self.directory / "memory",
            embedder=embedder if embedder is not None else default_embedder(),
            judge=judge if judge is not None else provider,
            config=self.config.memory,
            clock=self.clock.now,
            sync=self.config.sync_ledger,
            store=index_store,
            namespace=self.id,
            lazy_index=True,  # an idle Agent starts no chromadb client
        )
        extra = [memory_search_tool(self.memory)] if self.config.memory_tool else []
        base = tools if isinstance(tools, ToolSet) else ToolSet(tools)
        # MCP servers among the tools are the Agent's: open while it runs, shared by its Sessions.
        self._tools = ToolSet([*base, *extra], mcp=base.mcp_servers)
        self._sessions: dict[str, Session] = {}
        agent_id_ = self.id

        def wrap(seq: int, item: Any) -> AgentEvent:
            # Items are (session id, body); a gap marker for a slow subscriber comes bare.
            session_id, body = item if isinstance(item, tuple) else (None, item)
            return AgentEvent(agent_id_, seq, session_id, body)

        self._hub: Hub[AgentEvent] = Hub(wrap)
        self._lock = DirectoryLock(self.directory)
        self._files: anyio.Lock | None = None
        self._group: anyio.abc.TaskGroup | None = None
        self._outer: anyio.abc.TaskGroup | None = None
        self._life = Lifecycle(self.id)
        self._adjudication = Adjudication(
            self.id, self.memory, self._publish, self._session_telemetry
        )
        self._closed = AgentClosed()
        self._left: list[Session] = []  # Sessions closed while the Agent closes
        self._scheduler_scope: anyio.CancelScope | None = None
        self.scheduler = Scheduler(self, self.clock)

    def _read_identity(self, agent_id: str | None) -> _AgentInfo:
        path = self.directory / "agent.json"
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            return _AgentInfo(agent_id=agent_id or new_id(), created_at=time.time())
        try:
            info = msgspec.json.decode(data, type=_AgentInfo)
        except (msgspec.DecodeError, msgspec.ValidationError) as exc:
            raise ConfigurationError(f"{path} is damaged: {exc}") from None
        if agent_id is not None and agent_id != info.agent_id:
            raise ConfigurationError(
                f"{self.directory} holds agent {info.agent_id!r}, not {agent_id!r}"
            )
        return info

    def _settle_files(self) -> None:
        """Under the lock: write what construction only read or made up. Blocking."""
        path = self.directory / "agent.json"
        if path.exists():
            on_disk = self._read_identity(None)
            if on_disk.agent_id != self.id:  # written by another process since __init__
                raise ConfigurationError(
                    f"{self.directory} now holds agent {on_disk.agent_id!r}, not {self.id!r}"
                )
        else:
            write_atomic(path, msgspec.json.encode(self._identity))
        if self._persona_unsaved:
            save_persona(self.directory / "persona.md", self._persona)
            self._persona_unsaved = False

    # -- state ---------------------------------------------------------------------

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
        """Replace the persona; Sessions opened from now on get it.

        It is on disk (written in a worker thread) when this returns, or, before the
        Agent runs, when ``run`` starts.
        """
        self._persona = persona
        self._persona_unsaved = True
        if self._files is not None and self._lock.held:
            async with self._files:  # one writer of the file at a time; the last one wins
                current = self._persona
                await anyio.to_thread.run_sync(save_persona, self.directory / "persona.md", current)
                if self._persona is current:
                    self._persona_unsaved = False

    @property
    def sessions(self) -> dict[str, Session]:
        """Open Sessions by id (a copy)."""
        return dict(self._sessions)

    def session(self, session_id: str) -> Session:
        try:
            return self._sessions[session_id]
        except KeyError:
            raise SessionClosedError(
                f"agent {self.id} has no open session {session_id!r}"
            ) from None

    def events(
        self, *, buffer: int | None = None, overflow: OverflowPolicy = "drop_oldest"
    ) -> Subscription[AgentEvent]:
        """Every event of the Agent and of each of its Sessions, as ``AgentEvent``s."""
        return self._hub.subscribe(buffer or self.config.event_buffer, overflow)

    def listen(self, callback: Callable[[AgentEvent], None]) -> Callable[[], None]:
        """Call ``callback`` synchronously with every event as it is published (it must be
        quick). Returns the way to stop; a host hears a reopened Session this way."""
        return self._hub.listen(callback)

    def _publish(self, session_id: str | None, body: Any) -> None:
        self._hub.publish((session_id, body))

    # -- lifecycle -------------------------------------------------------------------

    async def __aenter__(self) -> Agent:
        self._outer = await _actor.enter(self)
        return self

    async def __aexit__(self, *exc_info: Any) -> bool | None:
        async def close() -> None:
            await self.close()

        return await _actor.leave(self._outer, close, exc_info)

    async def run(
        self, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED
    ) -> None:
        """The Agent's task: returns once every Session is closed and the memory is flushed.

        It first takes the directory's lock (``AgentLockedError`` if another process
        or ``Agent`` holds it). An error while starting (the lock, a damaged file) is
        raised as itself, not inside an ``ExceptionGroup``; ``run`` can then be called
        again once the cause is fixed.
        """
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
            await anyio.to_thread.run_sync(self._settle_files)
        await self.scheduler.load()
        if self._own_embedder and self._embedder_closed:  # run again after a stop
            self.memory.embedder = default_embedder()
            self._embedder_closed = False
        try:
            await self.memory.open()
            async with self._tools.open(), anyio.create_task_group() as group:
                self._group = group
                await group.start(self._adjudication.run, JOB_QUEUE)
                if self.config.resume_sessions:
                    # Whole even if told to stop meanwhile: what it recovers is then
                    # decided by the close, not left for the next start.
                    await resume_sessions(self)
                await group.start(self._run_scheduler)
                _log.info(
                    "agent.started",
                    directory=str(self.directory),
                    resumed_sessions=len(self._sessions),
                    facts=len(self.memory.facts()),
                    wakeups=len(self.scheduler.list()),
                    ms=round((time.perf_counter() - started) * 1000, 1),
                )
                if self._life.state is AgentState.STARTING:
                    self._life.move(AgentState.RUNNING)
                task_status.started()
                await self._life.wait_for_stop()
                with anyio.CancelScope(shield=True):
                    if self._scheduler_scope is not None:
                        self._scheduler_scope.cancel()
                    if self._life.state is AgentState.SUSPENDING:
                        await self._suspend_sessions()
                    else:
                        await self._close_sessions()
                    # What is queued is decided (within the bound) before the memory closes.
                    await self._adjudication.finish(self.config.session.hook_timeout)
                    self._closed = self._undecided()
        finally:
            self._group = None
            with anyio.CancelScope(shield=True):
                await self.memory.close()
                await self._close_embedder()
            _log.info("agent.stopped", uptime_s=round(time.perf_counter() - started, 1))

    async def _close_embedder(self) -> None:
        """Close the embedder the Agent made (an endpoint client), never one it was given."""
        if not self._own_embedder or self._embedder_closed:
            return
        self._embedder_closed = True
        aclose = getattr(self.memory.embedder, "aclose", None)
        if aclose is not None:
            await aclose()

    async def _run_scheduler(
        self, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED
    ) -> None:
        with anyio.CancelScope() as scope:
            self._scheduler_scope = scope
            await self.scheduler.run(task_status=task_status)

    def _undecided(self) -> AgentClosed:
        """What the close left undecided; said in a warning too."""
        left, self._left = [s for s in self._left if s.closing_pending], []
        if not left:
            return AgentClosed()
        closed = AgentClosed(
            undecided=sum(s.undecided for s in left), sessions=tuple(s.id for s in left)
        )
        _log.warning(
            "agent.closed_undecided",
            candidates=closed.undecided,
            session_ids=list(closed.sessions),
            reason="adjudication did not finish within hook_timeout: decided on the next start",
        )
        return closed

    async def maintain(self) -> list[Decision]:
        """Decay weak tentative facts and merge duplicate stable ones; observers hear of each."""
        decisions = await self.memory.maintain()
        self._adjudication.announce(None, decisions)
        return decisions

    async def forget(self, fact_id: str, reason: str = "forgotten on request") -> Decision:
        decision = await self.memory.forget(fact_id, reason)
        self._adjudication.announce(None, [decision])
        return decision

    async def remember(
        self, text: str, *, kind: CandidateKind = "fact", source: str = "api"
    ) -> list[Decision]:
        """Adjudicate ``text`` as a memory candidate the user asked for from outside any
        Session (e.g. over MCP): like a Session's candidate it may be added, reinforce or
        update a fact, or be dropped. ``source`` is its provenance in the ledger (the
        decision's session id, ``"mcp"`` for the MCP server); the user's request is its
        evidence. Returns the decisions made (none if it was decided before)."""
        self._check_open()
        request = f"{source}:{new_id()}"
        candidate = MemoryCandidate(
            text=text,
            kind=kind,
            confidence=0.9,  # said explicitly, on purpose
            evidence=(request,),
            session_id=source,
            created_at=self.clock.now(),
        )
        # traced as any adjudication
        decisions = await self._adjudication.decide((candidate,), source)
        self._adjudication.announce(None, decisions)
        return decisions

    def notify(self, name: str, payload: Any = None) -> int:
        """Tell the Agent that ``name`` happened: wake-ups waiting for it fire. Returns how many."""
        return self.scheduler.notify(name, payload)

    async def close(self) -> AgentClosed:
        """Close every Session (hooks run, candidates adjudicated), then stop. Idempotent.

        Everything queued for adjudication, and everything a start recovered (also when
        the close comes while the Agent is still starting), is decided first, within
        ``SessionConfig.hook_timeout`` (per Session hook, then for what is still queued).
        Returns what could not be decided in that time (also logged as
        ``agent.closed_undecided``): it waits in the journals for the next start."""
        if self._life.live:
            self._life.move(AgentState.CLOSING)
        await self._life.wait_stopped()
        return self._closed

    async def suspend(self) -> None:
        """Stop WITHOUT closing the Sessions: no finalising hooks, no ``closed`` record; each
        journal stays open-ended, so the next start reopens every Session as it was (same
        id, history, inputs accepted and not started; candidates already decided are not
        decided again). For evicting an idle Agent (``AgentHost``).

        Refused with ``AgentBusyError`` while a turn (or the memory extraction after one)
        runs in any of its Sessions: a suspend never interrupts or waits for a turn. From the
        call on, no turn starts and no input is accepted. Idempotent; a no-op if not running.
        """
        if self._life.live:
            busy = tuple(i for i, s in self._sessions.items() if not s.idle)
            if busy:
                raise AgentBusyError(self.id, busy)
            for session in self._sessions.values():  # synchronously: no turn starts now
                session.begin_suspend()
            self._life.move(AgentState.SUSPENDING)
        await self._life.wait_stopped()

    async def _suspend_sessions(self) -> None:
        async with anyio.create_task_group() as group:
            for session in list(self._sessions.values()):
                group.start_soon(session.suspend)
        self._sessions.clear()

    async def _close_sessions(self) -> None:
        while self._sessions:  # children opened while closing are closed too
            async with anyio.create_task_group() as group:
                for session in list(self._sessions.values()):
                    self._left.append(session)
                    group.start_soon(session.close, "owner_shutdown")

    # -- sessions --------------------------------------------------------------------

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
        self._check_open()
        with bind_ids(agent_id=self.id):
            prefix = await self.memory.prefix(purpose, budget_tokens=prefix_tokens)
        system = SystemPrompt(
            instructions=instructions, persona=self._persona.render(), memory_prefix=prefix
        )
        session_id = new_id()
        session = Session(
            self.provider,
            tools=self._tools,
            config=self.config.session if config is None else with_turn_cap(config),
            system=system,
            directory=self.directory / "sessions" / session_id,
            session_id=session_id,
            child_factory=self._spawn_child,
            telemetry=self._session_telemetry(),
            clock=self.clock.now,
        )
        await self._start(session, SessionOpened(purpose=purpose, origin=origin))
        return session

    async def adopt(
        self,
        session: Session,
        *,
        purpose: str | None = None,
        origin: Origin = "user",
        resumed: bool = False,
    ) -> None:
        """Own a Session built elsewhere (its own provider, tools, directory): the Agent
        starts it in its task group, hears its events, decides its memory candidates when
        it closes, and closes it with the Agent. The Session must not be running yet."""
        self._check_open()
        if session.state != "new":
            raise SessionClosedError(f"session {session.id} has already run: adopt it before")
        await self._start(session, SessionOpened(purpose=purpose, origin=origin, resumed=resumed))

    def _session_telemetry(self) -> Telemetry | None:
        """The Agent's telemetry, naming it: its Sessions' turns are ``invoke_agent`` spans."""
        if self.telemetry is None:
            return None
        return self.telemetry.for_agent(self.id, self._persona.name)

    def _check_open(self) -> None:
        if self._group is None or not self._life.live:
            raise SessionClosedError(f"agent {self.id} is not running (or is closing)")

    async def _spawn_child(self, parent: Session, task: str) -> Session:
        """Delegation under an Agent: the child is the Agent's too (events, memory, close)."""
        self._check_open()
        session_id = new_id()
        child = Session(
            self.provider,
            tools=self._tools,
            config=parent.config,
            system=SystemPrompt(instructions=HELPER_INSTRUCTIONS, persona=self._persona.render()),
            directory=self.directory / "sessions" / session_id,
            session_id=session_id,
            parent_id=parent.id,
            depth=parent.depth + 1,
            child_factory=self._spawn_child,
            telemetry=self._session_telemetry(),
            clock=self.clock.now,
        )
        await self._start(child, SessionOpened(purpose=task, origin="agent", parent_id=parent.id))
        return child

    async def _start(self, session: Session, opened: SessionOpened) -> None:
        assert self._group is not None
        if not opened.resumed and not self._life.live:
            # Opened while the Agent was closing: it must not outlive the Agent. (One a
            # start reopens is closed with the others: its candidates are decided then.)
            raise SessionClosedError(f"agent {self.id} is closing")
        # Known, heard and announced before its task starts: an observer that takes it up
        # on ``SessionOpened`` (a host's stream) misses none of its events, also the first
        # turn of a reopened Session (an input accepted before a kill).
        self._sessions[session.id] = session
        session.on_session_finalizing.append(self._on_finalizing)
        stop = session.listen(self._forwarder(session))
        self.scheduler.sessions_changed(len(self._sessions), user_opened=opened.origin == "user")
        self._publish(session.id, opened)
        try:
            with bind_ids(agent_id=self.id):  # the Session's task copies the context from here
                await self._group.start(session.run)
        except BaseException:
            stop()
            if self._sessions.pop(session.id, None) is not None:
                self._publish(session.id, SessionEnded(reason="error"))
                self.scheduler.sessions_changed(len(self._sessions))
            raise
        if not opened.resumed and not self._life.live:
            await session.close("owner_shutdown")
            raise SessionClosedError(f"agent {self.id} is closing")

    def _forwarder(self, session: Session) -> Callable[[SessionEvent], None]:
        def forward(event: SessionEvent) -> None:
            body = event.event
            self._publish(session.id, body)
            if isinstance(body, CandidatesProposed):
                self._adjudication.offer(Job(session.id, body.candidates, session, None))
            elif isinstance(body, SessionClosed):
                self._sessions.pop(session.id, None)
                if self._adjudication.recorded(session.id) and not session.closing_pending:
                    # every candidate acknowledged
                    list_done(self.directory / "sessions", (session.id,))
                self._publish(session.id, SessionEnded(reason=body.reason))
                self.scheduler.sessions_changed(len(self._sessions))

        return forward

    async def _on_finalizing(self, context: FinalizingContext) -> None:
        """A Session is closing: its unacknowledged candidates are decided before it goes."""
        session = self._sessions.get(context.session_id)
        await self._adjudication.finalizing(context, session)
