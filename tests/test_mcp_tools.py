"""MCP servers as tool sources: a real server process (tests/mcp_server_fixture.py, written
with the official SDK) over stdio and streamable HTTP, called by a ToolSet, a Session talking
to the OpenAI-wire test server, and an Agent."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from tests.mcp_helpers import Transport, child_env, fixture_server
from tests.session_helpers import history_problems
from xai.agent import Agent
from xai.exceptions import MCPServerError, ToolDefinitionError
from xai.messages import ToolCall, ToolMessage, ToolSpec, TurnStatus
from xai.providers import OpenAIProvider
from xai.session import Session, SessionConfig
from xai.telemetry import Telemetry
from xai.testing import OpenAIWireServer, Reply, ScriptedCall, ScriptedProvider
from xai.tools import MCPServer, ToolSet, tool

pytestmark = pytest.mark.anyio

TRANSPORTS = pytest.mark.parametrize("transport", ["stdio", "http"])


def state(server: MCPServer) -> str:
    """Read without narrowing: the state changes behind mypy's back."""
    return server.state


def call(name: str, arguments: str = "{}", call_id: str = "c1") -> ToolCall:
    return ToolCall(id=call_id, name=name, arguments=arguments)


@pytest.mark.backend_agnostic
@TRANSPORTS
async def test_tools_schemas_and_results_map_to_the_uniform_record(transport: Transport) -> None:
    async with fixture_server(transport) as server:
        tools = ToolSet(mcp=[server])
        assert not list(tools.specs)  # nothing until it is open
        async with tools.open():
            specs: dict[str, ToolSpec] = {s.name: s for s in tools.specs}
            assert {"convert", "forecast", "refuse", "picture", "block", "die"} <= set(specs)
            # the server's schema, as it listed it: enum, description, required
            convert = specs["convert"]
            assert convert.description == "Convert a distance between kilometres and miles."
            assert convert.parameters["properties"]["unit"]["enum"] == ["km", "mi"]
            assert (
                convert.parameters["properties"]["amount"]["description"]
                == "how much, in the source unit"
            )
            assert convert.parameters["required"] == ["amount", "unit"]

            ok = await tools.call(call("convert", '{"amount": 10, "unit": "km"}'))
            assert ok.success and ok.content == "10.0 km = 6.21 mi"
            assert ok.tool_name == "convert" and ok.arguments == {"amount": 10, "unit": "km"}

            structured = await tools.call(call("forecast", '{"city": "Oslo"}'))
            assert structured.success
            assert structured.result == {"city": "Oslo", "celsius": 21.5, "sky": "clear"}
            assert '"sky": "clear"' in structured.content

            refused = await tools.call(call("refuse", '{"reason": "no"}'))
            assert not refused.success and refused.result is None
            assert refused.error is not None and "refused: no" in refused.error

            # the server validates arguments against its own schema
            invalid = await tools.call(call("convert", '{"amount": "many", "unit": "km"}'))
            assert not invalid.success and "amount" in (invalid.error or "")

            picture = await tools.call(call("picture"))
            assert picture.success
            assert picture.content == "a red dot\n[image: image/png, 30 bytes]"

            unknown = await tools.call(call("nope"))
            assert not unknown.success and "convert" in (unknown.error or "")
        assert state(server) == "closed" and tools.specs == ()


@pytest.mark.backend_agnostic
@TRANSPORTS
async def test_a_session_sees_the_servers_schema_and_calls_its_tools(
    transport: Transport, openai_server: OpenAIWireServer, provider: OpenAIProvider
) -> None:
    openai_server.push(
        Reply(
            tool_calls=(
                ScriptedCall(name="forecast", arguments={"city": "Oslo"}, id="f1"),
                ScriptedCall(name="refuse", arguments={"reason": "rain"}, id="r1"),
            )
        ),
        Reply(text="Clear skies in Oslo."),
    )
    spans = InMemorySpanExporter()
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(spans))
    telemetry = Telemetry(tracer_provider=tracer_provider)
    async with fixture_server(transport) as server:
        async with Session(provider, tools=ToolSet(mcp=[server]), telemetry=telemetry) as session:
            assert state(server) == "open"  # the Session started it
            outcome = await session.send("weather in Oslo?")
            history = session.history
        assert state(server) == "closed"  # and stopped it when it closed
    assert outcome.status is TurnStatus.COMPLETED and outcome.text == "Clear skies in Oslo."
    first, second = openai_server.chat_requests()
    wire_tools = {t["function"]["name"]: t["function"] for t in first.body["tools"]}
    assert wire_tools["convert"]["parameters"]["properties"]["unit"]["enum"] == ["km", "mi"]
    # an MCP tool's span carries its description, as a Python tool's does
    (traced,) = [s for s in spans.get_finished_spans() if s.name == "execute_tool forecast"]
    assert traced.attributes is not None
    assert traced.attributes["gen_ai.tool.description"] == wire_tools["forecast"]["description"]
    tracer_provider.shutdown()
    results = {m.tool_call_id: m for m in history if isinstance(m, ToolMessage)}
    assert results["f1"].content.startswith("{") and '"celsius": 21.5' in results["f1"].content
    assert "refused: rain" in results["r1"].content
    sent = {m["tool_call_id"]: m["content"] for m in second.body["messages"] if m["role"] == "tool"}
    assert "refused: rain" in sent["r1"]
    assert history_problems(history) == []


