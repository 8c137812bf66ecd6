"""``RayHosts``: the client of N named, detached host actors; an Agent id always goes to
the same one (a stable hash of the id), so each Agent has one owner at a time.

Its calls are the in-process host's (``AgentHost``), with the same plain values, and it
is a ``PageBackend`` for ``xai serve --ray`` (the API and the web page).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any, TypeVar

import ray

from xai.agent import OpenSession, SessionInfo, Wakeup
from xai.cluster._actor import HostActor, HostSetup
from xai.cluster._placement import host_index
from xai.cluster._wire import HostSpec, decode, encode, unwrap
from xai.events import AgentEvent, SessionEvent
from xai.exceptions import ConfigurationError
from xai.memory import Fact, MemoryHit
from xai.messages import new_id
from xai.serve import FactDetail, UsageReport, WakeupView

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
    each actor fires the wake-ups of the Agents placed on it, called or not.
    ``submit`` is retried through a restart and is idempotent (the client names each
    input); ``open_session`` and ``events`` are not retried (a reader reconnects with
    its last sequence number)."""

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
            "max_task_retries": 0,  # per method below: only the idempotent ones
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

    async def open_session(self, agent_id: str, request: OpenSession) -> SessionInfo:
        data = await self.actor_for(agent_id).open_session.remote(agent_id, encode(request))
        return unwrap(data, SessionInfo)

    async def submit(
        self, agent_id: str, session_id: str, text: str, *, input_id: str | None = None
    ) -> str:
        """Accept ``text`` as the Session's next input (on disk) and return its id. Retried
        if the host actor dies meanwhile, never run twice: the input's id (``input_id``,
        else a new one) names it, and a host that has it does not queue it again."""
        input_id = input_id or new_id()
        call = self.actor_for(agent_id).submit.options(max_task_retries=-1)
        return unwrap(await call.remote(agent_id, session_id, text, input_id), str)

    async def send(self, agent_id: str, session_id: str, text: str) -> str:
        """``submit``, as the gateway's ``Backend`` calls it."""
        return await self.submit(agent_id, session_id, text)

    async def session_info(self, agent_id: str, session_id: str) -> SessionInfo:
        call = self.actor_for(agent_id).session_info.options(max_task_retries=-1)
        return unwrap(await call.remote(agent_id, session_id), SessionInfo)

    async def events(
        self, agent_id: str, session_id: str, after: int = 0
    ) -> AsyncIterator[SessionEvent]:
        """The Session's events numbered above ``after``, then each new one until it closes
        (a Ray streaming generator). The host's refusal (not found, closed, expired) is
        raised here, before any event is read. If the host actor dies the stream ends with
        ``ray.exceptions.RayActorError``: read again from the last number seen."""
        stream = self.actor_for(agent_id).events.remote(agent_id, session_id, after)
        return await _opened(stream, SessionEvent)

    async def close_session(self, agent_id: str, session_id: str) -> None:
        call = self.actor_for(agent_id).close_session.options(max_task_retries=-1)
        unwrap(await call.remote(agent_id, session_id), type(None))

    async def facts(self, agent_id: str) -> list[Fact]:
        call = self.actor_for(agent_id).facts.options(max_task_retries=-1)
        return unwrap(await call.remote(agent_id), list[Fact])

    async def search_memory(self, agent_id: str, query: str, k: int = 5) -> list[MemoryHit]:
        call = self.actor_for(agent_id).search_memory.options(max_task_retries=-1)
        return unwrap(await call.remote(agent_id, query, k), list[MemoryHit])

    # -- the web page's calls (``PageBackend``) ---------------------------------------------

    async def cancel(self, agent_id: str, session_id: str) -> bool:
        """Not retried: a turn the host's death cut is over anyway."""
        return unwrap(await self.actor_for(agent_id).cancel.remote(agent_id, session_id), bool)

    async def agent_events(self, agent_id: str) -> AsyncIterator[AgentEvent]:
        """Everything the Agent does from now on (a Ray streaming generator, cancelled when
        the reader stops); ends with ``RayActorError`` if the host actor dies."""
        stream = self.actor_for(agent_id).agent_events.remote(agent_id)
        return await _opened(stream, AgentEvent)

    async def search(self, agent_id: str, query: str, k: int) -> list[MemoryHit]:
        return await self.search_memory(agent_id, query, k)

    async def fact(self, agent_id: str, fact_id: str) -> FactDetail | None:
        call = self.actor_for(agent_id).fact.options(max_task_retries=-1)
        return _maybe(await call.remote(agent_id, fact_id), FactDetail)

    async def forget(self, agent_id: str, fact_id: str) -> Fact | None:
        """Not retried: a second try would find the fact forgotten (``None``)."""
        return _maybe(await self.actor_for(agent_id).forget.remote(agent_id, fact_id), Fact)

    async def wakeups(self, agent_id: str) -> list[WakeupView]:
        call = self.actor_for(agent_id).wakeups.options(max_task_retries=-1)
        return unwrap(await call.remote(agent_id), list[WakeupView])

    async def add_wakeup(self, agent_id: str, wakeup: Wakeup) -> WakeupView:
        """Retried: adding a wake-up again replaces it (the same id)."""
        call = self.actor_for(agent_id).add_wakeup.options(max_task_retries=-1)
        return unwrap(await call.remote(agent_id, encode(wakeup)), WakeupView)

    async def pause_wakeup(self, agent_id: str, wakeup_id: str, paused: bool) -> WakeupView | None:
        call = self.actor_for(agent_id).pause_wakeup.options(max_task_retries=-1)
        return _maybe(await call.remote(agent_id, wakeup_id, paused), WakeupView)

    async def notify(self, agent_id: str, name: str) -> int:
        """Not retried: the wake-ups it fired would fire twice."""
        return unwrap(await self.actor_for(agent_id).notify.remote(agent_id, name), int)

    async def usage(self, agent_id: str) -> UsageReport:
        call = self.actor_for(agent_id).usage.options(max_task_retries=-1)
        return unwrap(await call.remote(agent_id), UsageReport)

    async def pid(self, agent_id: str) -> int:
        """The worker process of the host actor that owns ``agent_id``."""
        return int(await self.actor_for(agent_id).pid.options(max_task_retries=-1).remote())

    async def node_id(self, agent_id: str) -> str:
        return str(await self.actor_for(agent_id).node_id.options(max_task_retries=-1).remote())


def _maybe(data: bytes, kind: type[T]) -> T | None:
    value: T | None = unwrap(data, kind | None)  # type: ignore[arg-type]
    return value


async def _opened(stream: Any, kind: type[T]) -> AsyncIterator[T]:
    """The events of a host actor's stream (``HostActor.events``, ``agent_events``), once
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
