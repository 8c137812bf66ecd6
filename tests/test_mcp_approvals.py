"""Held tool calls over MCP: ``send_message`` returns ``awaiting_approval`` with the calls,
``list_approvals`` lists them, ``decide_approval`` decides one and returns the answer
(the official SDK's client, in memory, against a running Agent)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from tests.test_approvals_host import Vault, scripted
from tests.test_mcp_serve import data
from xai.agent import Agent
from xai.mcp import agent_mcp_server
from xai.providers import OpenAIProvider
from xai.testing import OpenAIWireServer

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(120)]

__all__ = ["scripted"]  # the fixture, imported


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def test_a_held_call_is_listed_and_decided_over_mcp(
    tmp_path: Path, scripted: OpenAIWireServer, provider: OpenAIProvider
) -> None:
    vault = Vault()
    async with (
        Agent(tmp_path, provider, tools=[vault.tool]) as agent,
        Client(agent_mcp_server(agent)) as client,
    ):
        names = {t.name for t in (await client.list_tools()).tools}
        assert {"list_approvals", "decide_approval"} <= names
        sent: Any = data(await client.call_tool("send_message", {"text": "open the vault"}))
        assert sent["status"] == "awaiting_approval"
        assert [(p["call_id"], p["tool"]) for p in sent["pending"]] == [("v1", "open_vault")]
        listed = data(await client.call_tool("list_approvals", {}))
        assert [p["arguments"] for p in listed] == ['{"door":"A"}']
        bad = await client.call_tool(
            "decide_approval",
            {"session_id": sent["session_id"], "call_id": "v1", "approved": True,
             "arguments": {"door": 7}},
        )  # fmt: skip
        assert bad.is_error  # an edit the schema refuses: nothing recorded
        answer = data(
            await client.call_tool(
                "decide_approval",
                {
                    "session_id": sent["session_id"],
                    "call_id": "v1",
                    "approved": True,
                    "arguments": {"door": "B"},
                },
            )
        )
        assert answer["status"] == "completed" and answer["pending"] == []
        assert data(await client.call_tool("list_approvals", {})) == []
    assert vault.opened == ["B"]