@TRANSPORTS
async def test_a_timeout_is_an_error_result_and_cancels_the_call_on_the_server(
    transport: Transport,
) -> None:
    async with fixture_server(transport, timeout=1.0) as server:
        tools = ToolSet(mcp=[server])
        async with tools.open():
            result = await tools.call(call("block", '{"tag": "t"}'))
            assert not result.success and result.error == "timed out after 1.0s"
            # the server saw the cancellation (this waits for it: no sleep)
            seen = await tools.call(call("wait_cancelled", '{"tag": "t"}'), default_timeout=20)
            assert seen.success and seen.content == "cancelled"


@TRANSPORTS
async def test_cancelling_the_turn_cancels_the_mcp_request(transport: Transport) -> None:
    provider = ScriptedProvider(
        [
            Reply(tool_calls=(ScriptedCall(name="block", arguments={"tag": "q"}, id="b1"),)),
            Reply(text="still here"),
        ]
    )
    async with fixture_server(transport) as server:
        tools = ToolSet(mcp=[server])
        async with Session(provider, tools=tools) as session:
            handle = session.send("block please")
            started = await tools.call(call("wait_started", '{"tag": "q"}'), default_timeout=20)
            assert started.content == "started"
            assert session.cancel()
            outcome = await handle
            assert outcome.status is TurnStatus.CANCELLED
            seen = await tools.call(call("wait_cancelled", '{"tag": "q"}'), default_timeout=20)
            assert seen.content == "cancelled"
            # the history stays valid and the next turn runs
            assert (await session.send("and now?")).text == "still here"
            assert history_problems(session.history) == []


@pytest.mark.backend_agnostic
@TRANSPORTS
async def test_a_server_killed_mid_call_is_a_tool_error_and_the_session_goes_on(
    transport: Transport,
) -> None:
    provider = ScriptedProvider(
        [
            Reply(tool_calls=(ScriptedCall(name="die", id="d1"),)),
            Reply(
                tool_calls=(
                    ScriptedCall(name="convert", arguments={"amount": 1, "unit": "km"}, id="c2"),
                )
            ),
            Reply(text="the tool server is gone"),
        ]
    )
    async with (
        fixture_server(transport) as server,
        Session(provider, tools=ToolSet(mcp=[server])) as session,
    ):
        outcome = await session.send("crash it")
        assert outcome.status is TurnStatus.COMPLETED
        assert outcome.text == "the tool server is gone"
        results = {m.tool_call_id: m for m in session.history if isinstance(m, ToolMessage)}
        assert "closed the connection" in results["d1"].content
        assert results["c2"].content.startswith("Error: ")
        assert history_problems(session.history) == []


@pytest.mark.backend_agnostic
async def test_a_server_that_cannot_start_is_named_in_a_clear_error(tmp_path: Path) -> None:
    missing = MCPServer.stdio(str(tmp_path / "no-such-server"), name="ghost")
    with pytest.raises(MCPServerError, match="MCP server 'ghost' failed to start") as info:
        async with Session(ScriptedProvider(), tools=ToolSet(mcp=[missing])):
            pass
    assert info.value.server == "ghost"
    mute = MCPServer.stdio(sys.executable, ["-c", "pass"], name="mute")
    with pytest.raises(MCPServerError, match="'mute'"):
        async with ToolSet(mcp=[mute]).open():
            pass
    assert state(mute) == "closed"


