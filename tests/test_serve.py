"""``xai serve``: the HTTP + SSE gateway over an AgentHost, through real HTTP on 127.0.0.1.

The gateway runs under uvicorn in the test's own event loop (uvicorn needs asyncio), so
the test can wait on the host's events instead of sleeping; the model is the scripted
OpenAI-wire server.
"""

from __future__ import annotations

import contextlib
import signal
import subprocess
import sys
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import anyio.abc
import httpx
import msgspec
import pytest
from httpx_sse import ServerSentEvent, aconnect_sse

from tests.example_helpers import offline_env
from tests.serve_helpers import listening
from tests.session_helpers import extraction_responder, is_side_request, last_content
from tests.test_agent import echo, judge_adds
from xai.agent import AgentConfig, AgentHost, ListSessions, SessionStream
from xai.cli import main
from xai.events import (
    MemoryDecided,
    SessionClosed,
    SessionEvent,
    TextDelta,
    TurnDone,
    TurnStarted,
)
from xai.exceptions import EventsExpiredError, UsageError
from xai.providers import OpenAIProvider
from xai.serve import LocalBackend, check_bind, create_app, is_loopback, serve_app
from xai.session import SessionConfig
from xai.testing import OpenAIWireServer, Reply, ScriptedCall

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # uvicorn serves on asyncio only


def gated(body: Mapping[str, Any]) -> Reply | None:
    if not is_side_request(body) and last_content(body) == "use the gate":
        return Reply(tool_calls=(ScriptedCall(name="gate"),))
    return None


@pytest.fixture
def scripted(openai_server: OpenAIWireServer) -> OpenAIWireServer:
    for responder in (gated, extraction_responder, judge_adds, echo):
        openai_server.script.add_responder(responder)
    return openai_server


class Gate:
    """A tool that waits until the test releases it."""

    def __init__(self) -> None:
        self.entered = anyio.Event()
        self.release = anyio.Event()

    async def gate(self) -> str:
        """Wait until released."""
        self.entered.set()
        await self.release.wait()
        return "released"


@asynccontextmanager
async def gateway(
    root: Path, provider: OpenAIProvider, *, token: str | None = None, **host: Any
) -> AsyncIterator[tuple[httpx.AsyncClient, AgentHost]]:
    """The gateway on 127.0.0.1 (a free port) over an AgentHost, and a client of it."""
    async with (
        AgentHost(root, lambda _: provider, **host) as agents,
        listening(create_app(LocalBackend(agents), token=token)) as url,
        httpx.AsyncClient(base_url=url, timeout=30) as client,
    ):
        yield client, agents


async def read(
    client: httpx.AsyncClient,
    path: str,
    until: Callable[[list[ServerSentEvent]], bool],
    headers: Mapping[str, str] | None = None,
) -> list[ServerSentEvent]:
    """SSE events from ``path`` until ``until(events so far)``; then it disconnects."""
    got: list[ServerSentEvent] = []
    async with aconnect_sse(client, "GET", path, headers=dict(headers or {})) as source:
        assert source.response.status_code == 200, await source.response.aread()
        async for event in source.aiter_sse():
            got.append(event)
            if until(got):
                break
    return got


def consecutive(numbers: list[int]) -> bool:
    return numbers == list(range(numbers[0], numbers[0] + len(numbers)))


def kinds(events: list[ServerSentEvent]) -> list[str]:
    return [e.event for e in events]


def seqs(events: list[ServerSentEvent]) -> list[int]:
    return [int(e.id) for e in events]


def turns_done(n: int) -> Callable[[list[ServerSentEvent]], bool]:
    return lambda got: kinds(got).count("turn_done") >= n


async def open_session(client: httpx.AsyncClient, agent: str = "ada") -> str:
    response = await client.post(f"/agents/{agent}/sessions", json={"purpose": "a test"})
    assert response.status_code == 201, response.text
    info = response.json()
    assert info["agent_id"] == agent and info["state"]
    return str(info["session_id"])


