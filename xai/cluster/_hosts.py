"""``RayHosts``: the client of N named, detached host actors; an Agent id always goes to
the same one (a stable hash of the id), so each Agent has one owner at a time.

It is a ``HostClient`` of the host API, like the in-process ``AgentHost``: the same
requests, encoded as msgpack, run by each actor's host through the same dispatch; so it
serves ``xai serve --ray`` (the API and the web page) as it is.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any, TypeVar

import msgspec
import ray

from xai.agent import (
    CloseSession,
    GetFacts,
    GetSession,
    HostCall,
    HostStream,
    HostWrite,
    Open,
    OpenSession,
    ReadEvents,
    SearchMemory,
    SessionInfo,
    Submit,
)
from xai.cluster._actor import HostActor, HostSetup
from xai.cluster._placement import host_index
from xai.cluster._wire import HostSpec, decode, encode, unwrap
from xai.events import SessionEvent
from xai.exceptions import ConfigurationError
from xai.memory import Fact, MemoryHit
from xai.messages import new_id

__all__ = ["NAMESPACE", "RayHosts", "host_index"]

T = TypeVar("T")

NAMESPACE = "xai"
"""The Ray namespace of the host actors."""


class RayHosts:
    """The host actors ``{prefix}0`` .. ``{prefix}{hosts-1}`` in namespace ``xai``,
    created if missing (detached: they outlive this client), found if running.

    Call ``ray.init(address=..., namespace="xai")`` first. ``spread`` asks Ray to spread
    them over the nodes (best effort); ``options_for(i)`` adds Ray actor options for actor
    ``i`` (e.g. ``resources`` pinning it to a node). A host actor that dies is
    restarted by Ray (``max_restarts=-1``) and its Agents reopen from the shared root;
    each actor fires the wake-ups of the Agents placed on it, called or not. Which calls
    are retried through a restart: ``call``."""

    def __init__(
        self,
        hosts: int,
        spec: HostSpec,
        setup: HostSetup,
        *,
        prefix: str = "xai-host-",
        spread: bool = True,
        max_concurrency: int = 1000,
        options_for: Callable[[int], dict[str, Any]] | None = None,
    ) -> None:
        if hosts < 1:
            raise ConfigurationError("hosts: at least 1")
        self.spec = spec
        options: dict[str, Any] = {
            "namespace": NAMESPACE,
            "lifetime": "detached",
            "get_if_exists": True,
            "max_restarts": -1,
            "max_task_retries": 0,  # per request, by its policy (``call``)
            "max_concurrency": max_concurrency,
        }
        if spread:
            options["scheduling_strategy"] = "SPREAD"
        actor = ray.remote(HostActor)
        encoded = encode(spec)
        self.names = [f"{prefix}{i}" for i in range(hosts)]
        self.actors: list[Any] = [
            actor.options(**options, name=name, **(options_for(i) if options_for else {})).remote(
                encoded, setup, (i, hosts)
            )
            for i, name in enumerate(self.names)
        ]

    def actor_for(self, agent_id: str) -> Any:
        """The handle of the host actor that owns ``agent_id``."""
        return self.actors[host_index(agent_id, len(self.actors))]

    async def call(self, request: HostCall[T]) -> T:
        """Run a request of the host API on the host actor that owns its Agent. A request
        whose ``policy`` allows it is retried through the actor's restart: reads and
        idempotent writes, and ``keyed`` ones (``Submit``), given a key first if they have
        none (the host that has it answers a repeat without running it twice). A ``once``
        write (opening a Session, cancelling, forgetting, notifying) is not: a host that died
        cannot tell whether it ran."""
        if request.policy == "keyed" and isinstance(request, HostWrite) and request.key is None:
            request = msgspec.structs.replace(request, key=new_id())
        method = self.actor_for(request.agent_id).call
        if request.policy != "once":
            method = method.options(max_task_retries=-1)
        value: T = unwrap(await method.remote(encode(request)), request.answer)
        return value

    async def stream(self, request: HostStream[T]) -> AsyncIterator[T]:
        """The stream a request asks for (a Ray streaming generator, cancelled when the
        reader stops). The host's refusal (not found, closed, expired) is raised here,
        before any item is read. If the host actor dies the stream ends with
        ``ray.exceptions.RayActorError``: a Session's reader reads again from the last
        number it saw. Never retried."""
        generator = self.actor_for(request.agent_id).stream.remote(encode(request))
        return await _opened(generator, request.item)

    # -- the common requests, spelled as methods --------------------------------------------

    async def open_session(self, agent_id: str, request: OpenSession) -> SessionInfo:
        return await self.call(Open(agent_id=agent_id, session=request))

    async def submit(
        self, agent_id: str, session_id: str, text: str, *, input_id: str | None = None
    ) -> str:
        """Accept ``text`` as the Session's next input (on disk) and return its id; retried
        if the host actor dies meanwhile, never run twice (``input_id`` names it)."""
        return await self.call(
            Submit(agent_id=agent_id, session_id=session_id, text=text, key=input_id)
        )

    async def session_info(self, agent_id: str, session_id: str) -> SessionInfo:
        return await self.call(GetSession(agent_id=agent_id, session_id=session_id))

    async def events(
        self, agent_id: str, session_id: str, after: int = 0
    ) -> AsyncIterator[SessionEvent]:
        return await self.stream(ReadEvents(agent_id=agent_id, session_id=session_id, after=after))

    async def close_session(self, agent_id: str, session_id: str) -> None:
        await self.call(CloseSession(agent_id=agent_id, session_id=session_id))

    async def facts(self, agent_id: str) -> list[Fact]:
        return await self.call(GetFacts(agent_id=agent_id))

    async def search_memory(self, agent_id: str, query: str, k: int = 5) -> list[MemoryHit]:
        return await self.call(SearchMemory(agent_id=agent_id, query=query, k=k))

    async def pid(self, agent_id: str) -> int:
        """The worker process of the host actor that owns ``agent_id``."""
        return int(await self.actor_for(agent_id).pid.options(max_task_retries=-1).remote())

    async def node_id(self, agent_id: str) -> str:
        return str(await self.actor_for(agent_id).node_id.options(max_task_retries=-1).remote())


async def _opened(stream: Any, kind: type[T]) -> AsyncIterator[T]:
    """The items of a host actor's stream (``HostActor.stream``), once
    its first item, the answer, says it is open (its refusal is raised here)."""
    first = await stream.__anext__()
    unwrap(await first, type(None))
    return _read(stream, kind)


async def _read(stream: Any, kind: type[T]) -> AsyncIterator[T]:
    finished = False
    try:
        async for ref in stream:  # each item a batch of events
            for event in decode(await ref, list[kind]):  # type: ignore[valid-type]
                yield event
        finished = True
    finally:
        if not finished:  # the reader stopped (or was cancelled): so does the host's side
            ray.cancel(stream)
