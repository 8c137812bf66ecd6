"""The OpenAI provider against the local wire server, through the real ``openai`` client."""

from __future__ import annotations

import email.utils
import time
import traceback

import anyio
import pytest

from tests.conftest import FAST_RETRY
from xai.config import EmbeddingConfig, LLMConfig
from xai.exceptions import (
    AuthenticationError,
    BadRequestError,
    ConfigurationError,
    ContextTooLongError,
    MalformedStreamError,
    ProviderTimeoutError,
    RateLimitError,
    ServerError,
    StreamError,
)
from xai.memory import OpenAIEmbedder
from xai.messages import AssistantMessage, ToolCall, ToolMessage, ToolSpec, UserMessage
from xai.providers import (
    EMPTY_REPLY_TEXT,
    INTERRUPTED_REPLY_TEXT,
    OpenAIProvider,
    ProviderEvent,
    ProviderRequest,
    StreamFinished,
    TextChunk,
    ThinkingChunk,
    ToolCallChunk,
    ToolCallReady,
    UsageReport,
    parse_retry_after,
)
from xai.query import Query
from xai.testing import (
    Delay,
    DropConnection,
    HttpError,
    MalformedChunk,
    OpenAIWireServer,
    Reply,
    ScriptedCall,
)

pytestmark = pytest.mark.anyio

HELLO = ProviderRequest(messages=(UserMessage(content="hello"),))


async def collect(
    provider: OpenAIProvider, request: ProviderRequest = HELLO
) -> list[ProviderEvent]:
    return [event async for event in provider.stream(request)]


def text_of(events: list[ProviderEvent]) -> str:
    return "".join(e.text for e in events if isinstance(e, TextChunk))


async def test_text_stream_with_usage(
    openai_server: OpenAIWireServer, provider: OpenAIProvider
) -> None:
    openai_server.push(
        Reply(
            text="Hello there, friend!",
            chunk_chars=5,
            usage={"prompt_tokens": 7, "completion_tokens": 4},
        )
    )
    events = await collect(provider)
    assert [e.text for e in events if isinstance(e, TextChunk)] == [
        "Hello",
        " ther",
        "e, fr",
        "iend!",
    ]
    usage = [e for e in events if isinstance(e, UsageReport)]
    assert (
        len(usage) == 1
        and usage[0].usage.prompt_tokens == 7
        and usage[0].usage.completion_tokens == 4
    )
    assert isinstance(events[-1], StreamFinished) and events[-1].reason == "stop"
    body = openai_server.chat_requests()[0].body
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}
    assert body["messages"] == [{"role": "user", "content": "hello"}]


async def test_server_that_ignores_stream_options(
    openai_server: OpenAIWireServer, provider: OpenAIProvider
) -> None:
    openai_server.send_usage = False
    openai_server.push(Reply(text="fine"))
    events = await collect(provider)
    assert text_of(events) == "fine"
    # No usage chunk: the provider estimates one (see tests/test_provider_usage.py).
    (report,) = [e for e in events if isinstance(e, UsageReport)]
    assert report.usage.estimated and report.usage.requests == 1
    assert isinstance(events[-2], UsageReport) and isinstance(events[-1], StreamFinished)


@pytest.mark.parametrize("field", ["reasoning_content", "reasoning"])
async def test_reasoning_deltas_become_thinking(
    openai_server: OpenAIWireServer, provider: OpenAIProvider, field: str
) -> None:
    openai_server.push(Reply(thinking="step one, step two", text="42", reasoning_field=field))  # type: ignore[arg-type]
    events = await collect(provider)
    assert "".join(e.text for e in events if isinstance(e, ThinkingChunk)) == "step one, step two"
    assert text_of(events) == "42"


async def test_parallel_tool_calls_are_assembled_by_index(
    openai_server: OpenAIWireServer, provider: OpenAIProvider
) -> None:
    openai_server.push(
        Reply(
            text="Checking.",
            tool_calls=(
                ScriptedCall(
                    name="weather", arguments={"city": "Paris", "unit": "celsius"}, id="call_a"
                ),
                ScriptedCall(
                    name="weather", arguments={"city": "Tokyo", "unit": "fahrenheit"}, id="call_b"
                ),
            ),
            argument_chunk_chars=5,
        )
    )
    spec = ToolSpec(name="weather", description="w", parameters={"type": "object"})
    events = await collect(provider, ProviderRequest(messages=HELLO.messages, tools=(spec,)))
    chunks = [e for e in events if isinstance(e, ToolCallChunk)]
    assert len(chunks) > 4  # arguments really arrived in pieces
    ready = [e.call for e in events if isinstance(e, ToolCallReady)]
    assert ready == [
        ToolCall("call_a", "weather", '{"city":"Paris","unit":"celsius"}'),
        ToolCall("call_b", "weather", '{"city":"Tokyo","unit":"fahrenheit"}'),
    ]
    assert isinstance(events[-1], StreamFinished) and events[-1].reason == "tool_calls"
    tools = openai_server.chat_requests()[0].body["tools"]
    assert tools == [
        {
            "type": "function",
            "function": {"name": "weather", "description": "w", "parameters": {"type": "object"}},
        }
    ]


