"""``xai mcp serve``: an Agent served over MCP, driven by the official SDK's client, over stdio
(the server a subprocess the client starts) and streamable HTTP (on 127.0.0.1, a free port).
Offline: the scripted model of ``xai demo`` answers; memory is real chromadb + MiniLM."""

from __future__ import annotations

import contextlib
import signal
import subprocess
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters
from mcp_types import CallToolResult

from tests.mcp_helpers import child_env, fixture_command, line_with
from tests.test_demo import clean_env
from xai.agent import Agent
from xai.cli._mcp import parse_address
from xai.exceptions import ConfigurationError
from xai.mcp import agent_mcp_server
from xai.memory._ledger import Ledger
from xai.testing import ScriptedProvider

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(120)]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # one backend is enough for a subprocess driven over MCP


def serve_args(agent_dir: Path, *extra: str) -> list[str]:
    return ["-m", "xai", "mcp", "serve", "--agent-dir", str(agent_dir), *extra]


def stdio_params(agent_dir: Path) -> StdioServerParameters:
    """``python -m xai mcp serve`` as the client's command (forked warm: tests/mcp_helpers.py)."""
    command, *args = fixture_command(*serve_args(agent_dir))
    return StdioServerParameters(command=command, args=args, env=child_env())


def data(result: CallToolResult) -> Any:
    assert not result.is_error, result.content
    structured = result.structured_content
    assert structured is not None
    return structured.get("result", structured)


async def test_memory_and_sessions_over_stdio(tmp_path: Path) -> None:
    agent_dir = tmp_path / "agent"
    async with Client(stdio_params(agent_dir), read_timeout_seconds=60) as client:
        names = {t.name for t in (await client.list_tools()).tools}
        assert {"search_memory", "remember", "forget", "recent_facts", "send_message"} <= names

        # remember: a candidate the Agent adjudicates (provenance "mcp"), then a recurrence
        added = data(await client.call_tool("remember", {"text": "The user's cat is called Miso."}))
        assert added["decisions"] == ["add"]
        (fact,) = added["facts"]
        again = data(await client.call_tool("remember", {"text": "The user's cat is called Miso."}))
        assert again["decisions"] == ["reinforce"]

        recent = data(await client.call_tool("recent_facts", {}))
        assert [f["id"] for f in recent] == [fact["id"]]  # one fact, seen again
        hits = data(await client.call_tool("search_memory", {"query": "what is the cat's name"}))
        assert hits[0]["id"] == fact["id"] and hits[0]["score"] > 0

        empty = await client.call_tool("remember", {"text": "  "})
        assert empty.is_error

        # a Session: opened by purpose, continued by id, closed (its candidates adjudicated)
        first = data(
            await client.call_tool("send_message", {"text": "Hi, I'm Ada!", "purpose": "chat"})
        )
        assert first["status"] == "completed" and "Ada" in first["answer"]
        second = data(
            await client.call_tool(
                "send_message", {"text": "What is my name?", "session_id": first["session_id"]}
            )
        )
        assert second["session_id"] == first["session_id"] and "Ada" in second["answer"]
        await client.call_tool("close_session", {"session_id": first["session_id"]})
        texts = [f["text"] for f in data(await client.call_tool("recent_facts", {}))]
        assert "The user's name is Ada." in texts
        gone = await client.call_tool("send_message", {"text": "hi", "session_id": "nope"})
        assert gone.is_error

        # forget
        forgotten = data(await client.call_tool("forget", {"fact_id": fact["id"]}))
        assert forgotten["decision"] == "forget"
        assert fact["id"] not in {f["id"] for f in data(await client.call_tool("recent_facts", {}))}
        assert (await client.call_tool("forget", {"fact_id": "no-such-fact"})).is_error

    # The Agent stopped with the server; every write is in its ledger, the MCP one marked so.
    ledger = Ledger.read_path(agent_dir / "memory" / "ledger.jsonl")
    kinds = [(d.kind, d.session_id) for d in ledger]
    assert kinds[:2] == [("add", "mcp"), ("reinforce", "mcp")]
    assert ("forget", None) in kinds


