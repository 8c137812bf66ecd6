"""Hosts on Ray with the memory index on a real Chroma server (``chroma run``), end to end:
a fact an Agent decides on one node is in the server, the Agent's next owner (another
actor, on the other node) searches it without indexing anything again, and a server that
dies and comes back gives a typed, retryable error through Ray while it is down. (And a
host actor sends the events there are in one stream item.)"""

from __future__ import annotations

import functools
import gc
import os
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, suppress
from pathlib import Path
from typing import Any

import anyio
import msgspec
import pytest

from tests.chroma_server import ChromaServer
from tests.ray_cluster import Cluster, listening_beyond_loopback, node_pin, psutil, ray
from tests.session_helpers import extraction_responder
from tests.test_agent import echo, judge_adds
from xai.agent import OpenSession, ReadEvents
from xai.cluster import HostParts, HostSpec, RayHosts
from xai.config import LLMConfig
from xai.events import SessionEvent, TurnDone
from xai.exceptions import MemoryUnavailableError
from xai.memory import IndexStore, MemoryHit, ScoredFact
from xai.providers import OpenAIProvider, RetryPolicy
from xai.testing import OpenAIWireServer

pytestmark = [
    pytest.mark.timeout(180),  # (as tests/test_cluster_ray.py: Ray starved of CPU is slow)
    pytest.mark.anyio,
    # Read here without xai's embedding function (chromadb knows it by name only).
    pytest.mark.filterwarnings("ignore:Could not reconstruct embedding function:UserWarning"),
    # chromadb's HTTP client leaves its connection for the garbage collector to close.
    pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning"),
    pytest.mark.filterwarnings("ignore::ResourceWarning"),
]

AGENT = "ada"
SAID = "My cat is called Miso."
FACT = f"The user said: {SAID}"  # (what extraction_responder makes of it)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # Ray's object refs are awaited on asyncio


@asynccontextmanager
async def wire_setup(base_url: str, model: str) -> AsyncIterator[HostParts]:
    """In the host actor: a provider for the test's wire server."""
    config = LLMConfig(
        model=model, base_url=base_url, api_key="test-key", timeout=10.0, max_retries=2
    )
    provider = OpenAIProvider(config, retry=RetryPolicy(max_retries=2, initial_delay=0.01))
    try:
        yield HostParts(provider_for=lambda _: provider)
    finally:
        await provider.aclose()


@pytest.fixture
def owners(
    cluster: Cluster,
    openai_server: OpenAIWireServer,
    chroma: ChromaServer,
    tmp_path: Path,
    request: pytest.FixtureRequest,
) -> Iterator[Any]:
    """``owner(node)``: a one-actor ``RayHosts`` pinned to ``node`` (a new actor each call,
    which starts its host at its first call), every one on the same shared root and
    Chroma server; all ended after the test."""
    for responder in (extraction_responder, judge_adds, echo):
        openai_server.script.add_responder(responder)
    setup = functools.partial(wire_setup, openai_server.base_url, openai_server.model)
    spec = HostSpec(root=str(tmp_path / "agents"), chroma_host="127.0.0.1", chroma_port=chroma.port)
    made: list[RayHosts] = []

    def owner(node: int) -> RayHosts:
        prefix = f"{request.node.name[:40]}-{os.getpid()}-{len(made)}-"
        hosts = RayHosts(1, spec, setup, prefix=prefix, options_for=lambda _: node_pin(node))
        made.append(hosts)
        return hosts

    yield owner
    for hosts in made:
        for actor in hosts.actors:
            ray.kill(actor, no_restart=True)


def facts_collection(store: IndexStore) -> Any:
    """The one facts collection on the server (the Agent's)."""
    names = [c.name for c in store.client().list_collections()]
    (name,) = [n for n in names if n.endswith("-facts")]
    assert AGENT in name, names
    return store.client().get_collection(name)


def facts_of(hits: list[MemoryHit]) -> list[str]:
    return [hit.fact.text for hit in hits if isinstance(hit, ScoredFact)]