async def test_request_options_pass_through(
    openai_server: OpenAIWireServer, provider: OpenAIProvider
) -> None:
    openai_server.push(Reply(text="{}"))
    fmt = {"type": "json_schema", "json_schema": {"name": "x", "schema": {"type": "object"}}}
    history = (
        UserMessage(content="q"),
        AssistantMessage(content="", tool_calls=(ToolCall("c1", "f", "{}"),)),
        ToolMessage(tool_call_id="c1", tool_name="f", content="r"),
    )
    await collect(
        provider,
        ProviderRequest(
            messages=history, max_tokens=33, temperature=0.5, response_format=fmt, model="other"
        ),
    )
    body = openai_server.chat_requests()[0].body
    assert body["max_tokens"] == 33 and body["temperature"] == 0.5
    assert body["response_format"] == fmt and body["model"] == "other"
    assert body["messages"][1] == {
        "role": "assistant",
        "content": "",
        "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
        ],
    }
    assert body["messages"][2] == {"role": "tool", "tool_call_id": "c1", "content": "r"}


@pytest.mark.parametrize(
    ("raw", "expected"),
    [("length", "length"), ("content_filter", "content_filter"), ("weird", "stop")],
)
async def test_finish_reasons_are_mapped(
    openai_server: OpenAIWireServer, provider: OpenAIProvider, raw: str, expected: str
) -> None:
    openai_server.push(Reply(text="cut", finish_reason=raw))
    events = await collect(provider)
    assert isinstance(events[-1], StreamFinished)
    assert events[-1].reason == expected and events[-1].raw_reason == raw


async def test_429_is_retried_honouring_retry_after(
    openai_server: OpenAIWireServer, provider: OpenAIProvider
) -> None:
    openai_server.push(Reply(fault=HttpError(status=429, retry_after=0.2)), Reply(text="ok"))
    started = time.monotonic()
    events = await collect(provider)
    assert text_of(events) == "ok"
    assert time.monotonic() - started >= 0.2  # waited what the server asked, not the tiny backoff
    assert len(openai_server.chat_requests()) == 2


async def test_429_gives_up_after_the_retry_limit(
    openai_server: OpenAIWireServer, provider: OpenAIProvider
) -> None:
    openai_server.push(
        *[Reply(fault=HttpError(status=429, retry_after=0.01, message="slow down"))] * 3
    )
    with pytest.raises(RateLimitError) as info:
        await collect(provider)
    assert info.value.retry_after == pytest.approx(0.01)
    assert "slow down" in str(info.value)
    assert len(openai_server.chat_requests()) == 1 + FAST_RETRY.max_retries


async def test_500_is_retried_then_surfaces_typed(
    openai_server: OpenAIWireServer, provider: OpenAIProvider
) -> None:
    openai_server.push(Reply(fault=HttpError(status=500)), Reply(text="recovered"))
    assert text_of(await collect(provider)) == "recovered"
    openai_server.push(*[Reply(fault=HttpError(status=503, message="overloaded"))] * 3)
    with pytest.raises(ServerError) as info:
        await collect(provider)
    assert info.value.status_code == 503 and info.value.retryable


@pytest.mark.parametrize(
    ("fault", "error"),
    [
        (HttpError(status=401, message="bad key"), AuthenticationError),
        (HttpError(status=400, message="bad shape"), BadRequestError),
        (
            HttpError(
                status=400,
                code="context_length_exceeded",
                message="maximum context length is 8192 tokens",
            ),
            ContextTooLongError,
        ),
    ],
)
async def test_client_errors_are_typed_and_not_retried(
    openai_server: OpenAIWireServer,
    provider: OpenAIProvider,
    fault: HttpError,
    error: type[Exception],
) -> None:
    openai_server.push(Reply(fault=fault), Reply(text="never"))
    with pytest.raises(error):
        await collect(provider)
    assert len(openai_server.chat_requests()) == 1


async def test_timeout(openai_server: OpenAIWireServer) -> None:
    openai_server.push(Reply(fault=Delay(seconds=3)))
    provider = openai_server.provider(timeout=0.3, max_retries=0)
    try:
        with pytest.raises(ProviderTimeoutError) as info:
            await collect(provider)
        assert info.value.timeout == 0.3 and info.value.retryable
    finally:
        await provider.aclose()


