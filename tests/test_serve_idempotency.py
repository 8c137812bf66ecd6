"""Every write of ``xai serve`` takes an ``Idempotency-Key`` (the IETF httpapi draft's header):
a client that retries after a lost answer gets the first answer again, and the write is not
done twice. Through real HTTP on 127.0.0.1, over an ``AgentHost``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest
from httpx_sse import ServerSentEvent
from starlette.routing import Route

from tests.serve_helpers import listening
from tests.session_helpers import extraction_responder
from tests.test_agent import echo, judge_adds
from tests.test_approvals_host import Vault, asks
from tests.test_serve import open_session, read
from xai.agent import AgentHost, ReadAgentEvents
from xai.events import MemoryDecided, WakeupFired
from xai.providers import OpenAIProvider
from xai.serve import IDEMPOTENCY_HEADER, create_app
from xai.testing import OpenAIWireServer

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # uvicorn serves on asyncio only


@pytest.fixture
def scripted(openai_server: OpenAIWireServer) -> OpenAIWireServer:
    for responder in (asks, extraction_responder, judge_adds, echo):
        openai_server.script.add_responder(responder)
    return openai_server


def inputs_until(text: str) -> Any:
    """Read until the turn of the input ``text`` is done."""

    def until(got: list[ServerSentEvent]) -> bool:
        started = [json.loads(e.data)["event"] for e in got if e.event == "turn_started"]
        ours = [s["turn"] for s in started if (s["input"] or {}).get("content") == text]
        done = [
            json.loads(e.data)["event"]["outcome"]["turn"] for e in got if e.event == "turn_done"
        ]
        return bool(ours) and ours[-1] in done

    return until


def said(got: list[ServerSentEvent]) -> list[str]:
    """The inputs the Session ran, in order."""
    started = [json.loads(e.data)["event"] for e in got if e.event == "turn_started"]
    return [s["input"]["content"] for s in started if s["input"] is not None]


async def test_a_message_retried_with_its_idempotency_key_is_queued_once(
    tmp_path: Path, scripted: OpenAIWireServer, provider: OpenAIProvider
) -> None:
    """Bug 3 of issue 28: the client's 202 was lost, it sends the message again with the
    same key; the Session runs it once, and both answers name the same input."""
    async with (
        AgentHost(tmp_path, lambda _: provider) as host,
        listening(create_app(host)) as url,
        httpx.AsyncClient(base_url=url, timeout=30) as client,
    ):
        session = await open_session(client)
        path = f"/agents/ada/sessions/{session}"
        key = {IDEMPOTENCY_HEADER: "7f1c2a6e-retry-me"}
        first = await client.post(path + "/messages", json={"text": "hello"}, headers=key)
        again = await client.post(path + "/messages", json={"text": "hello"}, headers=key)
        assert first.status_code == again.status_code == 202, again.text
        assert again.json()["input_id"] == first.json()["input_id"]
        other = await client.post(path + "/messages", json={"text": "another"}, headers=key)
        assert other.status_code == 422 and other.json()["type"] == "idempotency_key_reused"
        await client.post(path + "/messages", json={"text": "marker"})  # (no key: a new one)
        got = await read(client, path + "/events", inputs_until("marker"))
        assert said(got) == ["hello", "marker"]


WRITES = {
    ("POST", "/agents/{agent_id}/sessions"),
    ("POST", "/agents/{agent_id}/sessions/{session_id}/messages"),
    ("POST", "/agents/{agent_id}/sessions/{session_id}/cancel"),
    ("DELETE", "/agents/{agent_id}/sessions/{session_id}"),
    ("POST", "/agents/{agent_id}/wakeups"),
    ("POST", "/agents/{agent_id}/wakeups/{wakeup_id}/pause"),
    ("POST", "/agents/{agent_id}/wakeups/{wakeup_id}/resume"),
    ("POST", "/agents/{agent_id}/notify"),
    ("DELETE", "/agents/{agent_id}/facts/{fact_id}"),
    ("POST", "/agents/{agent_id}/sessions/{session_id}/approvals/{call_id}"),
}
"""Every write route the test repeats below."""


async def test_every_write_answers_a_repeat_of_its_key_as_the_first_time(
    tmp_path: Path, scripted: OpenAIWireServer, provider: OpenAIProvider
) -> None:
    """A general check: each write route of the app, sent twice with one key, gets the same
    status and body twice and does its work once; a new write route must join ``WRITES``."""
    async with AgentHost(tmp_path, lambda _: provider, tools=[Vault().tool]) as host:
        await _every_write_twice(host)


async def _every_write_twice(host: AgentHost) -> None:
    app = create_app(host)
    routes = {
        (method, route.path)
        for route in app.routes
        if isinstance(route, Route)
        for method in route.methods or ()
        if method not in ("GET", "HEAD")
    }
    assert routes == WRITES  # (a write route the check below does not repeat: add it)
    async with (
        listening(app) as url,
        httpx.AsyncClient(base_url=url, timeout=30) as client,
    ):
        keys = iter(range(100))
        done: set[tuple[str, str]] = set()

        async def twice(method: str, route: str, path: str, body: Any = None) -> httpx.Response:
            headers = {IDEMPOTENCY_HEADER: f'"key-{next(keys)}"'}  # (an sf-string: quoted)
            first = await client.request(method, path, json=body, headers=headers)
            again = await client.request(method, path, json=body, headers=headers)
            assert first.status_code < 300, (route, first.text)
            assert (again.status_code, again.content) == (first.status_code, first.content), route
            done.add((method, route))
            return first

        base = "/agents/ada"
        opened = await twice("POST", "/agents/{agent_id}/sessions", base + "/sessions", {})
        session = f"{base}/sessions/{opened.json()['session_id']}"
        agent_events = await host.stream(ReadAgentEvents(agent_id="ada"))  # (it exists now)
        decided = False
        listed = (await client.get(base + "/sessions")).json()
        assert [s["session_id"] for s in listed] == [opened.json()["session_id"]]  # one opened

        await twice(
            "POST", "/agents/{agent_id}/sessions/{session_id}/messages", session + "/messages",
            {"text": "I am Ada"},
        )  # fmt: skip
        turn = await read(client, session + "/events", inputs_until("I am Ada"))
        assert said(turn) == ["I am Ada"]
        await client.post(session + "/messages", json={"text": "open the vault"})
        await read(client, session + "/events", lambda got: got[-1].event == "approval_requested")
        decide = "/agents/{agent_id}/sessions/{session_id}/approvals/{call_id}"
        decided_once = await twice("POST", decide, session + "/approvals/v1", {"approved": True})
        assert decided_once.json()["approved"] is True
        await read(client, session + "/events", lambda got: got[-1].event == "turn_done")
        cancel = "/agents/{agent_id}/sessions/{session_id}/cancel"
        assert (await twice("POST", cancel, session + "/cancel")).json() == {"cancelled": False}

        wakeup = {"id": "ping", "trigger": {"type": "event", "name": "ping"}, "text": "hi"}
        await twice("POST", "/agents/{agent_id}/wakeups", base + "/wakeups", wakeup)
        for verb in ("pause", "resume"):
            route = "/agents/{agent_id}/wakeups/{wakeup_id}/" + verb
            await twice("POST", route, f"{base}/wakeups/ping/{verb}")
        fired = await twice("POST", "/agents/{agent_id}/notify", base + "/notify", {"name": "ping"})
        assert fired.json() == {"fired": 1}
        async for event in agent_events:
            if isinstance(event.event, WakeupFired):
                break
            decided = decided or isinstance(event.event, MemoryDecided)
        [ping] = (await client.get(base + "/wakeups")).json()
        assert ping["runs"] == 1  # fired once for the two notifies

        await twice("DELETE", "/agents/{agent_id}/sessions/{session_id}", session)
        while not decided:  # the Session's point, adjudicated (between turns or on its close)
            decided = isinstance((await anext(agent_events)).event, MemoryDecided)
        fact = (await client.get(base + "/facts")).json()[0]  # (the vault turn adds one)
        forgotten = await twice(
            "DELETE", "/agents/{agent_id}/facts/{fact_id}", f"{base}/facts/{fact['id']}"
        )
        assert forgotten.json()["status"] == "forgotten"
        assert done == WRITES

        bad = await client.post(
            base + "/notify", json={"name": "ping"}, headers={IDEMPOTENCY_HEADER: "x" * 300}
        )
        assert bad.status_code == 400 and IDEMPOTENCY_HEADER in bad.json()["message"]
