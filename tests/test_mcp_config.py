"""MCP servers configured in a scenario file (run_agent) and in the runner's input file."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tests.mcp_helpers import FIXTURE, child_env
from xai._redact import redact
from xai.core import ScenarioError, arun_agent, load_scenario
from xai.providers import OpenAIProvider
from xai.runner import InputError, load_input, run_input
from xai.testing import OpenAIWireServer, Reply, ScriptedCall
from xai.tools import MCPHttp, MCPStdio

pytestmark = [pytest.mark.anyio, pytest.mark.backend_agnostic]

STDIO = {
    "transport": "stdio",
    "name": "fixture",
    "command": sys.executable,
    "args": [FIXTURE],
    "env": child_env(),
}


def test_scenario_and_runner_input_parse_both_transports(tmp_path: Path) -> None:
    http = {"transport": "http", "name": "remote", "url": "http://127.0.0.1:9/mcp"}
    scenario = load_scenario({"scenario_id": "s", "mcp_servers": [STDIO, http]})
    stdio_config, http_config = scenario.mcp_servers
    assert isinstance(stdio_config, MCPStdio) and stdio_config.args == [FIXTURE]
    assert isinstance(http_config, MCPHttp) and http_config.url.endswith("/mcp")
    with pytest.raises(ScenarioError, match="mcp_servers"):
        load_scenario({"scenario_id": "s", "mcp_servers": [{"transport": "pigeon", "name": "x"}]})

    path = tmp_path / "input.json"
    path.write_text(json.dumps({"conversation_id": "c", "user_input": "hi", "mcp_servers": [http]}))
    assert load_input(path).mcp_servers == [http_config]
    path.write_text(json.dumps({"conversation_id": "c", "user_input": "hi", "mcp_servers": [{}]}))
    with pytest.raises(InputError, match="mcp_servers"):
        load_input(path)


async def test_a_scenario_runs_with_an_mcp_servers_tools(
    openai_server: OpenAIWireServer, provider: OpenAIProvider
) -> None:
    openai_server.push(
        Reply(tool_calls=(ScriptedCall(name="forecast", arguments={"city": "Lima"}),)),
        Reply(text='{"answer": "Clear, 21.5 C.", "key_points": ["clear"]}'),
    )
    config = {"scenario_id": "weather", "mcp_servers": [STDIO]}
    result = await arun_agent(config, "Weather in Lima?", provider=provider)
    assert result.status == "success", result.error
    (call,) = result.tool_calls
    assert call.tool_name == "forecast" and call.success
    assert call.result == {"city": "Lima", "celsius": 21.5, "sky": "clear"}


async def test_a_runner_input_runs_with_an_mcp_servers_tools(
    tmp_path: Path, openai_server: OpenAIWireServer, provider: OpenAIProvider
) -> None:
    openai_server.push(
        Reply(tool_calls=(ScriptedCall(name="convert", arguments={"amount": 5, "unit": "mi"}),)),
        Reply(text="About 8 km."),
    )
    path = tmp_path / "input.json"
    path.write_text(
        json.dumps(
            {
                "conversation_id": "c",
                "user_input": "5 miles in km?",
                "toolset": "none",
                "mcp_servers": [STDIO],
            }
        )
    )
    await run_input(load_input(path), tmp_path / "out", home=tmp_path / "home", provider=provider)
    trace = json.loads((tmp_path / "out" / "trace.json").read_text())
    (turn,) = trace["turns"]
    (tool_call,) = turn["tool_calls"]
    assert tool_call["name"] == "convert" and tool_call["result"] == "5.0 mi = 8.05 km"


def test_credentials_in_a_servers_settings_never_show() -> None:
    """Headers and environment values that are credentials (by name, or shaped like a key)
    are masked in ``repr`` and registered with the redaction net, like ``LLMConfig``'s.
    (The net is process-wide: these values are this test's own, so no other test's text
    contains them.)"""
    http = MCPHttp(
        name="remote",
        url="http://127.0.0.1:9/mcp",
        headers={"Authorization": "Bearer mcp-http-token-7f3a9c", "X-Route": "eu-west"},
    )
    stdio = MCPStdio(
        name="files",
        command="serve-files",
        env={"GITHUB_TOKEN": "ghp_mcpstdio_7f3a9c", "MODE": "read-only", "X": "sk-mcpstdio7f3a9c"},
    )
    for config, secrets, kept in (
        (http, ["mcp-http-token-7f3a9c"], ["eu-west"]),
        (stdio, ["ghp_mcpstdio_7f3a9c", "sk-mcpstdio7f3a9c"], ["read-only"]),
    ):
        shown = f"{config!r} {config}"
        assert all(s not in shown for s in secrets) and all(k in shown for k in kept)
        assert all(redact(f"failed with {s}") == "failed with ***" for s in secrets)