async def test_a_turn_streams_text_deltas_tool_calls_and_its_end(
    tmp_path: Path, scripted: OpenAIWireServer, provider: OpenAIProvider
) -> None:
    gate = Gate()
    async with gateway(tmp_path, provider, tools=[gate.gate]) as (client, _):
        session = await open_session(client)
        path = f"/agents/ada/sessions/{session}"
        sent = await client.post(path + "/messages", json={"text": "use the gate"})
        assert sent.status_code == 202, sent.text  # answered while the turn waits on the gate
        input_id = sent.json()["input_id"]
        await gate.entered.wait()
        gate.release.set()
        with anyio.fail_after(30):  # a guard against a hang, not a wait
            events = await read(client, path + "/events", turns_done(1))
    assert consecutive(seqs(events))  # none missing
    decoded = [msgspec.json.decode(e.data, type=SessionEvent) for e in events]
    assert [d.seq for d in decoded] == seqs(events) and {d.session_id for d in decoded} == {session}
    assert [e.event.__struct_config__.tag for e in decoded] == kinds(events)
    got = kinds(events)
    assert got[0] == "turn_started" and got[-1] == "turn_done"
    started = decoded[0].event
    assert isinstance(started, TurnStarted)
    assert started.input is not None and started.input.id == input_id
    assert got.index("tool_call_started") < got.index("tool_call_finished")
    texts = [d.event.text for d in decoded if isinstance(d.event, TextDelta)]
    assert len(texts) > 1  # streamed in pieces
    done = msgspec.json.decode(events[-1].data)["event"]["outcome"]
    assert done["status"] == "completed" and done["text"] == "".join(texts)


async def test_a_reader_that_reconnects_with_last_event_id_misses_nothing_and_sees_nothing_twice(
    tmp_path: Path, scripted: OpenAIWireServer, provider: OpenAIProvider
) -> None:
    gate = Gate()
    async with gateway(tmp_path, provider, tools=[gate.gate]) as (client, _):
        session = await open_session(client)
        path = f"/agents/ada/sessions/{session}"
        assert (await client.post(path + "/messages", json={"text": "use the gate"})).is_success
        # The first connection drops mid-turn: the tool call runs, nothing after it was read.
        first = await read(
            client, path + "/events", lambda got: got[-1].event == "tool_call_started"
        )
        gate.release.set()  # the turn goes on with no reader connected
        assert (await client.post(path + "/messages", json={"text": "and then"})).is_success
        last = first[-1].id
        resumed = await read(client, path + "/events", turns_done(2), {"Last-Event-ID": last})
        by_query = await read(client, path + f"/events?after={last}", turns_done(2))
        whole = await read(client, path + "/events", turns_done(2))
    assert seqs(resumed)[0] == int(last) + 1
    assert seqs(first) + seqs(resumed) == seqs(whole) and consecutive(seqs(whole))
    assert [e.data for e in first + resumed] == [e.data for e in whole]
    assert [e.data for e in by_query] == [e.data for e in resumed]
    assert "tool_call_finished" in kinds(resumed)


async def test_the_stream_goes_on_with_the_same_numbers_after_the_agent_was_suspended(
    tmp_path: Path, scripted: OpenAIWireServer, provider: OpenAIProvider
) -> None:
    async with gateway(tmp_path, provider, max_agents=1) as (client, host):
        session = await open_session(client, "ada")
        path = f"/agents/ada/sessions/{session}"
        assert (await client.post(path + "/messages", json={"text": "one"})).is_success
        before = await read(client, path + "/events", turns_done(1))
        await open_session(client, "bob")  # over the cap: ada (idle) is suspended
        assert host.agent_ids == ["bob"] and host.evictions == 1
        assert (await client.post(path + "/messages", json={"text": "two"})).is_success
        after = await read(
            client, path + "/events", turns_done(1), {"Last-Event-ID": before[-1].id}
        )
    assert consecutive(seqs(before) + seqs(after))
    done = msgspec.json.decode(after[-1].data)["event"]["outcome"]
    assert done["text"] == "echo: two"


