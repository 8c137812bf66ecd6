"""The seam between the HTTP gateway and whatever hosts the Agents.

``Backend`` is what ``xai serve`` needs of a host, in plain msgspec values and
strings only, so an implementation may live in another process (a Ray actor)
as well as in this one (``LocalBackend``, over an ``AgentHost``).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Protocol, runtime_checkable

from xai.agent import AgentHost, OpenSession, SessionInfo, Wakeup
from xai.events import AgentEvent, SessionEvent
from xai.memory import Fact, MemoryHit
from xai.serve._views import (
    FactDetail,
    UsageReport,
    WakeupView,
    fact_detail,
    usage_report,
    wakeup_views,
)

__all__ = ["Backend", "LocalBackend", "PageBackend"]


class Backend(Protocol):
    """A host of Agents by id, as the gateway calls it.

    Errors it raises, which the gateway turns into HTTP statuses:
    ``SessionNotFoundError`` (404), ``SessionClosedError`` (409),
    ``EventsExpiredError`` (410), ``UsageError`` (400: a bad id or value).
    """

    async def open_session(self, agent_id: str, request: OpenSession) -> SessionInfo:
        """Open a Session; its events are streamed from its first one."""
        ...

    async def send(self, agent_id: str, session_id: str, text: str) -> str:
        """Accept ``text`` as the Session's next input (on disk) and return the input's id,
        without waiting for the turn (its events come through ``events``)."""
        ...

    async def events(
        self, agent_id: str, session_id: str, after: int
    ) -> AsyncIterator[SessionEvent]:
        """The Session's events numbered above ``after``, then each new one until it
        closes; numbers never repeat or skip for one Session. Awaiting it raises the
        errors above before any event is read."""
        ...

    async def close_session(self, agent_id: str, session_id: str) -> None: ...

    async def facts(self, agent_id: str) -> list[Fact]: ...


@runtime_checkable
class PageBackend(Backend, Protocol):
    """What the web page needs beyond ``Backend`` (docs/web.md). ``LocalBackend`` and
    ``xai.cluster.RayHosts`` have it; a backend without it serves the API, and the page's
    extra routes answer 404.

    ``None`` (or ``False``) from a method: the fact, wake-up or running turn is not there.
    """

    async def cancel(self, agent_id: str, session_id: str) -> bool:
        """Cancel the Session's running turn (its partial answer is kept, marked
        interrupted); ``False``: no turn was running."""
        ...

    async def agent_events(self, agent_id: str) -> AsyncIterator[AgentEvent]:
        """Everything the Agent and its Sessions do from now on (live, not resumable).
        Awaiting it raises a bad id's error before any event is read."""
        ...

    async def search(self, agent_id: str, query: str, k: int) -> list[MemoryHit]: ...

    async def fact(self, agent_id: str, fact_id: str) -> FactDetail | None: ...

    async def forget(self, agent_id: str, fact_id: str) -> Fact | None:
        """Forget an active fact (through the Agent: its ledger, its observers); the
        forgotten version, or ``None`` if there is no such active fact."""
        ...

    async def wakeups(self, agent_id: str) -> list[WakeupView]: ...

    async def add_wakeup(self, agent_id: str, wakeup: Wakeup) -> WakeupView: ...

    async def pause_wakeup(
        self, agent_id: str, wakeup_id: str, paused: bool
    ) -> WakeupView | None: ...

    async def notify(self, agent_id: str, name: str) -> int:
        """Report the application event ``name``: the wake-ups waiting for it fire."""
        ...

    async def usage(self, agent_id: str) -> UsageReport: ...


class LocalBackend:
    """``Backend`` over an ``AgentHost`` running in this process (its event loop)."""

    def __init__(self, host: AgentHost) -> None:
        self.host = host

    async def open_session(self, agent_id: str, request: OpenSession) -> SessionInfo:
        return await self.host.open_session(agent_id, request)

    async def send(self, agent_id: str, session_id: str, text: str) -> str:
        return await self.host.submit(agent_id, session_id, text)

    async def events(
        self, agent_id: str, session_id: str, after: int
    ) -> AsyncIterator[SessionEvent]:
        return await self.host.events(agent_id, session_id, after)

    async def close_session(self, agent_id: str, session_id: str) -> None:
        await self.host.close_session(agent_id, session_id)

    async def facts(self, agent_id: str) -> list[Fact]:
        return await self.host.facts(agent_id)

    # -- the page's calls (PageBackend) -------------------------------------------------

    async def cancel(self, agent_id: str, session_id: str) -> bool:
        async with self.host.using(agent_id) as agent:
            return agent.session(session_id).cancel()

    async def agent_events(self, agent_id: str) -> AsyncIterator[AgentEvent]:
        agent = await self.host.agent(agent_id)  # a bad id fails here, before any event
        subscription = agent.events()  # from now: the caller's response has not started

        async def read() -> AsyncIterator[AgentEvent]:
            # The Agent is kept running (not suspended) while a page listens to it; if it
            # was suspended meanwhile, its subscription has ended and so does this.
            with subscription:
                async with self.host.using(agent_id):
                    async for event in subscription:
                        yield event

        return read()

    async def search(self, agent_id: str, query: str, k: int) -> list[MemoryHit]:
        return await self.host.search_memory(agent_id, query, k)

    async def fact(self, agent_id: str, fact_id: str) -> FactDetail | None:
        async with self.host.using(agent_id) as agent:
            return await fact_detail(agent, fact_id)

    async def forget(self, agent_id: str, fact_id: str) -> Fact | None:
        async with self.host.using(agent_id) as agent:
            fact = agent.memory.get(fact_id)
            if fact is None or fact.status != "active":
                return None
            decision = await agent.forget(fact_id, "forgotten from the web page")
            return decision.facts[0]

    async def wakeups(self, agent_id: str) -> list[WakeupView]:
        async with self.host.using(agent_id) as agent:
            return wakeup_views(agent.scheduler.list())

    async def add_wakeup(self, agent_id: str, wakeup: Wakeup) -> WakeupView:
        async with self.host.using(agent_id) as agent:
            state = agent.scheduler.add(wakeup)
            await agent.scheduler.flush()
            return wakeup_views([state])[0]

    async def pause_wakeup(self, agent_id: str, wakeup_id: str, paused: bool) -> WakeupView | None:
        async with self.host.using(agent_id) as agent:
            scheduler = agent.scheduler
            try:
                if paused:
                    scheduler.pause(wakeup_id)
                else:
                    scheduler.resume(wakeup_id)
            except KeyError:
                return None
            await scheduler.flush()
            return next(v for v in wakeup_views(scheduler.list()) if v.id == wakeup_id)

    async def notify(self, agent_id: str, name: str) -> int:
        async with self.host.using(agent_id) as agent:
            return agent.notify(name)

    async def usage(self, agent_id: str) -> UsageReport:
        async with self.host.using(agent_id) as agent:
            return await usage_report(agent)
