"""The seam between the HTTP gateway and whatever hosts the Agents.

``Backend`` is what ``xai serve`` needs of a host, in plain msgspec values and
strings only, so an implementation may live in another process (a Ray actor)
as well as in this one (``LocalBackend``, over an ``AgentHost``).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Protocol

from xai.agent import AgentHost, OpenSession, SessionInfo
from xai.events import SessionEvent
from xai.memory import Fact

__all__ = ["Backend", "LocalBackend"]


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