async def test_events_older_than_the_window_or_past_the_end_are_a_410_not_a_gap(
    tmp_path: Path, scripted: OpenAIWireServer, provider: OpenAIProvider
) -> None:
    quiet = AgentConfig(session=SessionConfig(extract_memory=False))  # nothing after the turn
    async with gateway(tmp_path, provider, replay_events=4, config=quiet) as (client, host):
        session = await open_session(client)
        path = f"/agents/ada/sessions/{session}"
        # the host records each event as it is published: once this sees the end, so has it
        done = (await host.agent("ada")).session(session).events(buffer=1000)
        sent = await client.post(path + "/messages", json={"text": "a long enough answer"})
        assert sent.is_success
        with anyio.fail_after(30):  # a guard against a hang, not a wait
            async for event in done:
                if isinstance(event.event, TurnDone):
                    break
        gone = await client.get(path + "/events?after=0")
        assert gone.status_code == 410
        last = gone.json()["last"]
        assert last > 5  # more events than the window keeps
        for after in (0, last - 5, 57):  # 57: a number from before a restart, say
            response = await client.get(path + f"/events?after={after}")
            assert response.status_code == 410
            body = response.json()
            assert body["type"] == "events_expired" and "window" in body["message"]
            assert (body["first"], body["last"]) == (last - 3, last)
        ahead = await client.get(path + "/events", headers={"Last-Event-ID": str(last + 1)})
        assert ahead.status_code == 410 and ahead.json()["type"] == "events_expired"
        tail = await read(client, path + f"/events?after={last - 4}", lambda got: len(got) == 4)
        assert seqs(tail) == [last - 3, last - 2, last - 1, last]  # the window itself is served
        assert kinds(tail)[-1] == "turn_done"


async def test_a_closed_sessions_stream_is_served_from_its_log_by_the_next_server(
    tmp_path: Path, scripted: OpenAIWireServer, provider: OpenAIProvider
) -> None:
    async with gateway(tmp_path, provider) as (client, _):
        session = await open_session(client)
        path = f"/agents/ada/sessions/{session}"
        assert (await client.post(path + "/messages", json={"text": "one"})).is_success
        before = await read(client, path + "/events", turns_done(1))
    # the server stopped (its Agents closed their Sessions); another starts on the same root
    async with gateway(tmp_path, provider) as (client, _):
        whole = await read(client, path + "/events", lambda got: got[-1].event == "session_closed")
        assert [e.data for e in whole[: len(before)]] == [e.data for e in before]
        assert consecutive(seqs(whole)) and kinds(whole)[-1] == "session_closed"
        tail = await read(
            client,
            path + "/events",
            lambda got: got[-1].event == "session_closed",
            {"Last-Event-ID": before[-1].id},
        )
        assert seqs(tail) == seqs(whole)[len(before) :]
        refused = await client.post(path + "/messages", json={"text": "two"})
        assert refused.status_code == 409


async def test_facts_are_listed_after_a_close_and_a_closed_session_is_409(
    tmp_path: Path, scripted: OpenAIWireServer, provider: OpenAIProvider
) -> None:
    async with gateway(tmp_path, provider) as (client, host):
        session = await open_session(client)
        path = f"/agents/ada/sessions/{session}"
        decided = (await host.agent("ada")).events()  # the Agent adjudicates after the turn
        assert (await client.post(path + "/messages", json={"text": "I am Ada"})).is_success
        await read(client, path + "/events", turns_done(1))
        with anyio.fail_after(30):  # a guard against a hang, not a wait
            async for event in decided:
                if isinstance(event.event, MemoryDecided) and event.event.decision == "add":
                    break
        closed = await client.delete(path)
        assert closed.status_code == 204
        facts = (await client.get("/agents/ada/facts")).json()
        assert [f["text"] for f in facts] == ["The user said: I am Ada"]
        # the closed Session's stream is still there to the end; it takes no more input
        tail = await read(client, path + "/events", lambda got: got[-1].event == "session_closed")
        assert kinds(tail)[-1] == "session_closed"
        for response in (
            await client.post(path + "/messages", json={"text": "again"}),
            await client.delete(path),
        ):
            assert response.status_code == 409
            assert response.json()["type"] == "session_closed"


async def test_an_agents_open_sessions_are_listed(
    tmp_path: Path, scripted: OpenAIWireServer, provider: OpenAIProvider
) -> None:
    """Issue 28: ``GET /agents/{id}/sessions`` answered 405. It lists the open Sessions, in
    the order they were opened, as the host API's ``ListSessions`` does in process."""
    async with gateway(tmp_path, provider) as (client, host):
        first, second = await open_session(client), await open_session(client)
        path = f"/agents/ada/sessions/{first}"
        assert (await client.post(path + "/messages", json={"text": "I am Ada"})).is_success
        await read(client, path + "/events", turns_done(1))
        listed = await client.get("/agents/ada/sessions")
        assert listed.status_code == 200, listed.text
        assert [s["session_id"] for s in listed.json()] == [first, second]
        said, fresh = listed.json()
        assert (said["turns"], said["label"], said["origin"]) == (1, "I am Ada", "user")
        assert (fresh["turns"], fresh["label"], fresh["origin"]) == (0, "", None)
        assert said["parent_id"] is None and said["usage"]["requests"] >= 1
        in_process = await host.call(ListSessions(agent_id="ada"))
        assert msgspec.json.decode(msgspec.json.encode(in_process)) == listed.json()
        assert (await client.delete(f"/agents/ada/sessions/{second}")).status_code == 204
        after = (await client.get("/agents/ada/sessions")).json()
        assert [s["session_id"] for s in after] == [first]


