"""Wire behaviours a real llama.cpp server showed (issue 19), reproduced by the scripted server's quirks.

Each test turns a quirk of ``OpenAIWireServer`` on and runs xai through the
real ``openai`` client against it, so CI keeps the fix without a real model.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.session_helpers import drain, history_problems, summary_responder
from xai.events import Compacted
from xai.exceptions import ConfigurationError, ContextTooLongError, StreamError
from xai.messages import (
    AssistantMessage,
    StopReason,
    ToolCall,
    ToolMessage,
    TurnStatus,
    UserMessage,
)
from xai.providers import (
    OpenAIProvider,
    ProviderEvent,
    ProviderRequest,
    RetryPolicy,
    StreamFinished,
    ToolCallChunk,
    ToolCallReady,
)
from xai.query import Query, QueryConfig
from xai.session import Session, SessionConfig
from xai.testing import OpenAIWireServer, Reply, ScriptedCall, ScriptedProvider
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


async def stream_events(provider: OpenAIProvider, text: str) -> list[ProviderEvent]:
    request = ProviderRequest(messages=(UserMessage(content=text),), tools=ToolSet([lookup]).specs)
    return [event async for event in provider.stream(request)]


async def test_tool_calls_with_the_id_and_name_on_every_piece_are_assembled_once(
    openai_server: OpenAIWireServer, provider: OpenAIProvider
) -> None:
    openai_server.tool_call_style = "llama.cpp"
    long = "a fairly long query to split into pieces"
    openai_server.push(
        Reply(
            tool_calls=(
                ScriptedCall(name="lookup", arguments={"q": long}, id="call_a"),
                ScriptedCall(name="lookup", arguments={"q": "y"}, id="call_b"),
            ),
            argument_chunk_chars=5,
        )
    )
    events = await stream_events(provider, "Find two things.")
    ready = [e.call for e in events if isinstance(e, ToolCallReady)]
    assert ready == [
        ToolCall("call_a", "lookup", json.dumps({"q": long}, separators=(",", ":"))),
        ToolCall("call_b", "lookup", '{"q":"y"}'),
    ]
    pieces = [e for e in events if isinstance(e, ToolCallChunk)]
    assert len(pieces) > 4  # the arguments did come in pieces, each naming its call again
    # The id and the name are announced once per call, as OpenAI streams them.
    assert [(p.index, p.id, p.name) for p in pieces if p.id or p.name] == [
        (0, "call_a", "lookup"),
        (1, "call_b", "lookup"),
    ]
    finished = events[-1]
    assert isinstance(finished, StreamFinished) and finished.reason == "tool_calls"


async def test_a_tool_loop_runs_on_llama_cpp_style_and_legacy_function_call_streams(
    openai_server: OpenAIWireServer, provider: OpenAIProvider
) -> None:
    for style in ("llama.cpp", "legacy"):
        openai_server.tool_call_style = style
        openai_server.push(
            Reply(
                tool_calls=(ScriptedCall(name="lookup", arguments={"q": "paris"}),),
                argument_chunk_chars=3,
            ),
            Reply(text="Done."),
        )
        result = await Query(provider, tools=ToolSet([lookup])).run([], "Find Paris.")
        assert result.text == "Done.", style
        [call] = [
            c for m in result.messages if isinstance(m, AssistantMessage) for c in m.tool_calls
        ]
        assert call.name == "lookup" and json.loads(call.arguments) == {"q": "paris"}
        [tool_result] = [m for m in result.messages if isinstance(m, ToolMessage)]
        assert tool_result.content == "found paris"


async def test_an_empty_stream_past_the_window_is_an_inferred_context_overflow(
    openai_server: OpenAIWireServer, provider: OpenAIProvider
) -> None:
    openai_server.empty_stream_over = 1000
    with pytest.raises(ContextTooLongError) as caught:
        _ = await stream_events(provider, "x" * 2000)
    assert caught.value.inferred and "empty body" in str(caught.value)
    assert len(openai_server.chat_requests()) == 1  # not retried: it would only fail again
    openai_server.push(Reply(text="fine"))
    events = await stream_events(provider, "short")
    assert isinstance(events[-1], StreamFinished)


async def test_a_session_compacts_and_retries_after_an_empty_stream(
    openai_server: OpenAIWireServer, provider: OpenAIProvider
) -> None:
    # Turns one and two fit; turn three's request passes 3000 characters and comes back
    # empty, as llama.cpp answers past its window. The summariser's request is small.
    openai_server.empty_stream_over = 3000
    openai_server.script.add_responder(summary_responder("short summary"))
    openai_server.push(
        Reply(text="first answer"), Reply(text="second answer"), Reply(text="after compaction")
    )
    config = SessionConfig(keep_recent_tokens=10, summariser_input_tokens=100)
    async with Session(provider, config=config) as session:
        events = session.subscribe()
        await session.send("one " + "x" * 1200)
        await session.send("two " + "y" * 1200)
        outcome = await session.send("three " + "z" * 600)
        compactions = [e.event for e in drain(events) if isinstance(e.event, Compacted)]
    assert outcome.status is TurnStatus.COMPLETED and outcome.text == "after compaction"
    assert [(c.reason, c.method) for c in compactions] == [("context_too_long", "summary")]
    sizes = [len(json.dumps(r.body["messages"])) for r in openai_server.chat_requests()]
    assert sizes[2] > 3000 and sizes[-1] < 3000  # the empty answer, then the compacted retry


@pytest.mark.parametrize("cut", [False, True])
async def test_the_request_after_an_empty_answer_goes_through_first_time(
    openai_server: OpenAIWireServer, provider: OpenAIProvider, cut: bool
) -> None:
    # The empty answer ends cleanly or with the connection cut after its headers; either
    # way the next request must not land on a dead keep-alive connection (no retry needed).
    openai_server.empty_stream_over = 1000
    openai_server.cut_empty_stream = cut
    with pytest.raises((ContextTooLongError, StreamError)):
        _ = await stream_events(provider, "x" * 2000)
    openai_server.push(Reply(text="fine"))
    events = await stream_events(provider, "short")
    assert isinstance(events[-1], StreamFinished)
    assert len(openai_server.chat_requests()) == 2  # the empty one and one more: no retry


async def test_a_runaway_answer_is_cut_at_the_request_limit(
    openai_server: OpenAIWireServer,
) -> None:
    # A small model with no max_tokens streamed for 400 s: `timeout` (between bytes) never
    # fired because bytes kept coming. The request limit bounds the whole answer.
    openai_server.runaway = True
    provider = openai_server.provider(
        retry=RetryPolicy(max_retries=0), timeout=5.0, request_limit=0.3
    )
    async with provider:
        result = await Query(provider).run([], "Tell me a story.")
    assert result.stop_reason is StopReason.ERROR and result.error is not None
    assert result.error.type == "ProviderTimeoutError" and "request limit" in result.error.message
    assert result.text.startswith("and then ")  # what came is kept
    assert history_problems(result.messages) == []


async def test_a_runaway_answer_with_a_cap_ends_as_length(
    openai_server: OpenAIWireServer, provider: OpenAIProvider
) -> None:
    openai_server.runaway = True
    result = await Query(provider, config=QueryConfig(max_tokens=20)).run([], "Tell me.")
    assert result.stop_reason is StopReason.LENGTH and result.text == "and then " * 20


async def test_a_tool_is_called_when_forced_on_the_first_round_only(
    openai_server: OpenAIWireServer, provider: OpenAIProvider
) -> None:
    openai_server.tools_only_when_forced = True
    call = Reply(tool_calls=(ScriptedCall(name="lookup", arguments={"q": "x"}),))
    openai_server.push(call, call, Reply(text="Found it."))
    query = Query(provider, tools=ToolSet([lookup]))
    prose = await query.run([], "Find x.")  # not forced: the model writes about the tool
    assert prose.text == "I would use lookup for that." and not prose.tool_results
    forced = Query(provider, tools=ToolSet([lookup]), config=QueryConfig(tool_choice="lookup"))
    result = await forced.run([], "Find x.")
    assert [r.content for r in result.tool_results] == ["found x"]
    assert result.text == "Found it."
    sent = [r.body.get("tool_choice") for r in openai_server.chat_requests()]
    assert sent == [None, {"type": "function", "function": {"name": "lookup"}}, None]


def test_a_tool_choice_must_name_a_tool() -> None:
    provider = ScriptedProvider([])
    with pytest.raises(ConfigurationError, match="not one of the tools"):
        Query(provider, tools=ToolSet([lookup]), config=QueryConfig(tool_choice="other"))
    with pytest.raises(ConfigurationError, match="needs at least one tool"):
        Query(provider, config=QueryConfig(tool_choice="required"))


def test_a_provider_leaves_no_half_imported_httpx_for_its_requests() -> None:
    # chromadb imports httpx in a worker thread when a memory opens; the SDK looks httpx up
    # in sys.modules on every request and found it half-imported. A provider imports it whole.
    code = (
        "import sys\n"
        "from xai.config import LLMConfig\n"
        "from xai.providers import OpenAIProvider\n"
        "OpenAIProvider(LLMConfig(model='m', base_url='http://127.0.0.1:9/v1'))\n"
        "assert hasattr(sys.modules.get('httpx'), 'Timeout'), 'httpx not imported whole'\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
