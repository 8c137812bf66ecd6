"""Hosts on Ray: a real two-node Ray cluster on this machine (127.0.0.1 only), started once
for the cluster tests (the ``cluster`` fixture, tests/ray_cluster.py). The tests that leave
the host actors running share two (``shared_hosts``), each with Agents and Sessions of its own;
a test that kills one makes its own host actors (named after the test) and ends them."""

from __future__ import annotations

import functools
import os
import signal
import threading
import time
from collections.abc import AsyncIterator, Iterator, Mapping
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx
import msgspec
import pytest
from httpx_sse import ServerSentEvent, aconnect_sse

from tests.ray_cluster import Cluster, listening_beyond_loopback, node_pin, ray
from tests.serve_helpers import listening
from tests.session_helpers import extraction_responder, is_side_request, last_content
from tests.test_agent import echo, judge_adds
from tests.test_serve import consecutive, open_session, read, seqs, turns_done
from xai.agent import At, OpenSession, Wakeup, WakeupState
from xai.cluster import HostParts, HostSpec, RayHosts, host_index
from xai.config import LLMConfig
from xai.events import SessionEvent, TurnDone
from xai.messages import ToolMessage, UserMessage
from xai.providers import OpenAIProvider, RetryPolicy
from xai.serve import create_app
from xai.session import read_journal
from xai.testing import OpenAIWireServer, Reply, ScriptedCall

# A Ray cluster starved of CPU (two busy loops on 2 cores) takes 50-60 s for the slowest of
# these, with the code of 001ddbd too: a time limit of three times the suite's default.
pytestmark = [pytest.mark.anyio, pytest.mark.timeout(180)]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # Ray's object refs are awaited on asyncio


def _runs(marks: Path, name: str) -> int:
    path = marks / name
    return len(path.read_text().splitlines()) if path.exists() else 0


@asynccontextmanager
async def wire_setup(base_url: str, model: str, marks: str) -> AsyncIterator[HostParts]:
    """In the host actor: a provider for the test's wire server, and two tools that
    record each run in ``marks`` (``slow`` never returns the first time)."""
    import anyio

    async def note() -> str:
        """Note that the work began."""
        with (Path(marks) / "note").open("a") as out:
            out.write("ran\n")
        return "noted"

    async def slow() -> str:
        """Do the slow part."""
        path = Path(marks) / "slow"
        first = not path.exists()
        with path.open("a") as out:
            out.write("ran\n")
        if first:
            await anyio.sleep_forever()
        return "slow done"

    config = LLMConfig(
        model=model, base_url=base_url, api_key="test-key", timeout=10.0, max_retries=2
    )
    provider = OpenAIProvider(config, retry=RetryPolicy(max_retries=2, initial_delay=0.01))
    try:
        yield HostParts(provider_for=lambda _: provider, tools=(note, slow))
    finally:
        await provider.aclose()


def works(body: Mapping[str, Any]) -> Reply | None:
    """``work``: call ``note``, then ``slow``, then answer."""
    if is_side_request(body):
        return None
    messages = body["messages"]
    users = [i for i, m in enumerate(messages) if m.get("role") == "user"]
    if not users or messages[users[-1]].get("content") != "work":
        return None
    tools = sum(1 for m in messages[users[-1] :] if m.get("role") == "tool")
    if tools == 0:
        return Reply(tool_calls=(ScriptedCall(name="note"),))
    if tools == 1:
        return Reply(tool_calls=(ScriptedCall(name="slow"),))
    return Reply(text="work done")


@pytest.fixture
def scripted(openai_server: OpenAIWireServer) -> OpenAIWireServer:
    for responder in (works, extraction_responder, judge_adds, echo):
        openai_server.script.add_responder(responder)
    return openai_server


def _made_hosts(server: OpenAIWireServer, root: Path, name: str) -> Iterator[RayHosts]:
    (root / "marks").mkdir()
    setup = functools.partial(wire_setup, server.base_url, server.model, str(root / "marks"))
    made = RayHosts(
        2,
        HostSpec(root=str(root / "agents")),
        setup,
        prefix=f"{name[:40]}-{os.getpid()}-",
        options_for=node_pin,  # one per node
    )
    yield made
    for actor in made.actors:
        ray.kill(actor, no_restart=True)