async def test_bad_input_is_a_400_and_an_unknown_session_a_404_with_a_json_reason(
    tmp_path: Path, scripted: OpenAIWireServer, provider: OpenAIProvider
) -> None:
    async with gateway(tmp_path, provider) as (client, _):
        session = await open_session(client)
        path = f"/agents/ada/sessions/{session}"
        cases: list[tuple[httpx.Response, str]] = [
            (await client.post(path + "/messages", json={}), "text"),
            (await client.post(path + "/messages", json={"text": ""}), "text"),
            (await client.post(path + "/messages", json={"text": "  "}), "empty"),
            (await client.post(path + "/messages", json={"text": "hi", "x": 1}), "x"),
            (await client.post(path + "/messages", content=b"{not json"), "invalid"),
            (await client.post("/agents/ada/sessions", json={"purpose": 3}), "purpose"),
            (await client.post("/agents/no%20pe/sessions", json={}), "agent id"),
            (await client.get(path + "/events?after=x"), "after"),
            (await client.get(path + "/events", headers={"Last-Event-ID": "-1"}), "Last-Event-ID"),
        ]
        for response, reason in cases:
            assert response.status_code == 400, response.text
            body = response.json()
            assert body["type"] == "bad_request" and reason in body["message"], body
        for response in (
            await client.post("/agents/ada/sessions/nope/messages", json={"text": "hi"}),
            await client.get("/agents/ada/sessions/nope/events"),
            await client.delete("/agents/ada/sessions/nope"),
        ):
            assert response.status_code == 404 and response.json()["type"] == "not_found"
        elsewhere = await client.get("/nowhere")
        assert elsewhere.status_code == 404 and elsewhere.json()["type"] == "not_found"
        wrong_method = await client.put(path + "/messages", json={"text": "hi"})
        assert wrong_method.status_code == 405
        assert wrong_method.json()["type"] == "method_not_allowed"


async def test_a_token_is_required_when_set_and_beyond_loopback(
    tmp_path: Path, scripted: OpenAIWireServer, provider: OpenAIProvider
) -> None:
    async with gateway(tmp_path, provider, token="s3cret") as (client, host):
        await host.agent("ada")  # (a read of an Agent that does not exist is 404)
        refused = await client.post("/agents/ada/sessions", json={})
        assert refused.status_code == 401 and refused.json()["type"] == "unauthorized"
        assert refused.headers["www-authenticate"] == "Bearer"
        wrong = await client.get("/agents/ada/facts", headers={"Authorization": "Bearer nope"})
        assert wrong.status_code == 401
        ok = await client.get("/agents/ada/facts", headers={"Authorization": "Bearer s3cret"})
        assert ok.status_code == 200 and ok.json() == []
    app = create_app(LocalBackend(AgentHost(tmp_path, lambda _: provider)))
    for address in ("0.0.0.0", "192.0.2.1", "example.org"):
        with pytest.raises(UsageError, match="needs a token"):
            await serve_app(app, address, 0)  # refused before it binds
        check_bind(address, "s3cret")  # with a token it may
    assert all(is_loopback(a) for a in ("127.0.0.1", "127.8.0.1", "::1", "[::1]", "localhost"))


