"""Usage when the server sends none: estimated (UTF-8 bytes / 4), marked, and summed as such."""

from __future__ import annotations

import msgspec
import pytest

from tests.conftest import FAST_RETRY
from xai.messages import AssistantMessage, ToolCall, ToolMessage, ToolSpec, Usage, UserMessage
from xai.providers import (
    OpenAIProvider,
    ProviderRequest,
    UsageReport,
    estimate_tokens,
    estimate_usage,
)
from xai.query import Query
from xai.testing import OpenAIWireServer, Reply, ScriptedCall
from xai.tools import ToolSet, tool

pytestmark = pytest.mark.anyio


def test_the_estimate_is_utf8_bytes_over_four() -> None:
    assert estimate_tokens("") == 0
    assert estimate_tokens("abcd") == 1 and estimate_tokens("abcde") == 2
    assert estimate_tokens("x" * 400) == 100  # English and code: four characters a token
    # A Chinese character is 3 bytes: 0.75 tokens (chars / 4 would count a third of that).
    assert estimate_tokens("你好世界" * 100) == 300
    assert estimate_tokens("привет" * 100) == 300  # 2-byte letters: half a token each


def test_a_prompt_estimate_counts_messages_calls_results_and_tools() -> None:
    call = ToolCall(id="c1", name="lookup", arguments='{"q": "' + "x" * 80 + '"}')
    history = (
        UserMessage(content="u" * 400),
        AssistantMessage(content="", thinking="t" * 4000, tool_calls=(call,)),
        ToolMessage(tool_call_id="c1", tool_name="lookup", content="r" * 200),
    )
    bare = estimate_usage(ProviderRequest(messages=history[:1]), text="", thinking="")
    full = estimate_usage(ProviderRequest(messages=history), text="", thinking="")
    # Thinking is never sent back, so it costs nothing in the prompt.
    assert (
        full.prompt_tokens - bare.prompt_tokens
        == 4 + estimate_tokens(call.name) + estimate_tokens(call.arguments) + 4 + 50
    )
    spec = ToolSpec(name="lookup", description="d" * 40, parameters={"type": "object"})
    with_tools = estimate_usage(
        ProviderRequest(messages=history, tools=(spec,)), text="", thinking=""
    )
    assert with_tools.prompt_tokens > full.prompt_tokens + 10


def test_a_completion_estimate_counts_text_thinking_and_calls() -> None:
    call = ToolCall(id="c1", name="lookup", arguments='{"q": "paris"}')
    usage = estimate_usage(
        ProviderRequest(messages=(UserMessage(content="hi"),)),
        text="a" * 40,
        thinking="b" * 80,
        calls=(call,),
    )
    assert usage.reasoning_tokens == 20
    assert usage.completion_tokens == 10 + 20 + estimate_tokens("lookup") + estimate_tokens(
        call.arguments
    )
    assert usage.estimated and usage.requests == 1 and usage.cached_tokens == 0


@pytest.mark.parametrize("mode", ["sse", "json", "no_stream_options"])
async def test_an_answer_without_usage_gets_an_estimated_report(
    openai_server: OpenAIWireServer, mode: str
) -> None:
    openai_server.send_usage = False
    openai_server.ignore_stream = mode == "json"
    reply = Reply(
        thinking="Let me think about it.",
        text="The answer is forty-two, as everyone knows.",
        tool_calls=(ScriptedCall(name="note", arguments={"text": "42"}, id="c9"),),
    )
    openai_server.push(reply)
    provider = OpenAIProvider(
        openai_server.llm_config(), retry=FAST_RETRY, include_usage=mode != "no_stream_options"
    )
    request = ProviderRequest(messages=(UserMessage(content="What is the answer? " * 10),))
    async with provider:
        events = [event async for event in provider.stream(request)]
    (report,) = [e for e in events if isinstance(e, UsageReport)]
    assert isinstance(events[-2], UsageReport)  # where the protocol puts usage
    expected = estimate_usage(
        request,
        text=reply.text,
        thinking=reply.thinking,
        calls=(ToolCall(id="c9", name="note", arguments='{"text":"42"}'),),
    )
    assert report.usage == expected
    assert report.usage.estimated and report.usage.prompt_tokens > 50
    assert report.usage.completion_tokens > 15


async def test_reported_usage_is_not_estimated(
    openai_server: OpenAIWireServer, provider: OpenAIProvider
) -> None:
    openai_server.push(Reply(text="ok", usage={"prompt_tokens": 3, "completion_tokens": 1}))
    events = [
        event
        async for event in provider.stream(ProviderRequest(messages=(UserMessage(content="hi"),)))
    ]
    (report,) = [e for e in events if isinstance(e, UsageReport)]
    assert report.usage == Usage(prompt_tokens=3, completion_tokens=1, requests=1)


async def test_a_query_sums_estimates_and_marks_the_total(
    openai_server: OpenAIWireServer, provider: OpenAIProvider
) -> None:
    @tool
    def lookup(q: str) -> str:
        """Look something up."""
        return "found " * 50

    openai_server.send_usage = False
    openai_server.push(
        Reply(tool_calls=(ScriptedCall(name="lookup", arguments={"q": "x"}),)),
        Reply(text="Done."),
    )
    result = await Query(provider, tools=ToolSet([lookup])).run([], "Find x.")
    assert result.usage.requests == 2 and result.usage.estimated
    assert result.usage.prompt_tokens > 2 * 10 and result.usage.completion_tokens > 0
    # An estimate never stands in for the server's figure the Session calibrates on.
    assert result.last_prompt_tokens == 0


def test_estimated_is_sticky_in_sums_and_survives_a_journal() -> None:
    reported = Usage(prompt_tokens=10, completion_tokens=2, requests=1)
    guessed = Usage(prompt_tokens=7, completion_tokens=1, requests=1, estimated=True)
    assert not (reported + reported).estimated
    assert (reported + guessed).estimated and (guessed + reported).estimated
    assert (Usage() + guessed + reported).prompt_tokens == 17
    assert msgspec.json.decode(msgspec.json.encode(guessed), type=Usage) == guessed
    # Records written before the field existed read as reported figures.
    old = b'{"prompt_tokens": 1, "completion_tokens": 1, "reasoning_tokens": 0, "cached_tokens": 0, "requests": 1}'
    assert msgspec.json.decode(old, type=Usage).estimated is False
