"""``HostActor``: one ``AgentHost`` inside a Ray async actor, called with msgspec bytes: the
host API's requests (``xai.agent.HostRequest``), run by the host's own dispatch.

Its host runs in a task of its own on the actor's event loop (started when the actor
starts), so calls come and go while the Agents live on. On a restart
(``max_restarts``) the new actor process starts the host again on the same shared root:
each Agent reopens from its directory when first called, its Sessions from their
journals, and the host's wake-up timer starts the Agents placed on this actor whose
wake-ups are due, without any call.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from typing import Any, TypeVar

import msgspec
import ray

from xai.agent import AgentHost, HostRequest, HostStreamRequest
from xai.cluster._placement import host_index
from xai.cluster._wire import HostSpec, answer, decode, encode, failure_of
from xai.exceptions import XaiError
from xai.logs import get_logger
from xai.memory import IndexStore
from xai.providers import Provider
from xai.tools import Tool

__all__ = ["HostActor", "HostParts", "HostSetup"]

T = TypeVar("T")

_log = get_logger(__name__)


@dataclass(frozen=True)
class HostParts:
    """What a host actor's Agents run with, made in the actor's process."""

    provider_for: Callable[[str], Provider]
    tools: Iterable[Tool | Callable[..., Any]] = field(default=())


HostSetup = Callable[[], AbstractAsyncContextManager[HostParts]]
"""Makes (and later closes) the ``HostParts`` in the actor: code, shipped by Ray's pickling
(a module-level function, or a ``functools.partial`` of one, importable on every node)."""


class HostActor:
    """Hosts Agents by id on this Ray worker; every value in and out is msgspec bytes."""

    async def __init__(  # type: ignore[misc]  # (Ray runs an async __init__ on the actor's loop)
        self, spec: bytes, setup: HostSetup, place: tuple[int, int] | None = None
    ) -> None:
        """``place`` is ``(index, hosts)``: this actor fires the wake-ups of the Agent ids
        that ``host_index`` puts on it (``None``: of every Agent under the root). Its host
        starts now, not at the first call, so that after a restart they fire uncalled."""
        self.spec = decode(spec, HostSpec)
        self._setup = setup
        self._place = place
        self._host: AgentHost | None = None
        self._started: asyncio.Event | None = None
        self._task: asyncio.Task[None] | None = None
        self._error: BaseException | None = None
        self._start()

    def _start(self) -> None:
        if self._started is None:
            self._started = asyncio.Event()
            self._task = asyncio.create_task(self._run())

    def _owns(self, agent_id: str) -> bool:
        return self._place is None or host_index(agent_id, self._place[1]) == self._place[0]

    async def _running(self) -> AgentHost:
        self._start()
        assert self._started is not None
        await self._started.wait()
        if self._host is None:
            raise XaiError(f"the host did not start: {self._error!r}")
        return self._host

    async def _run(self) -> None:
        assert self._started is not None
        spec = self.spec
        store = None
        if spec.chroma_host is not None and spec.chroma_port is not None:
            store = IndexStore.server(spec.chroma_host, spec.chroma_port)
        try:
            async with (
                self._setup() as parts,
                AgentHost(
                    spec.root,
                    parts.provider_for,
                    tools=parts.tools,
                    index_store=store,
                    max_agents=spec.max_agents,
                    idle_seconds=spec.idle_seconds,
                    owns=self._owns,
                ) as host,
            ):
                self._host = host
                self._started.set()
                _log.info("cluster.host_started", root=spec.root, pid=os.getpid())
                await asyncio.Event().wait()  # until the actor ends
        except BaseException as error:
            self._error = error
            self._host = None
            self._started.set()
            raise
        finally:
            if store is not None:
                store.close()

    async def pid(self) -> int:
        """This actor's worker process (tests kill it)."""
        return os.getpid()

    async def node_id(self) -> str:
        return ray.get_runtime_context().get_node_id()

    async def agent_ids(self) -> list[str]:
        return (await self._running()).agent_ids

    async def call(self, request: bytes) -> bytes:
        """Run an encoded ``HostRequest`` through the host's dispatch: its answer, or the
        failure naming the xai error it raised."""
        try:
            host = await self._running()
            return answer(await host.call(msgspec.msgpack.decode(request, type=HostRequest)))
        except XaiError as error:
            return failure_of(error)

    @ray.method(num_returns="streaming")
    async def stream(self, request: bytes) -> AsyncIterator[bytes]:
        """An encoded ``HostStreamRequest``'s stream: first an answer (``None``, or the
        failure refusing it), then the items in batches (each an encoded list of the items
        there were when it was sent), until the stream ends or the caller cancels it
        (``ray.cancel``)."""
        opened = msgspec.msgpack.decode(request, type=HostStreamRequest)
        async for item in _streamed(self._running, lambda host: host.stream(opened)):
            yield item


_BATCH = 256
"""At most this many events in one item of the event stream."""


async def _streamed(
    running: Callable[[], Awaitable[AgentHost]],
    open_stream: Callable[[AgentHost], Awaitable[AsyncIterator[Any]]],
) -> AsyncIterator[bytes]:
    """A streaming call's items: the answer to opening the stream (``None``, or the failure
    refusing it), then batches of its items, each encoded."""
    try:
        stream = await open_stream(await running())
    except XaiError as error:
        yield failure_of(error)
        return
    yield answer(None)
    async for batch in _batches(stream):
        yield encode(batch)


async def _batches(stream: AsyncIterator[T]) -> AsyncIterator[list[T]]:
    """The events of ``stream`` in lists: each of the next event and all that came while
    the last list was being sent (a Ray stream item costs far more than an event: one
    item per event made Ray's streaming most of a turn's CPU). Nothing waits for a batch
    to fill, so an event is never held back."""
    queue: asyncio.Queue[T | None] = asyncio.Queue()

    async def pump() -> None:
        try:
            async for event in stream:
                queue.put_nowait(event)
        finally:
            queue.put_nowait(None)  # the end (the stream's error, if any, is the task's)

    task = asyncio.create_task(pump())
    try:
        while True:
            batch: list[T] = []
            event = await queue.get()
            while event is not None:
                batch.append(event)
                if len(batch) == _BATCH or queue.empty():
                    break
                event = queue.get_nowait()
            if batch:
                yield batch
            if event is None:
                await task  # (raises what ended the stream, if it failed)
                return
    finally:
        task.cancel()