def test_the_cli_refuses_a_public_bind_without_a_token_and_the_ray_flag(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("XAI_SERVE_TOKEN", raising=False)
    assert main(["serve", "--root", str(tmp_path), "--host", "0.0.0.0"]) == 2
    assert "XAI_SERVE_TOKEN" in capsys.readouterr().err
    for name in ("LLM_MODEL", "LLM_BASE_URL", "LLM_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    ray = ["serve", "--root", str(tmp_path), "--ray", "127.0.0.1:6379"]
    assert main(ray) == 2  # the scripted model is not shipped to host actors
    assert "set LLM_*" in capsys.readouterr().err
    assert main([*ray, "--hosts", "0"]) == 2
    assert "--hosts 0" in capsys.readouterr().err
    assert main([*ray, "--chroma", "nowhere"]) == 2
    assert "--chroma nowhere: HOST:PORT" in capsys.readouterr().err
    assert not list(tmp_path.iterdir())  # nothing started


async def test_a_reader_that_falls_behind_the_window_is_told_not_skipped() -> None:
    stream = SessionStream("s", capacity=3, start=0)
    for n in range(3):
        stream.add(TurnStarted(turn=n, input=None))
    reader = stream.since(1)
    first = await reader.__anext__()
    assert first.seq == 2
    for n in range(3):  # the reader is paused at 2: 3 is pushed out of the window
        stream.add(TurnStarted(turn=n + 3, input=None))
    with pytest.raises(EventsExpiredError) as caught:
        await reader.__anext__()
    assert (caught.value.after, caught.value.first, caught.value.last) == (2, 4, 6)
    with pytest.raises(EventsExpiredError):
        stream.check(2)
    stream.check(3)  # 4..6 are all kept
    stream.add(SessionClosed(reason="closed"))
    assert [e.seq for e in [e async for e in stream.since(4)]] == [5, 6, 7]
    assert stream.closed and not stream.attached


@asynccontextmanager
async def cli_server(root: Path, *args: str) -> AsyncIterator[tuple[str, anyio.abc.Process]]:
    process = await anyio.open_process(
        [sys.executable, "-m", "xai", "serve", "--root", str(root), "--port", "0", *args],
        env=offline_env(),
        stdout=subprocess.DEVNULL,
    )
    try:
        assert process.stderr is not None
        text = ""
        with anyio.fail_after(60):  # the start of a child process on a loaded machine
            while "listening at http://" not in text or not text.endswith("\n"):
                text += (await process.stderr.receive()).decode()
        yield text.rsplit("listening at ", 1)[1].split()[0], process
    finally:
        with anyio.CancelScope(shield=True):
            with contextlib.suppress(ProcessLookupError):  # ended already
                process.kill()
            await process.wait()
            await process.aclose()


async def test_the_xai_serve_command_resumes_a_stream_across_a_kill_9_and_stops_cleanly(
    tmp_path: Path,
) -> None:
    """The offline model through the command; the stream is in the Agent's directory,
    written before any reader got an event, so a server started again on it after a
    SIGKILL goes on with the next numbers and serves the old ones: no gap, no duplicate."""
    root = tmp_path / "agents"
    async with (
        cli_server(root) as (url, process),
        httpx.AsyncClient(base_url=url, timeout=30) as client,
    ):
        assert url.startswith("http://127.0.0.1:")
        session = await open_session(client, "fern")
        path = f"/agents/fern/sessions/{session}"
        assert (await client.post(path + "/messages", json={"text": "Hi, I'm Ada"})).is_success
        with anyio.fail_after(50):  # a guard against a hang, not a wait
            before = await read(client, path + "/events", turns_done(1))
        first = msgspec.json.decode(before[-1].data)
        assert first["event"]["outcome"]["text"] == "Nice to meet you, Ada!"
        process.kill()  # SIGKILL: nothing is closed, flushed or sealed
        await process.wait()
    async with (
        cli_server(root) as (url, process),
        httpx.AsyncClient(base_url=url, timeout=30) as client,
    ):
        text = "What's the weather in Paris and Tokyo?"
        assert (await client.post(path + "/messages", json={"text": text})).status_code == 202
        last = before[-3].id  # the reader lost its connection three events before the end
        with anyio.fail_after(50):
            after = await read(client, path + "/events", turns_done(2), {"Last-Event-ID": last})
        assert seqs(after)[0] == int(last) + 1
        assert [e.data for e in after[:2]] == [e.data for e in before[-2:]]  # as they were
        assert consecutive(seqs(before[:-2]) + seqs(after))
        assert kinds(after).count("turn_started") == 1 and kinds(after)[-1] == "turn_done"
        assert kinds(after).count("tool_call_finished") == 2  # get_weather, twice
        process.send_signal(signal.SIGINT)  # it stops serving; the host closes its Agents
        with anyio.fail_after(60):
            assert await process.wait() == 0
    journal = root / "fern" / "sessions" / session / "journal.jsonl"
    assert b'"kind":"closed"' in journal.read_bytes()