async def test_memory_on_a_chroma_server_through_ray(
    owners: Any, chroma: ChromaServer, tmp_path: Path
) -> None:
    first: RayHosts = owners(0)
    second: RayHosts = owners(1)  # (its process starts meanwhile; it opens no Agent yet)
    info = await first.open_session(AGENT, OpenSession())
    await first.submit(AGENT, info.session_id, SAID)
    seen = []
    async for event in await first.events(AGENT, info.session_id, 0):
        seen.append(event.seq)
        if isinstance(event.event, TurnDone):
            break
    # A reader from 0 gets the finished turn's events in one stream item (batched).
    read = ReadEvents(agent_id=AGENT, session_id=info.session_id, after=0)
    raw = first.actor_for(AGENT).stream.remote(msgspec.msgpack.encode(read))
    await (await raw.__anext__())  # the answer
    batch = msgspec.msgpack.decode(await (await raw.__anext__()), type=list[SessionEvent])
    assert [e.seq for e in batch][: len(seen)] == seen and len(seen) > 3
    await first.close_session(AGENT, info.session_id)  # its fact decided on the way
    facts = await first.facts(AGENT)
    with anyio.fail_after(120):  # a guard: under heavy load the decision can outlast the
        while not facts:  # close's hook_timeout and is made after it (then it is polled)
            await anyio.sleep(0.5)
            facts = await first.facts(AGENT)
    (fact,) = facts
    assert fact.text == FACT

    # The fact reaches the Chroma server with no read through the Agent (its adjudicator
    # writes what its passes deferred once it idles, ~2 s). Its stored vector gets a mark
    # only indexing it again (an upsert of its embedding) would undo.
    store = IndexStore.server("127.0.0.1", chroma.port)
    try:
        collection = facts_collection(store)
        got = collection.get(ids=[fact.id], include=["documents", "embeddings"])
        with anyio.fail_after(120):  # a guard (heavy load), as above
            while not got["documents"]:
                await anyio.sleep(0.5)
                got = collection.get(ids=[fact.id], include=["documents", "embeddings"])
        assert got["documents"] == [FACT]
        marked = [float(x) for x in got["embeddings"][0]]
        marked[0] += 0.01
        collection.update(ids=[fact.id], embeddings=[marked])
    finally:
        store.close()
        gc.collect()  # (the connection chromadb leaves open is finalised here)

    # The Agent's owner ends; a new owner on the other node takes it over.
    node, pid = await first.node_id(AGENT), await first.pid(AGENT)
    ray.kill(first.actors[0], no_restart=True)
    await anyio.to_thread.run_sync(_gone, pid)  # (its lock on the Agent's directory with it)
    assert await second.node_id(AGENT) != node
    assert facts_of(await second.search_memory(AGENT, "what is the cat called")) == [FACT]
    store = IndexStore.server("127.0.0.1", chroma.port)
    try:
        collection = facts_collection(store)
        got = collection.get(ids=[fact.id], include=["embeddings"])
        assert got["embeddings"][0][0] == pytest.approx(marked[0], abs=1e-5)  # not re-indexed
    finally:
        store.close()
        gc.collect()

    beyond = listening_beyond_loopback(expect={"gcs_server", "raylet", "chroma"})
    assert beyond == []

    # The server dies: a typed, retryable error crosses the actor boundary; then it is back.
    chroma.kill()
    with pytest.raises(MemoryUnavailableError) as caught:
        await second.search_memory(AGENT, "what is the cat called")
    assert caught.value.retryable and f":{chroma.port}" in caught.value.where
    chroma.start()
    assert facts_of(await second.search_memory(AGENT, "what is the cat called")) == [FACT]
    assert [f.text for f in await second.facts(AGENT)] == [FACT]  # the ledger kept it
    gc.collect()


def _gone(pid: int) -> None:
    """Until process ``pid`` has ended (it is not our child: psutil polls it)."""
    with suppress(psutil.NoSuchProcess):
        psutil.Process(pid).wait(timeout=30)
