"""The OpenAI Responses API: the wire server's ``/v1/responses`` read by the real ``openai``
client's ``client.responses.create(stream=True)``, and ``OpenAIProvider`` in Responses mode
(streamed text, tool calls, usage) through a Query, a Session and the demo model."""

from __future__ import annotations

import json
from contextlib import aclosing
from typing import Any

import openai
import pytest

from xai.config import LLMConfig
from xai.messages import TurnStatus
from xai.providers import OpenAIProvider
from xai.query import Query, QueryConfig
from xai.structured import ask_structured
from xai.testing import OpenAIWireServer, Reply, ScriptedCall

pytestmark = pytest.mark.anyio


def responses_provider(server: OpenAIWireServer) -> OpenAIProvider:
    return OpenAIProvider(server.llm_config(api="responses", max_retries=0))


async def test_the_real_client_reads_the_streamed_events(openai_server: OpenAIWireServer) -> None:
    openai_server.push(
        Reply(
            thinking="Paris first.",
            text="Checking.",
            tool_calls=(ScriptedCall(name="get_weather", arguments={"city": "Paris"}, id="c1"),),
            chunk_chars=3,
            argument_chunk_chars=5,
        )
    )
    async with openai.AsyncOpenAI(base_url=openai_server.base_url, api_key="k") as client:
        stream = await client.responses.create(
            model="m",
            input=[{"role": "user", "content": "Weather in Paris?"}],
            tools=[
                {
                    "type": "function",
                    "name": "get_weather",
                    "description": "the weather",
                    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
                    "strict": False,
                }
            ],
            stream=True,
        )
        events: list[Any] = [event async for event in stream]  # the SDK's typed events
    types = [event.type for event in events]
    assert types[:2] == ["response.created", "response.in_progress"]
    assert types[-1] == "response.completed"
    assert [e.sequence_number for e in events] == list(range(len(events)))
    text = "".join(e.delta for e in events if e.type == "response.output_text.delta")
    thinking = "".join(e.delta for e in events if e.type == "response.reasoning_summary_text.delta")
    arguments = "".join(
        e.delta for e in events if e.type == "response.function_call_arguments.delta"
    )
    assert (text, thinking, json.loads(arguments)) == (
        "Checking.",
        "Paris first.",
        {"city": "Paris"},
    )
    assert types.count("response.output_text.delta") == 3  # streamed in pieces
    final = events[-1].response
    assert [item.type for item in final.output] == ["reasoning", "message", "function_call"]
    call = final.output[2]
    assert (call.call_id, call.name, call.arguments) == ("c1", "get_weather", '{"city":"Paris"}')
    assert final.output_text == "Checking."  # the SDK's own convenience reads our shape
    assert final.usage is not None and final.usage.input_tokens > 0
    # Each message item: added, content part, deltas, done, in that order.
    message = [t for t in types if "output_text" in t or "content_part" in t]
    assert (
        message[0] == "response.content_part.added" and message[-1] == "response.content_part.done"
    )


async def test_a_whole_response_without_stream(openai_server: OpenAIWireServer) -> None:
    openai_server.push(Reply(text="whole"))
    async with openai.AsyncOpenAI(base_url=openai_server.base_url, api_key="k") as client:
        response = await client.responses.create(model="m", input="hi")
    assert response.output_text == "whole" and response.status == "completed"


async def test_the_provider_runs_a_tool_loop_over_the_responses_api(
    openai_server: OpenAIWireServer,
) -> None:
    def get_weather(city: str) -> str:
        """The weather in a city."""
        return f"rain in {city}"

    openai_server.push(
        Reply(
            text="Let me check.",
            tool_calls=(
                ScriptedCall(name="get_weather", arguments={"city": "Paris"}),
                ScriptedCall(name="get_weather", arguments={"city": "Tokyo"}),
            ),
            usage={"prompt_tokens": 40, "completion_tokens": 9},
        ),
        Reply(text="Rain in both.", usage={"prompt_tokens": 70, "completion_tokens": 4}),
    )
    async with responses_provider(openai_server) as provider:
        result = await Query(provider, tools=[get_weather]).run([], "Paris and Tokyo?")
    assert result.error is None and result.text == "Rain in both."
    # the calls run concurrently: their results come in the order they finish
    assert sorted(m.content for m in result.tool_results) == ["rain in Paris", "rain in Tokyo"]
    assert (result.usage.prompt_tokens, result.usage.completion_tokens) == (110, 13)
    assert not result.usage.estimated  # the usage came from response.completed
    assert openai_server.chat_requests() == []  # nothing went to Chat Completions
    first, second = openai_server.responses_requests()
    assert first.body["stream"] is True and first.body["store"] is False
    assert first.body["tools"][0]["name"] == "get_weather"  # the flat Responses tool shape
    sent = second.body["input"]
    calls = [item for item in sent if item.get("type") == "function_call"]
    outputs = [item for item in sent if item.get("type") == "function_call_output"]
    assert sorted(c["call_id"] for c in calls) == sorted(o["call_id"] for o in outputs)
    assert sorted(o["output"] for o in outputs) == ["rain in Paris", "rain in Tokyo"]
    assert not openai_server.violations


