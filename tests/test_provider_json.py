"""Whole JSON answers: a gateway that ignores ``stream``, and ``LLMConfig(stream=False)``.

Both give the provider events a stream of the same answer gives, so a Query
cannot tell them apart; the request validator checks every request sent.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import msgspec
import pytest

from tests.conftest import FAST_RETRY
from xai.exceptions import MalformedStreamError, ProviderError, StreamError
from xai.messages import StopReason, ToolCall, ToolMessage, Usage, UserMessage
from xai.providers import (
    OpenAIProvider,
    ProviderEvent,
    ProviderRequest,
    StreamFinished,
    TextChunk,
    ThinkingChunk,
    ToolCallChunk,
    ToolCallReady,
    UsageReport,
    decode_body,
    decode_completion,
)
from xai.query import Query
from xai.testing import (
    DropConnection,
    MalformedChunk,
    OpenAIWireServer,
    Reply,
    ScriptedCall,
)
from xai.tools import ToolSet, tool

pytestmark = pytest.mark.anyio

HELLO = ProviderRequest(messages=(UserMessage(content="hello"),))

RICH = Reply(
    thinking="Two cities, two calls.",
    text="Checking both.",
    tool_calls=(
        ScriptedCall(name="weather", arguments={"city": "Paris"}, id="call_a"),
        ScriptedCall(name="weather", arguments={"city": "Tokyo"}, id="call_b"),
    ),
    chunk_chars=5,
    argument_chunk_chars=4,
    usage={"prompt_tokens": 21, "completion_tokens": 13},
)


class Summary(msgspec.Struct, frozen=True):
    """What an answer amounts to, whatever pieces it came in."""

    thinking: str
    text: str
    calls: tuple[ToolCall, ...]
    usage: tuple[Usage, ...]
    finish: tuple[str, str | None]
    order: tuple[str, ...]
    """The kinds of the events after the content: ready calls, usage, finished."""


def summary(events: list[ProviderEvent]) -> Summary:
    finished = events[-1]
    assert isinstance(finished, StreamFinished)
    tail = [e for e in events if isinstance(e, ToolCallReady | UsageReport | StreamFinished)]
    # Protocol order: every ready call and the usage come after all content, finished last.
    first_tail = events.index(tail[0])
    assert all(
        isinstance(e, ToolCallReady | UsageReport | StreamFinished) for e in events[first_tail:]
    )
    return Summary(
        thinking="".join(e.text for e in events if isinstance(e, ThinkingChunk)),
        text="".join(e.text for e in events if isinstance(e, TextChunk)),
        calls=tuple(e.call for e in events if isinstance(e, ToolCallReady)),
        usage=tuple(e.usage for e in events if isinstance(e, UsageReport)),
        finish=(finished.reason, finished.raw_reason),
        order=tuple(type(e).__name__ for e in tail),
    )


async def collect(
    provider: OpenAIProvider, request: ProviderRequest = HELLO
) -> list[ProviderEvent]:
    return [event async for event in provider.stream(request)]


async def test_a_gateway_that_ignores_stream_gives_the_events_a_stream_gives(
    openai_server: OpenAIWireServer, provider: OpenAIProvider
) -> None:
    openai_server.push(RICH)
    streamed = summary(await collect(provider))
    openai_server.ignore_stream = True
    openai_server.push(RICH)
    whole = await collect(provider)
    assert summary(whole) == streamed
    assert streamed.calls == (
        ToolCall(id="call_a", name="weather", arguments='{"city":"Paris"}'),
        ToolCall(id="call_b", name="weather", arguments='{"city":"Tokyo"}'),
    )
    assert streamed.usage == (Usage(prompt_tokens=21, completion_tokens=13, requests=1),)
    assert streamed.finish == ("tool_calls", "tool_calls")
    # The request asked for a stream and got JSON back.
    first, second = openai_server.chat_requests()
    assert first.body["stream"] is True and second.body["stream"] is True
    # Both name the model that answered and the completion (response model and id in traces).
    ends = [e for e in whole if isinstance(e, StreamFinished)]
    assert ends and ends[0].model and ends[0].response_id
    # Tool-call pieces still come, one whole piece per call, for UIs that show them.
    chunks = [e for e in whole if isinstance(e, ToolCallChunk)]
    assert [(c.index, c.id, c.name) for c in chunks] == [
        (0, "call_a", "weather"),
        (1, "call_b", "weather"),
    ]


async def test_non_streamed_requests_as_a_provider_option(
    openai_server: OpenAIWireServer, provider: OpenAIProvider
) -> None:
    openai_server.push(RICH)
    streamed = summary(await collect(provider))
    openai_server.push(RICH)
    async with openai_server.provider(stream=False, retry=FAST_RETRY) as whole_provider:
        assert summary(await collect(whole_provider)) == streamed
    body = openai_server.chat_requests()[1].body
    # Not streamed, and no stream_options (the validator refuses them without a stream).
    assert body["stream"] is False and "stream_options" not in body


@pytest.mark.parametrize("mode", ["ignore_stream", "stream_false"])
async def test_a_query_with_tool_rounds_over_whole_answers(
    openai_server: OpenAIWireServer, mode: str
) -> None:
    @tool
    def weather(city: str) -> str:
        """The weather in a city."""
        return f"sunny in {city}"

    openai_server.ignore_stream = mode == "ignore_stream"
    openai_server.push(
        Reply(
            thinking="I need the weather.",
            tool_calls=(
                ScriptedCall(name="weather", arguments={"city": "Paris"}),
                ScriptedCall(name="weather", arguments={"city": "Tokyo"}),
            ),
        ),
        Reply(text="Sunny in both.", reasoning_field="reasoning"),
    )
    async with openai_server.provider(stream=mode != "stream_false", retry=FAST_RETRY) as provider:
        result = await Query(provider, tools=ToolSet([weather])).run(
            [], "Weather in Paris and Tokyo?"
        )
    assert result.stop_reason is StopReason.END_TURN and result.error is None
    assert result.text == "Sunny in both." and result.rounds == 2
    assert result.messages[0].thinking == "I need the weather."  # type: ignore[union-attr]
    results = [m.content for m in result.messages if isinstance(m, ToolMessage)]
    assert sorted(results) == ["sunny in Paris", "sunny in Tokyo"]
    assert result.usage.requests == 2 and not result.usage.estimated
    # The second request carried the calls and their answers, and the validator took it.
    requests = openai_server.chat_requests()
    assert len(requests) == 2 and not any(r.violations for r in requests)
    assert not openai_server.violations
    assert [m["role"] for m in requests[1].body["messages"]] == [
        "user",
        "assistant",
        "tool",
        "tool",
    ]


@pytest.mark.parametrize(
    ("raw", "reason", "stop"),
    [
        ("length", "length", StopReason.LENGTH),
        ("content_filter", "content_filter", StopReason.CONTENT_FILTER),
        ("end_turn", "stop", StopReason.END_TURN),
    ],
)
async def test_finish_reasons_of_whole_answers(
    openai_server: OpenAIWireServer,
    provider: OpenAIProvider,
    raw: str,
    reason: str,
    stop: StopReason,
) -> None:
    openai_server.ignore_stream = True
    openai_server.push(Reply(text="cut", finish_reason=raw))
    events = await collect(provider)
    assert summary(events).finish == (reason, raw)
    openai_server.push(Reply(text="cut", finish_reason=raw))
    assert (await Query(provider).run([], "hi")).stop_reason is stop


async def test_a_malformed_whole_answer_is_typed(
    openai_server: OpenAIWireServer, provider: OpenAIProvider
) -> None:
    openai_server.ignore_stream = True
    openai_server.push(Reply(text="x", fault=MalformedChunk(payload='{"choices": [')))
    with pytest.raises(MalformedStreamError, match="malformed JSON answer"):
        await collect(provider)


async def test_a_whole_answer_cut_short_is_a_stream_error(
    openai_server: OpenAIWireServer, provider: OpenAIProvider
) -> None:
    openai_server.ignore_stream = True
    openai_server.push(Reply(text="a long enough answer", fault=DropConnection()))
    with pytest.raises(StreamError):
        await collect(provider)
    assert len(openai_server.chat_requests()) == 1  # StreamError is never retried


def test_an_error_object_in_a_whole_answer_is_a_provider_error() -> None:
    body = b'{"error": {"message": "upstream overloaded", "code": 503}}'
    with pytest.raises(ProviderError, match="error in the answer: upstream overloaded"):
        decode_completion(body)
    with pytest.raises(MalformedStreamError, match="without choices"):
        decode_completion(b'{"id": "x", "choices": []}')
    with pytest.raises(MalformedStreamError, match="has no function name"):
        decode_completion(
            b'{"choices": [{"message": {"tool_calls": [{"id": "c", "function": {"arguments": "{}"}}]}}]}'
        )


async def pieces(*parts: bytes) -> AsyncIterator[bytes]:
    for part in parts:
        yield part


SSE = (
    b'data: {"choices": [{"delta": {"content": "Hi"}, "finish_reason": null}]}\n\n'
    b'data: {"choices": [{"delta": {}, "finish_reason": "stop"}]}\n\n'
    b"data: [DONE]\n\n"
)
WHOLE = (
    b'{"choices": [{"message": {"role": "assistant", "content": "Hi"}, "finish_reason": "stop"}]}'
)


@pytest.mark.parametrize(
    ("content_type", "body"),
    [
        ("text/event-stream; charset=utf-8", SSE),
        ("application/json", WHOLE),
        ("application/vnd.gateway+json", WHOLE),
        # Unlabelled (or mislabelled) bodies are told apart by their first byte.
        (None, SSE),
        (None, b"\n  " + WHOLE),
        ("text/plain", WHOLE),
        ("text/plain", SSE),
    ],
)
async def test_the_body_decoder_goes_by_content_type_then_first_byte(
    content_type: str | None, body: bytes
) -> None:
    # Delivered in awkward pieces, as a network would.
    split = [body[i : i + 7] for i in range(0, len(body), 7)]
    events: list[Any] = [event async for event in decode_body(pieces(*split), content_type)]
    assert [type(e).__name__ for e in events] == ["TextChunk", "StreamFinished"]
    assert summary(events).text == "Hi"


async def test_an_empty_unlabelled_body_is_a_stream_that_ended_early() -> None:
    with pytest.raises(StreamError, match="stream was empty"):
        _ = [event async for event in decode_body(pieces(b"", b"  "), None)]
