"""The one dispatch of the host API (``_host_api``): each request's handler, and the
idempotency policy around them. ``AgentHost.call`` runs it in this process; a Ray host actor
runs it on what it decodes; the HTTP gateway reaches it through either.

Requests about Sessions the host streams (``Open``, ``Submit``, ``CloseSession``,
``ReadEvents``) go through the host's own methods; every other one is about one running
Agent and is handled by ``call_agent``, which also serves a standalone Agent (``xai chat``).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager
from typing import Protocol, TypeVar, assert_never, cast

import anyio
import msgspec

from xai.agent._agent import Agent
from xai.agent._host_api import (
    KEPT_ANSWERS,
    AddWakeup,
    CancelTurn,
    CloseSession,
    DecideApproval,
    Forget,
    GetFact,
    GetFacts,
    GetMood,
    GetSession,
    GetUsage,
    HostCall,
    HostRequest,
    HostStream,
    HostStreamRequest,
    HostWrite,
    ListApprovals,
    ListSessions,
    ListWakeups,
    Notify,
    Open,
    OpenSession,
    PauseWakeup,
    ReadAgentEvents,
    ReadEvents,
    SearchMemory,
    Submit,
)
from xai.agent._host_views import (
    SessionInfo,
    fact_detail,
    pending_approvals,
    session_info,
    session_summaries,
    usage_report,
    wakeup_views,
)
from xai.agent._mood_view import mood_view
from xai.events import AgentEvent, SessionEvent
from xai.exceptions import (
    AgentNotFoundError,
    FactForgottenError,
    IdempotencyKeyReusedError,
    UsageError,
    WakeupNotFoundError,
)
from xai.messages import CloseReason, Origin

__all__ = ["AgentRequest", "Dispatcher", "Hosting", "call_agent"]

T = TypeVar("T")

AgentRequest = (
    GetSession
    | ListSessions
    | CancelTurn
    | ListApprovals
    | DecideApproval
    | GetFacts
    | SearchMemory
    | GetFact
    | Forget
    | ListWakeups
    | AddWakeup
    | PauseWakeup
    | Notify
    | GetUsage
    | GetMood
)
"""The requests about one running Agent (``call_agent``)."""


class Hosting(Protocol):
    """What the dispatch needs of a host (``AgentHost`` has it)."""

    def using(self, agent_id: str) -> AbstractAsyncContextManager[Agent]: ...

    def has(self, agent_id: str) -> bool: ...

    async def agent(self, agent_id: str) -> Agent: ...

    async def open_session(self, agent_id: str, request: OpenSession) -> SessionInfo: ...

    async def submit(
        self,
        agent_id: str,
        session_id: str,
        text: str,
        *,
        origin: Origin = "user",
        input_id: str | None = None,
    ) -> str: ...

    async def close_session(
        self, agent_id: str, session_id: str, reason: CloseReason = "closed"
    ) -> None: ...

    async def events(
        self, agent_id: str, session_id: str, after: int = 0
    ) -> AsyncIterator[SessionEvent]: ...


async def call_agent(agent: Agent, request: HostCall[T]) -> T:
    """Run a request about one running Agent (an ``AgentRequest``) on ``agent``: how a
    standalone Agent (``xai chat``) runs the host API's requests. A request that needs a
    host (opening a Session, submitting, closing, streams) is refused (``UsageError``)."""
    if not isinstance(request, AgentRequest):
        raise UsageError(f"{type(request).__name__} needs a host (AgentHost.call)")
    return cast(T, await _handle(agent, request))


async def _handle(agent: Agent, request: AgentRequest) -> object:
    """The handler of each request about one running Agent."""
    match request:
        case GetSession():
            return session_info(agent, request.session_id)
        case ListSessions():
            return session_summaries(agent)
        case CancelTurn():
            return agent.session(request.session_id).cancel()
        case ListApprovals():
            return pending_approvals(agent, request.session_id)
        case DecideApproval():
            return agent.session(request.session_id).approvals.decide(
                request.call_id,
                approved=request.approved,
                arguments=request.arguments,
                reason=request.reason,
                by=request.by,
            )
        case GetFacts():
            return agent.memory.facts()
        case SearchMemory():
            return await agent.memory.search(request.query, request.k)
        case GetFact():
            return await fact_detail(agent, request.fact_id)
        case Forget():
            fact = agent.memory.get(request.fact_id)
            if fact is None or fact.status not in ("active", "forgotten"):
                return None
            try:
                forgetting = agent.forget(request.fact_id, request.reason, scope=request.scope)
                return (await forgetting).facts[0]
            except FactForgottenError:
                return None
        case ListWakeups():
            return wakeup_views(agent.scheduler.list())
        case AddWakeup():
            state = agent.scheduler.add(request.wakeup)
            await agent.scheduler.flush()
            return wakeup_views([state])[0]
        case PauseWakeup():
            scheduler = agent.scheduler
            try:
                if request.paused:
                    scheduler.pause(request.wakeup_id)
                else:
                    scheduler.resume(request.wakeup_id)
            except WakeupNotFoundError:
                return None
            await scheduler.flush()
            return next(v for v in wakeup_views(scheduler.list()) if v.id == request.wakeup_id)
        case Notify():
            return agent.notify(request.name)
        case GetUsage():
            return await usage_report(agent)
        case GetMood():
            return await mood_view(agent, request.limit)
    assert_never(request)


_KEY_CHARS = 255


class Dispatcher:
    """Runs host requests on ``host``: each request's handler, under its policy."""

    def __init__(self, host: Hosting) -> None:
        self.host = host
        # (agent id, key) -> (the request without its key, encoded; its answer), or the
        # event its first run sets. In memory: ``once`` writes are not retried past a restart.
        self._answers: OrderedDict[tuple[str, str], tuple[bytes, object] | anyio.Event] = (
            OrderedDict()
        )

    async def call(self, request: HostCall[T]) -> T:
        """Run ``request`` and return its answer."""
        request.check()
        if not request.creates and not self.host.has(request.agent_id):
            raise AgentNotFoundError(request.agent_id)
        if isinstance(request, HostWrite) and request.key is not None:
            if not 0 < len(request.key) <= _KEY_CHARS:
                raise UsageError(f"an idempotency key has 1-{_KEY_CHARS} characters")
            if request.policy != "keyed":
                return cast(T, await self._once(request))
        return cast(T, await self._run(cast(HostRequest, request)))

    async def stream(self, request: HostStream[T]) -> AsyncIterator[T]:
        """Open the stream ``request`` asks for (its refusal is raised here)."""
        if not self.host.has(request.agent_id):
            raise AgentNotFoundError(request.agent_id)
        opened = cast(HostStreamRequest, request)
        match opened:
            case ReadEvents():
                events = await self.host.events(opened.agent_id, opened.session_id, opened.after)
                return cast(AsyncIterator[T], events)
            case ReadAgentEvents():
                return cast(AsyncIterator[T], await self._agent_events(opened.agent_id))
        assert_never(opened)

    async def _once(self, request: HostWrite[object]) -> object:
        """A keyed write the host cannot recognise by itself: its first answer, kept."""
        assert request.key is not None
        slot = (request.agent_id, request.key)
        shape = msgspec.msgpack.encode(msgspec.structs.replace(request, key=None))
        while True:
            kept = self._answers.get(slot)
            if kept is None:
                break
            if isinstance(kept, anyio.Event):
                await kept.wait()  # the first run of this key is under way
                continue
            if kept[0] != shape:
                raise IdempotencyKeyReusedError(request.key)
            self._answers.move_to_end(slot)
            return kept[1]
        running = self._answers[slot] = anyio.Event()
        try:
            answer = await self._run(cast(HostRequest, request))
        except BaseException:
            del self._answers[slot]  # a failure is not kept: the repeat runs it again
            raise
        finally:
            running.set()
        self._answers[slot] = (shape, answer)
        while len(self._answers) > KEPT_ANSWERS:
            self._answers.popitem(last=False)
        return answer

    async def _run(self, request: HostRequest) -> object:
        host = self.host
        match request:
            case Open():
                return await host.open_session(request.agent_id, request.session)
            case Submit():
                return await host.submit(
                    request.agent_id,
                    request.session_id,
                    request.text,
                    origin=request.origin,
                    input_id=request.key,
                )
            case CloseSession():
                await host.close_session(request.agent_id, request.session_id, request.reason)
                return None
            case _:
                async with host.using(request.agent_id) as agent:
                    return await _handle(agent, request)

    async def _agent_events(self, agent_id: str) -> AsyncIterator[AgentEvent]:
        agent = await self.host.agent(agent_id)  # a bad id fails here, before any event
        subscription = agent.events()  # from now: the caller's response has not started
        host = self.host

        async def read() -> AsyncIterator[AgentEvent]:
            # The Agent is kept running (not suspended) while it is read; if it was
            # suspended meanwhile, its subscription has ended and so does this.
            with subscription:
                async with host.using(agent_id):
                    async for event in subscription:
                        yield event

        return read()
