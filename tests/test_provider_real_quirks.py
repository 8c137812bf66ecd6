"""Wire behaviours a real llama.cpp server showed (issue 19), reproduced by the scripted server's quirks.

Each test turns a quirk of ``OpenAIWireServer`` on and runs xai through the
real ``openai`` client against it, so CI keeps the fix without a real model.
"""

from __future__ import annotations

import pytest

from xai.providers import OpenAIProvider
from xai.query import Query
from xai.testing import OpenAIWireServer, Reply, ScriptedCall
from xai.tools import ToolSet, tool

pytestmark = pytest.mark.anyio


@tool
def lookup(q: str) -> str:
    """Look something up."""
    return f"found {q}"


async def test_a_tool_loop_survives_a_server_that_refuses_null_content(
    openai_server: OpenAIWireServer, provider: OpenAIProvider
) -> None:
    openai_server.refuse_null_tool_content = True
    openai_server.push(
        Reply(tool_calls=(ScriptedCall(name="lookup", arguments={"q": "x"}),)),
        Reply(text="Done."),
    )
    result = await Query(provider, tools=ToolSet([lookup])).run([], "Find x.")
    assert result.text == "Done." and result.error is None
    [_, second] = openai_server.chat_requests()
    sent = second.body["messages"][1]
    assert sent["role"] == "assistant" and sent["tool_calls"] and sent["content"] == ""