@pytest.fixture
def hosts(
    cluster: Cluster, scripted: OpenAIWireServer, tmp_path: Path, request: pytest.FixtureRequest
) -> Iterator[RayHosts]:
    """Host actors of the test's own: for a test that kills or restarts them."""
    yield from _made_hosts(scripted, tmp_path, request.node.name)


@pytest.fixture(scope="module")
def _module_hosts(
    _xai_wire_server: OpenAIWireServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[RayHosts]:
    from tests.ray_cluster import shared_cluster

    shared_cluster()  # (the tests that use these ask for ``cluster`` too: it outlives them)
    yield from _made_hosts(_xai_wire_server, tmp_path_factory.mktemp("ray-hosts"), "module")


@pytest.fixture
def shared_hosts(cluster: Cluster, scripted: OpenAIWireServer, _module_hosts: RayHosts) -> RayHosts:
    """Two host actors shared by the tests that leave them running (each starts Ray workers
    that import xai: ~2 s of CPU apiece): every test opens Sessions of its own on them,
    against the one wire server of the run (``scripted`` gives it this test's replies)."""
    return _module_hosts


def _ids_on_both(hosts: RayHosts) -> tuple[str, str]:
    """Two Agent ids the stable hash puts on different host actors."""
    names = [f"user-{i}" for i in range(50)]
    first = names[0]
    other = next(n for n in names if host_index(n, 2) != host_index(first, 2))
    return first, other


async def _until_turn_done(hosts: RayHosts, agent: str, session: str, after: int) -> list[Any]:
    bodies = []
    async for event in await hosts.events(agent, session, after):
        assert isinstance(event, SessionEvent)
        bodies.append(event.event)
        if isinstance(event.event, TurnDone):
            return bodies
    raise AssertionError("the stream ended before the turn did")


async def test_agents_on_two_host_actors_on_two_nodes(shared_hosts: RayHosts) -> None:
    hosts = shared_hosts
    ada, bob = _ids_on_both(hosts)
    nodes = {await hosts.node_id(ada), await hosts.node_id(bob)}
    assert len(nodes) == 2  # two host actors, on the two nodes
    for agent in (ada, bob):
        info = await hosts.open_session(agent, OpenSession())
        input_id = await hosts.submit(agent, info.session_id, f"hello from {agent}")
        bodies = await _until_turn_done(hosts, agent, info.session_id, 0)
        done = bodies[-1]
        assert done.outcome.text == f"echo: hello from {agent}"
        assert done.outcome.input_id == input_id
        assert (await hosts.session_info(agent, info.session_id)).turns == 1
        await hosts.close_session(agent, info.session_id)
    assert await hosts.pid(ada) != await hosts.pid(bob)


async def test_every_socket_the_cluster_listens_on_is_loopback(shared_hosts: RayHosts) -> None:
    hosts = shared_hosts
    ada, bob = _ids_on_both(hosts)
    for agent in (ada, bob):  # the host actors run (their workers listen too)
        await hosts.open_session(agent, OpenSession())
    beyond = listening_beyond_loopback(expect={"gcs_server", "raylet"})
    assert beyond == []


def _missed_wakeup(directory: Path, text: str) -> None:
    """A wake-up whose time passed a minute ago, in ``schedules.json`` as a scheduler writes it."""
    due = time.time() - 60
    wakeup = Wakeup(id="nudge", trigger=At(time=due), text=text)
    directory.mkdir(parents=True)
    state = WakeupState(wakeup=wakeup, next_at=due)
    (directory / "schedules.json").write_bytes(msgspec.json.encode([state]))


def _heard(scripted: OpenAIWireServer, text: str) -> threading.Event:
    """Set once the model is asked to answer ``text`` (the wire server runs in a thread)."""
    heard = threading.Event()

    def listen(body: Mapping[str, Any]) -> Reply | None:
        if last_content(body) == text:
            heard.set()
        return None

    scripted.script.reset()  # the fixture's responders, `listen` looking first
    for responder in (listen, works, extraction_responder, judge_adds, echo):
        scripted.script.add_responder(responder)
    return heard


async def test_a_killed_host_actor_restarts_its_agent_resumes_and_an_sse_reader_misses_nothing(
    hosts: RayHosts, scripted: OpenAIWireServer, tmp_path: Path
) -> None:
    agent = "killed"
    marks = tmp_path / "marks"
    # An Agent on the same host actor that nobody calls, with a wake-up due while it is down.
    sleeper = next(
        f"sleeper-{i}" for i in range(50) if host_index(f"sleeper-{i}", 2) == host_index(agent, 2)
    )
    woke = _heard(scripted, "wake up, sleeper")
    info = await hosts.open_session(agent, OpenSession())
    session = info.session_id
    input_id = await hosts.submit(agent, session, "work", input_id="work-1")
    assert input_id == "work-1"
    stream = await hosts.events(agent, session, 0)
    async with gateway_of(hosts) as client:
        path = f"/agents/{agent}/sessions/{session}/events"
        seen: list[ServerSentEvent] = []
        async with aconnect_sse(client, "GET", path) as source:  # an SSE reader through it all
            async for event in source.aiter_sse():
                seen.append(event)
                if event.event == "tool_call_started" and '"slow"' in event.data:
                    old = await hosts.pid(agent)  # the note tool has finished, slow runs
                    _missed_wakeup(tmp_path / "agents" / sleeper, "wake up, sleeper")
                    os.kill(old, signal.SIGKILL)  # (the sleeper's host read no schedule)
        assert seen[-1].event == "error"  # the gateway says the stream broke off
        with pytest.raises(ray.exceptions.RayActorError):
            async for _ in stream:
                pass
        # Before any call reaches it, the restarted actor's host finds the sleeper due and
        # starts it; its scheduler runs the firing missed while the host was down once.
        assert await anyio.to_thread.run_sync(woke.wait, 120)  # (a guard: a restart under load)

        # The next calls wait for the restarted actor; the Agent reopens from its directory.
        restarted = await hosts.session_info(agent, session)
        assert await hosts.pid(agent) != old
        assert restarted.turns == 1  # the interrupted turn is in the journal
        # The same input again (a client retrying through the crash): not queued twice.
        assert await hosts.submit(agent, session, "work", input_id="work-1") == "work-1"
        await hosts.submit(agent, session, "go on")
        last = {"Last-Event-ID": seen[-2].id}  # the reader reconnects from its last number
        # the end of the interrupted turn, then the "go on" turn
        resumed = await read(client, path, turns_done(2), headers=last)
    before = seen[:-1]
    assert consecutive(seqs(before) + seqs(resumed))  # no gap, no duplicate, across the kill
    interrupted, done = (msgspec.json.decode(e.data) for e in resumed if e.event == "turn_done")
    # Next comes the turn the kill interrupted: the results its reopen gave the calls left
    # unanswered (journal-backed messages), then its end.
    first_done = next(n for n, e in enumerate(resumed) if e.event == "turn_done")
    assert all(e.event == "message_committed" for e in resumed[:first_done]), resumed
    assert interrupted["event"]["outcome"]["status"] == "interrupted"
    assert done["event"]["outcome"]["text"] == "echo: go on"
    await hosts.close_session(agent, session)

    assert _runs(marks, "note") == 1  # the finished tool call never ran again
    assert _runs(marks, "slow") == 1  # the interrupted one is not re-run either
    journal = tmp_path / "agents" / agent / "sessions" / session / "journal.jsonl"
    history = read_journal(journal).history
    inputs = [m.content for m in history if isinstance(m, UserMessage)]
    assert inputs == ["work", "go on"]  # accepted once, kept through the kill
    results = {m.tool_name: m.synthetic for m in history if isinstance(m, ToolMessage)}
    assert results == {"note": False, "slow": True}  # the interrupted call: a made-up result


@asynccontextmanager
async def gateway_of(hosts: RayHosts) -> AsyncIterator[httpx.AsyncClient]:
    """``xai serve --ray``: the gateway on 127.0.0.1 with RayHosts as its Backend."""
    async with (
        listening(create_app(hosts)) as url,
        httpx.AsyncClient(base_url=url, timeout=30) as client,
    ):
        yield client


async def test_the_gateway_serves_agents_hosted_on_ray(shared_hosts: RayHosts) -> None:
    """``xai serve --ray``: the same HTTP + SSE API, RayHosts as its Backend."""
    hosts = shared_hosts
    async with gateway_of(hosts) as client:
        for agent in _ids_on_both(hosts):
            session = await open_session(client, agent)
            path = f"/agents/{agent}/sessions/{session}"
            sent = await client.post(path + "/messages", json={"text": "hi"})
            assert sent.status_code == 202, sent.text
            got = await read(client, path + "/events", turns_done(1))
            assert consecutive(seqs(got))
            resumed = await read(
                client,
                path + "/events",
                lambda g: len(g) >= 1,
                headers={"Last-Event-ID": str(seqs(got)[-2])},
            )
            assert seqs(resumed) == [seqs(got)[-1]]  # from its last number, no gap
            assert (await client.delete(path)).status_code in (200, 204)
        missing = await client.get("/agents/nobody/sessions/nothing/events")
        assert missing.status_code == 404


async def test_the_web_pages_routes_on_ray(shared_hosts: RayHosts) -> None:
    """``xai serve --ray`` serves the page's data too (``RayHosts`` runs every request):
    the Agent's live events, cancel, facts, search, forget, wake-ups and usage."""
    hosts = shared_hosts
    agent = "pager"
    base = f"/agents/{agent}"
    async with gateway_of(hosts) as client:
        session = await open_session(client, agent)  # (the Agent exists from here on)
        path = f"{base}/sessions/{session}"
        async with aconnect_sse(client, "GET", base + "/events") as live:
            assert live.response.status_code == 200  # (subscribed before the headers came)
            events = live.aiter_sse()

            async def until(kind: str, has: str = "") -> dict[str, Any]:
                async for event in events:
                    if event.event == kind and has in event.data:
                        data: dict[str, Any] = msgspec.json.decode(event.data)
                        return data
                raise AssertionError(f"the Agent's stream ended before {kind} {has}")

            assert (await client.post(path + "/cancel")).json() == {"cancelled": False}
            await client.post(path + "/messages", json={"text": "work"})
            await until("tool_call_started", '"slow"')  # (never returns by itself)
            assert (await client.post(path + "/cancel")).json() == {"cancelled": True}
            done = await until("turn_done")
            assert done["event"]["outcome"]["status"] == "cancelled"
            assert (await client.delete(path)).status_code == 204
            await until("memory_decided")  # the Session's point, adjudicated

            wakeup = {"id": "ping", "trigger": {"type": "event", "name": "ping"}, "text": "hi"}
            added = await client.post(base + "/wakeups", json=wakeup)
            assert added.status_code == 201 and added.json()["trigger"] == "on event ping"
            paused = await client.post(base + "/wakeups/ping/pause")
            assert paused.json()["paused"] is True
            assert (await client.post(base + "/wakeups/ping/resume")).json()["paused"] is False
            assert (await client.post(base + "/wakeups/nope/pause")).status_code == 404
            assert (await client.post(base + "/notify", json={"name": "ping"})).json() == {
                "fired": 1
            }
            fired = await until("wakeup_fired")
            assert fired["event"]["wakeup_id"] == "ping"
        [listed] = (await client.get(base + "/wakeups")).json()
        assert listed["id"] == "ping" and listed["runs"] == 1

        [fact] = (await client.get(base + "/facts")).json()
        assert fact["text"] == "The user said: work"
        detail = (await client.get(f"{base}/facts/{fact['id']}")).json()
        assert [h["kind"] for h in detail["history"]] == ["add"]
        assert [e["text"] for e in detail["evidence"]] == ["work"]
        hits = (await client.get(base + "/memory/search", params={"q": "work"})).json()
        assert hits and hits[0]["kind"] == "fact"
        forgotten = await client.delete(f"{base}/facts/{fact['id']}")
        assert forgotten.status_code == 200 and forgotten.json()["status"] == "forgotten"
        assert (await client.delete(f"{base}/facts/{fact['id']}")).status_code == 404
        assert (await client.get(f"{base}/facts/nothing")).status_code == 404

        usage = (await client.get(base + "/usage")).json()
        assert session in [s["session_id"] for s in usage["sessions"]]
        assert usage["total"]["prompt_tokens"] > 0