async def test_connection_dropped_mid_stream(
    openai_server: OpenAIWireServer, provider: OpenAIProvider
) -> None:
    openai_server.push(
        Reply(
            text="a long answer that will be cut",
            chunk_chars=4,
            fault=DropConnection(after_chunks=2),
        )
    )
    seen: list[ProviderEvent] = []

    async def consume() -> None:
        async for event in provider.stream(HELLO):
            seen.append(event)

    with pytest.raises(StreamError, match="stream broke"):
        await consume()
    assert text_of(seen) == "a long a"
    assert len(openai_server.chat_requests()) == 1  # never retried after text was handed on


async def test_malformed_chunk(openai_server: OpenAIWireServer, provider: OpenAIProvider) -> None:
    openai_server.push(Reply(text="abcdefgh", chunk_chars=2, fault=MalformedChunk(after_chunks=2)))
    with pytest.raises(MalformedStreamError, match="malformed stream chunk"):
        await collect(provider)


async def test_refused_connection_is_retried_then_typed() -> None:
    with OpenAIWireServer() as server:
        config = server.llm_config(max_retries=1)
    provider = OpenAIProvider(config)  # the server is gone: nothing listens on that port
    try:
        from xai.exceptions import ProviderConnectionError

        with pytest.raises(ProviderConnectionError, match="could not reach"):
            await collect(provider)
    finally:
        await provider.aclose()


def test_parse_retry_after() -> None:
    assert parse_retry_after({"retry-after-ms": "250"}) == 0.25
    assert parse_retry_after({"retry-after": "3"}) == 3.0
    future = email.utils.formatdate(time.time() + 30, usegmt=True)
    value = parse_retry_after({"retry-after": future})
    assert value is not None and 25 < value <= 31
    assert parse_retry_after({"retry-after": "soon"}) is None
    assert parse_retry_after({}) is None


def test_config_from_env_and_errors() -> None:
    env = {
        "LLM_API_KEY": "sk-live-123456789",
        "LLM_BASE_URL": "https://api.deepseek.com/v1",
        "LLM_MODEL": "deepseek-chat",
    }
    config = LLMConfig.from_env(env)
    assert config.is_configured and not config.is_local
    assert "sk-live" not in repr(config)
    embedding = EmbeddingConfig.from_env({**env, "EMBEDDING_MODEL": "bge-m3"})
    assert embedding.base_url == env["LLM_BASE_URL"] and embedding.api_key == env["LLM_API_KEY"]
    assert embedding.model == "bge-m3"
    with pytest.raises(ConfigurationError, match="LLM_API_KEY is not set") as info:
        LLMConfig.from_env({"LLM_MODEL": "gpt-4o-mini"}).validated()
    assert info.value.variable == "LLM_API_KEY"
    with pytest.raises(ConfigurationError, match="set LLM_MODEL"):
        LLMConfig.from_env({"LLM_API_KEY": "k"}).validated()
    with pytest.raises(ConfigurationError, match="EMBEDDING_API_KEY"):
        EmbeddingConfig.from_env({"EMBEDDING_MODEL": "m"}).validated()
    elsewhere = EmbeddingConfig.from_env({**env, "EMBEDDING_BASE_URL": "https://embed.example/v1"})
    assert elsewhere.api_key is None  # the LLM key is never sent to another host
    local = LLMConfig.from_env({"LLM_BASE_URL": "http://127.0.0.1:11434/v1", "LLM_MODEL": "qwen3"})
    assert local.validated() is local  # a local server needs no key


