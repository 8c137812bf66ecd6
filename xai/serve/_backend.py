"""What the gateway serves: any ``HostClient`` of the host API (``xai.agent``).

An ``AgentHost`` in this process is one, and so is ``xai.cluster.RayHosts`` (host actors);
every route of the gateway and its page is one request of that API, so the gateway runs
whatever the host runs, in the same way.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import TypeAlias, TypeVar

from xai.agent import AgentHost, HostCall, HostClient, HostStream

__all__ = ["Backend", "LocalBackend"]

T = TypeVar("T")

Backend: TypeAlias = HostClient
"""The host the gateway calls (``HostClient``): errors become HTTP statuses (``_app``)."""


class LocalBackend:
    """An ``AgentHost`` of this process (its event loop) as the gateway's backend. (The host
    is a ``HostClient`` itself: ``create_app(host)`` does the same.)"""

    def __init__(self, host: AgentHost) -> None:
        self.host = host

    async def call(self, request: HostCall[T]) -> T:
        return await self.host.call(request)

    async def stream(self, request: HostStream[T]) -> AsyncIterator[T]:
        return await self.host.stream(request)