@pytest.mark.backend_agnostic
async def test_a_server_that_fails_before_connecting_closes_its_http_client(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Whatever fails after the HTTP client is made (here the SDK client's construction),
    the client is closed: its connection pool is not left to the garbage collector."""
    server = MCPServer.http("http://127.0.0.1:9/mcp", name="early")
    made: list[Any] = []
    make = server._http_client

    def recorded() -> Any:
        made.append(make())
        return made[-1]

    def broken(http: Any) -> Any:
        raise ValueError("no client today")

    monkeypatch.setattr(server, "_http_client", recorded)
    monkeypatch.setattr(server, "_client_for", broken)
    with pytest.raises(MCPServerError, match=r"'early' failed to start.*no client today"):
        async with ToolSet(mcp=[server]).open():
            pass
    (http,) = made
    assert http.is_closed


@pytest.mark.backend_agnostic
async def test_a_tool_name_clash_asks_for_a_prefix() -> None:
    @tool
    def convert(x: int) -> int:
        """Clash."""
        return x

    async with fixture_server("stdio") as server:
        with pytest.raises(ToolDefinitionError, match="give the server a prefix"):
            async with ToolSet([convert], mcp=[server]).open():
                pass
        assert state(server) == "closed"
    async with (
        fixture_server("stdio", prefix="fx.") as server,
        ToolSet([convert], mcp=[server]).open() as tools,
    ):
        assert "fx_convert" in {s.name for s in tools.specs}
        result = await tools.call(call("fx_convert", '{"amount": 2, "unit": "mi"}'))
        assert result.success and result.content == "2.0 mi = 3.22 km"


_DELEGATE_SERVER = """
from mcp.server.mcpserver import MCPServer

server = MCPServer("has-a-delegate-tool", log_level="WARNING")


@server.tool()
def delegate(task: str) -> str:
    \"\"\"A tool named as a Session's own.\"\"\"
    return task


server.run()
"""


@pytest.mark.backend_agnostic
async def test_no_request_lists_a_tool_name_twice_whoever_opened_the_server(
    tmp_path: Path,
) -> None:
    """A clash is refused when the set opens, not only for servers the set starts: a server
    its owner opened, a tool ``derive`` added, and a Session's own ``delegate``."""

    @tool
    def convert(x: int) -> int:
        """Clash."""
        return x

    async with fixture_server("stdio") as server, server:  # opened by its owner
        with pytest.raises(ToolDefinitionError, match="give the server a prefix"):
            async with ToolSet([convert], mcp=[server]).open():
                pass
        derived = ToolSet(mcp=[server]).derive(context=None, extra=[convert])
        with pytest.raises(ToolDefinitionError, match="give the server a prefix"):
            async with derived.open():
                pass
        with pytest.raises(ToolDefinitionError, match="give the server a prefix"):
            derived.specs  # noqa: B018  (what a request would list: refused, not sent)
        assert state(server) == "open"  # left to its owner
    with pytest.raises(ToolDefinitionError, match="two tools are named"):
        ToolSet([convert]).derive(context=None, extra=[convert])
    script = tmp_path / "delegate_server.py"
    script.write_text(_DELEGATE_SERVER)
    own = MCPServer.stdio(sys.executable, [str(script)], name="own", env=child_env())
    async with (
        OpenAIWireServer([Reply(text="never asked")]) as wire,
        OpenAIProvider(wire.llm_config()) as provider,
    ):
        session = Session(provider, tools=ToolSet(mcp=[own]), config=SessionConfig(delegation=True))
        with pytest.raises(ToolDefinitionError, match="'delegate'"):
            async with session:
                await session.send("go")
        assert wire.chat_requests() == []  # nothing was sent
    assert state(own) == "closed"


@pytest.mark.backend_agnostic
async def test_an_agent_owns_its_servers_and_its_sessions_share_them(tmp_path: Path) -> None:
    provider = ScriptedProvider(
        [
            Reply(tool_calls=(ScriptedCall(name="forecast", arguments={"city": "Rome"}, id="f"),)),
            Reply(text="sunny"),
        ]
    )
    async with fixture_server("stdio") as server:
        agent = Agent(tmp_path / "agent", provider, tools=ToolSet(mcp=[server]))
        async with agent:
            assert state(server) == "open"
            session = await agent.open_session(purpose="weather")
            assert (await session.send("weather in Rome?")).text == "sunny"
            await session.close()
            assert state(server) == "open"  # the Session did not own it
        assert state(server) == "closed"


@pytest.mark.backend_agnostic
async def test_a_server_you_opened_is_left_open_by_the_session() -> None:
    provider = ScriptedProvider([Reply(text="hi")])
    async with fixture_server("stdio") as server, server:
        async with Session(provider, tools=ToolSet(mcp=[server])) as session:
            await session.send("hello")
        assert state(server) == "open" and server.specs
    assert state(server) == "closed"