async def test_length_and_structured_output_over_the_responses_api(
    openai_server: OpenAIWireServer,
) -> None:
    from xai.messages import StopReason, UserMessage

    openai_server.push(Reply(text="cut", finish_reason="length"))
    async with responses_provider(openai_server) as provider:
        result = await Query(provider, config=QueryConfig(max_tokens=5)).run([], "long story")
        assert result.stop_reason == StopReason.LENGTH
        assert openai_server.responses_requests()[0].body["max_output_tokens"] == 5

        import msgspec

        class City(msgspec.Struct):
            name: str

        openai_server.push(Reply(text='{"name": "Porto"}'))
        parsed, _ = await ask_structured(provider, [UserMessage(content="a city")], City)
    assert parsed.value == City(name="Porto")
    fmt = openai_server.responses_requests()[-1].body["text"]["format"]
    assert fmt["type"] == "json_schema" and fmt["name"] == "City" and "schema" in fmt


async def test_http_errors_are_typed_as_on_chat_completions(
    openai_server: OpenAIWireServer,
) -> None:
    from xai.testing import HttpError

    openai_server.push(Reply(fault=HttpError(status=503)), Reply(text="after a retry"))
    config = openai_server.llm_config(api="responses", max_retries=1)
    async with OpenAIProvider(config) as provider:
        result = await Query(provider).run([], "hi")
    assert result.text == "after a retry" and len(openai_server.responses_requests()) == 2


def test_llm_api_selects_the_mode_from_the_environment() -> None:
    config = LLMConfig.from_env(
        {"LLM_MODEL": "m", "LLM_API": "responses", "LLM_BASE_URL": "http://127.0.0.1:9/v1"}
    )
    assert config.api == "responses"


async def test_a_session_with_the_demo_model_over_the_responses_api(
    openai_server: OpenAIWireServer,
) -> None:
    from xai.session import Session
    from xai.testing import demo_model

    openai_server.script.add_responder(demo_model)
    async with responses_provider(openai_server) as provider, Session(provider) as session:
        hello = await session.send("I'm Ada.")
        weather = await session.send("What's the weather in Paris and Tokyo?")
    assert hello.status == TurnStatus.COMPLETED and hello.text == "Nice to meet you, Ada!"
    assert weather.text.startswith("Here is what I found:")


async def _decoded(*events: dict[str, Any] | bytes) -> list[Any]:
    from xai.providers._responses import decode_responses

    async def body() -> Any:
        for event in events:
            yield (
                event
                if isinstance(event, bytes)
                else b"data: " + json.dumps(event).encode() + b"\n\n"
            )

    async with aclosing(body()) as raw, aclosing(decode_responses(raw)) as decoded:
        return [event async for event in decoded]


async def test_failures_in_the_stream_are_typed_errors() -> None:
    from xai.exceptions import ContextTooLongError, MalformedStreamError, ServerError, StreamError

    text = {"type": "response.output_text.delta", "delta": "Hel", "output_index": 0}
    with pytest.raises(StreamError, match=r"before response\.completed"):
        await _decoded(text)  # cut before the end
    with pytest.raises(MalformedStreamError):
        await _decoded(text, b"data: {not json\n\n")
    failed = {
        "type": "response.failed",
        "response": {"error": {"code": "context_length_exceeded", "message": "too long"}},
    }
    with pytest.raises(ContextTooLongError, match="too long"):
        await _decoded(failed)
    with pytest.raises(ServerError, match="overloaded"):
        await _decoded({"type": "error", "code": "server_error", "message": "overloaded"})