async def test_a_second_server_on_the_same_agent_fails_clearly(tmp_path: Path) -> None:
    agent_dir = tmp_path / "agent"
    async with Client(stdio_params(agent_dir), read_timeout_seconds=60) as client:
        await client.list_tools()  # the first server holds the Agent (and its lock)
        second = await anyio.run_process(
            fixture_command(*serve_args(agent_dir)), env=clean_env(), check=False
        )
    assert second.returncode == 2
    message = second.stderr.decode()
    assert "is in use by process" in message, message
    assert str(agent_dir) in message


@asynccontextmanager
async def http_server(agent_dir: Path) -> AsyncIterator[tuple[str, anyio.abc.Process]]:
    process = await anyio.open_process(
        fixture_command(*serve_args(agent_dir, "--http", "127.0.0.1:0")),
        env=clean_env(),
        stdout=subprocess.DEVNULL,
    )
    try:
        assert process.stderr is not None
        with anyio.fail_after(60):
            line = await line_with(process.stderr, " at http://")
        yield line.rsplit(" at ", 1)[1].strip(), process
    finally:
        with anyio.CancelScope(shield=True):
            with contextlib.suppress(ProcessLookupError):  # ended already
                process.kill()
            await process.wait()
            await process.aclose()


async def test_the_address_is_found_in_a_read_that_holds_lines_before_it() -> None:
    """A slow reader gets a warning and the address line in one read: the address is still
    found (the wait above once dropped what followed the first line of a read, and waited
    its 60 s out in two parallel runs at load 15-20)."""
    send, receive = anyio.create_memory_object_stream[bytes](2)
    await send.send(b"warning: something\nxai mcp serve: listening at http://127.0.0.1:1/mcp\n")
    await send.aclose()
    with receive:
        line = await line_with(receive, " at http://")
    assert line.endswith("at http://127.0.0.1:1/mcp")


async def test_memory_and_sessions_over_streamable_http(tmp_path: Path) -> None:
    agent_dir = tmp_path / "agent"
    async with http_server(agent_dir) as (url, process):
        assert url.startswith("http://127.0.0.1:") and url.endswith("/mcp")
        async with Client(url, read_timeout_seconds=60) as client:
            added = data(await client.call_tool("remember", {"text": "The user lives in Lyon."}))
            assert added["decisions"] == ["add"]
            hits = data(await client.call_tool("search_memory", {"query": "Lyon", "k": 1}))
            assert hits[0]["text"] == "The user lives in Lyon."
            answer = data(await client.call_tool("send_message", {"text": "Hi, I'm Bea!"}))
            assert "Bea" in answer["answer"]
        process.send_signal(signal.SIGINT)  # uvicorn stops; the Agent closes its Sessions
        with anyio.fail_after(60):
            assert await process.wait() == 0
    texts = {
        f.text for d in Ledger.read_path(agent_dir / "memory" / "ledger.jsonl") for f in d.facts
    }
    assert {"The user lives in Lyon.", "The user's name is Bea."} <= texts


def test_every_tool_runs_on_the_agents_event_loop(tmp_path: Path) -> None:
    """The SDK runs a plain function tool in a worker thread, where reading the Agent's
    memory would race the adjudication writing it on the loop (``recent_facts`` did:
    "dictionary changed size during iteration"): every tool must be a coroutine."""
    agent = Agent(tmp_path / "agent", ScriptedProvider([]))
    server = agent_mcp_server(agent)
    tools = server._tool_manager.list_tools()  # the SDK's registry: is_async per tool
    assert {t.name for t in tools} >= {"search_memory", "recent_facts", "send_message"}
    assert [t.name for t in tools if not t.is_async] == []


def test_the_http_address_is_parsed_with_a_local_default() -> None:
    assert parse_address("127.0.0.1:8123") == ("127.0.0.1", 8123)
    assert parse_address(":0") == ("127.0.0.1", 0)
    assert parse_address("[::1]:9000") == ("::1", 9000)
    with pytest.raises(ConfigurationError, match="HOST:PORT"):
        parse_address("localhost")