async def test_provider_reads_the_environment(
    openai_server: OpenAIWireServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LLM_BASE_URL", openai_server.base_url)
    monkeypatch.setenv("LLM_MODEL", "env-model")
    openai_server.push(Reply(text="from env"))
    async with OpenAIProvider.from_env() as provider:
        assert provider.model == "env-model"
        assert text_of(await collect(provider)) == "from env"
    assert openai_server.chat_requests()[0].body["model"] == "env-model"


async def test_stream_error_reported_inside_the_stream(
    openai_server: OpenAIWireServer, provider: OpenAIProvider
) -> None:
    from xai.exceptions import ProviderError

    openai_server.push(
        Reply(
            text="x",
            fault=MalformedChunk(
                after_chunks=1, payload='{"error": {"message": "upstream overloaded"}}'
            ),
        )
    )
    with pytest.raises(ProviderError, match="upstream overloaded"):
        await collect(provider)


async def test_cancelling_a_stream_closes_it(
    openai_server: OpenAIWireServer, provider: OpenAIProvider
) -> None:
    openai_server.push(Reply(text="x" * 40, chunk_chars=1, chunk_delay=0.05), Reply(text="next"))
    with anyio.move_on_after(0.2):
        await collect(provider)
    assert text_of(await collect(provider)) == "next"  # the client is still usable


@pytest.mark.parametrize(
    "empty",
    [
        Reply(text=""),
        Reply(text=" \n"),
        Reply(thinking="only thoughts, which are never sent back"),
        Reply(tool_calls=(ScriptedCall(name="f"),), finish_reason="length"),  # calls cut off
    ],
    ids=["nothing", "whitespace", "thinking-only", "calls-cut-by-length"],
)
async def test_an_empty_reply_is_never_sent_back_empty(
    openai_server: OpenAIWireServer, provider: OpenAIProvider, empty: Reply
) -> None:
    """A reply with no text and no tool calls is stored as it came, and sent back as a marker
    the model can read: strict endpoints refuse an empty assistant message (the validator too)."""
    openai_server.push(empty, Reply(text="Sorry, here it is."))
    first = await Query(provider).run([], "hi")
    [stored] = first.messages
    assert isinstance(stored, AssistantMessage) and not stored.tool_calls
    assert not stored.content.strip()
    second = await Query(provider).run([UserMessage(content="hi"), stored], "hello?")
    assert second.text == "Sorry, here it is."
    sent = openai_server.chat_requests()[1].body["messages"]
    assert sent[1] == {"role": "assistant", "content": EMPTY_REPLY_TEXT}


async def test_interrupted_and_blank_assistant_messages_on_the_wire(
    openai_server: OpenAIWireServer, provider: OpenAIProvider
) -> None:
    openai_server.push(Reply(text="ok"))
    history = (
        UserMessage(content="first"),
        AssistantMessage(thinking="was thinking", interrupted=True),  # cancelled before any text
        UserMessage(content="second"),
        AssistantMessage(content="The answer is", interrupted=True),  # partial text kept
        UserMessage(content="third"),
        AssistantMessage(content="\n", tool_calls=(ToolCall("c1", "f", "{}"),)),
        ToolMessage(tool_call_id="c1", tool_name="f", content="r"),
    )
    await collect(provider, ProviderRequest(messages=history))
    sent = openai_server.chat_requests()[0].body["messages"]
    assert sent[1] == {"role": "assistant", "content": INTERRUPTED_REPLY_TEXT}
    assert sent[3] == {"role": "assistant", "content": "The answer is"}
    assert sent[5]["content"] == "" and sent[5]["tool_calls"][0]["id"] == "c1"


def exception_chain(error: BaseException) -> list[BaseException]:
    """The error and everything reachable from it: causes, contexts, group members."""
    seen: list[BaseException] = []
    todo = [error]
    while todo:
        current = todo.pop()
        if any(current is s for s in seen):
            continue
        seen.append(current)
        todo.extend(e for e in (current.__cause__, current.__context__) if e is not None)
        if isinstance(current, BaseExceptionGroup):
            todo.extend(current.exceptions)
    return seen


def texts_of(error: BaseException) -> list[str]:
    """Every text an exception carries: message, args, attributes (response bodies included)."""
    out = [str(error), repr(error.args)]
    for value in vars(error).values():
        out.append(repr(value))
        content = getattr(value, "content", None)  # an HTTP response: its body
        if isinstance(content, bytes):
            out.append(content.decode(errors="replace"))
    return out


async def test_a_key_echoed_by_a_401_is_nowhere_in_the_raised_error(
    openai_server: OpenAIWireServer,
) -> None:
    planted = "planted-key-7f3a9c2e51d04b68"  # no sk- shape: only knowing the key can mask it
    openai_server.api_key = "the-right-key"  # the server echoes the wrong key in its 401 body
    provider = openai_server.provider(api_key=planted, retry=FAST_RETRY)
    try:
        with pytest.raises(AuthenticationError) as info:
            await collect(provider)
    finally:
        await provider.aclose()
    assert planted in openai_server.chat_requests()[0].headers["authorization"]  # it was sent
    chain = exception_chain(info.value)
    leaks = [type(e).__name__ for e in chain for text in texts_of(e) if planted in text]
    assert not leaks, f"the key survives in {leaks}"
    assert planted not in "".join(traceback.format_exception(info.value))
    assert "Incorrect API key provided: ***" in str(info.value)


async def test_a_key_echoed_by_a_401_is_nowhere_in_an_embedding_error(
    openai_server: OpenAIWireServer,
) -> None:
    planted = "planted-key-5c1e0b7d93a24f61"
    openai_server.api_key = "the-right-key"
    embedder = OpenAIEmbedder(
        EmbeddingConfig(model="e", base_url=openai_server.base_url, api_key=planted, max_retries=0)
    )
    try:
        with pytest.raises(AuthenticationError) as info:
            await embedder.embed(["hello"])
    finally:
        await embedder.aclose()
    chain = exception_chain(info.value)
    leaks = [type(e).__name__ for e in chain for text in texts_of(e) if planted in text]
    assert not leaks, f"the key survives in {leaks}"
    assert planted not in "".join(traceback.format_exception(info.value))
