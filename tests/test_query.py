"""The Query loop, end to end: real ``openai`` client → local OpenAI-wire server → tools."""

from __future__ import annotations

from collections.abc import Sequence

import anyio
import pytest

from xai.events import (
    MessageCommitted,
    QueryDone,
    QueryEvent,
    TextDelta,
    ThinkingDelta,
    ToolCallFinished,
    ToolCallStarted,
)
from xai.exceptions import ConfigurationError
from xai.messages import (
    AssistantMessage,
    Message,
    StopReason,
    SystemMessage,
    ToolMessage,
    Usage,
    UserMessage,
)
from xai.providers import OpenAIProvider
from xai.query import CancelToken, Query, QueryConfig, run_query, run_query_sync
from xai.testing import (
    DropConnection,
    HttpError,
    MalformedChunk,
    OpenAIWireServer,
    Reply,
    ScriptedCall,
    ScriptedProvider,
)
from xai.tools import ToolContext, ToolSet, tool

pytestmark = pytest.mark.anyio


@tool
async def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@tool
def fail(reason: str) -> str:
    """Always raises."""
    raise RuntimeError(reason)


def call(tool_name: str, call_id: str | None = None, /, **arguments: object) -> ScriptedCall:
    return ScriptedCall(name=tool_name, arguments=dict(arguments), id=call_id)


class Recorder:
    def __init__(self) -> None:
        self.events: list[QueryEvent] = []

    def __call__(self, event: QueryEvent) -> None:
        self.events.append(event)

    def of(self, kind: type) -> list:  # type: ignore[type-arg]
        return [e for e in self.events if isinstance(e, kind)]

    @property
    def committed(self) -> list[Message]:
        return [e.message for e in self.of(MessageCommitted)]


def assert_valid_history(messages: Sequence[Message]) -> None:
    """Every tool call is answered exactly once, after its assistant message."""
    open_calls: set[str] = set()
    for message in messages:
        if isinstance(message, AssistantMessage):
            assert not open_calls, f"calls left unanswered: {open_calls}"
            open_calls = {c.id for c in message.tool_calls}
        elif isinstance(message, ToolMessage):
            assert message.tool_call_id in open_calls
            open_calls.remove(message.tool_call_id)
    assert not open_calls, f"calls left unanswered: {open_calls}"


async def test_text_only(openai_server: OpenAIWireServer, provider: OpenAIProvider) -> None:
    openai_server.push(Reply(text="Hello, world!", chunk_chars=4))
    rec = Recorder()
    result = await Query(provider).run([SystemMessage(content="sys")], "hi", observers=[rec])
    assert result.stop_reason is StopReason.END_TURN and result.error is None
    assert result.text == "Hello, world!" and result.rounds == 1
    assert "".join(e.text for e in rec.of(TextDelta)) == "Hello, world!"
    assert len(rec.of(TextDelta)) == 4
    assert isinstance(rec.events[-1], QueryDone) and rec.events[-1].result == result
    assert rec.committed == list(result.messages)
    sent = openai_server.chat_requests()[0].body["messages"]
    assert sent == [{"role": "system", "content": "sys"}, {"role": "user", "content": "hi"}]


async def test_three_round_tool_loop(
    openai_server: OpenAIWireServer, provider: OpenAIProvider
) -> None:
    openai_server.push(
        Reply(tool_calls=(call("add", "c1", a=1, b=2),)),
        Reply(tool_calls=(call("add", "c2", a=3, b=4),)),
        Reply(text="3 and 7"),
    )
    rec = Recorder()
    result = await Query(provider, tools=[add]).run([], "sums", observers=[rec])
    assert result.stop_reason is StopReason.END_TURN and result.rounds == 3
    assert [type(m).__name__ for m in result.messages] == [
        "AssistantMessage",
        "ToolMessage",
        "AssistantMessage",
        "ToolMessage",
        "AssistantMessage",
    ]
    assert [m.content for m in result.tool_results] == ["3", "7"]
    # each request carries everything committed before it
    requests = openai_server.chat_requests()
    assert [len(r.body["messages"]) for r in requests] == [1, 3, 5]
    assert requests[2].body["messages"][-1] == {
        "role": "tool",
        "tool_call_id": "c2",
        "content": "7",
    }
    assert_valid_history(result.messages)


async def test_parallel_tool_calls_overlap(
    openai_server: OpenAIWireServer, provider: OpenAIProvider
) -> None:
    arrived = 0
    both_running = anyio.Event()

    @tool
    async def rendezvous(name: str) -> str:
        """Returns only once both calls are running at the same time."""
        nonlocal arrived
        arrived += 1
        if arrived == 2:
            both_running.set()
        with anyio.fail_after(30):  # sequential execution would deadlock here
            await both_running.wait()
        return f"met {name}"

    openai_server.push(
        Reply(tool_calls=(call("rendezvous", "a", name="a"), call("rendezvous", "b", name="b"))),
        Reply(text="both met"),
    )
    rec = Recorder()
    result = await Query(provider, tools=[rendezvous]).run([], "go", observers=[rec])
    assert result.stop_reason is StopReason.END_TURN
    assert sorted(m.content for m in result.tool_results) == ["met a", "met b"]
    assert all(r.result.success for r in rec.of(ToolCallFinished))


async def test_tool_concurrency_limit(
    openai_server: OpenAIWireServer, provider: OpenAIProvider
) -> None:
    running = peak = 0

    @tool
    async def work(n: int) -> int:
        """Counts how many run at once."""
        nonlocal running, peak
        running += 1
        peak = max(peak, running)
        await anyio.sleep(0.02)
        running -= 1
        return n

    openai_server.push(
        Reply(tool_calls=tuple(call("work", n=i) for i in range(5))), Reply(text="ok")
    )
    result = await Query(provider, tools=[work], config=QueryConfig(tool_concurrency=2)).run(
        [], "go"
    )
    assert result.stop_reason is StopReason.END_TURN
    assert peak == 2 and len(result.tool_results) == 5


async def test_text_before_tool_calls_does_not_end_the_run(
    openai_server: OpenAIWireServer, provider: OpenAIProvider
) -> None:
    openai_server.push(
        Reply(text="Let me add that.", tool_calls=(call("add", a=2, b=2),), finish_reason="stop"),
        Reply(text="It is 4."),
    )
    result = await Query(provider, tools=[add]).run([], "2+2?")
    assert result.stop_reason is StopReason.END_TURN and result.rounds == 2
    first = result.messages[0]
    assert isinstance(first, AssistantMessage) and first.content == "Let me add that."
    assert result.text == "It is 4."


async def test_tool_errors_go_back_to_the_model(
    openai_server: OpenAIWireServer, provider: OpenAIProvider
) -> None:
    openai_server.push(
        Reply(
            tool_calls=(
                call("no_such_tool", "u"),
                ScriptedCall(name="add", arguments='{"a": 1, "b": ', id="j"),
                call("add", "v", a="one", b=2),
                call("fail", "f", reason="disk full"),
            )
        ),
        Reply(text="sorry"),
    )
    rec = Recorder()
    result = await Query(provider, tools=[add, fail]).run([], "try", observers=[rec])
    assert result.stop_reason is StopReason.END_TURN and result.text == "sorry"
    by_id = {m.tool_call_id: m for m in result.tool_results}
    assert all(m.is_error for m in by_id.values())
    assert "unknown tool 'no_such_tool'" in by_id["u"].content
    assert "not valid JSON" in by_id["j"].content
    assert "Expected `int`, got `str`" in by_id["v"].content
    assert by_id["f"].content == "Error: RuntimeError: disk full"
    records = {e.result.call_id: e.result for e in rec.of(ToolCallFinished)}
    assert records["j"].arguments == '{"a": 1, "b": '
    assert records["f"].tool_name == "fail" and records["f"].error == "RuntimeError: disk full"
    # the model saw all four errors in its next request
    assert len(openai_server.chat_requests()[1].body["messages"]) == 6


async def test_tool_timeout(openai_server: OpenAIWireServer, provider: OpenAIProvider) -> None:
    @tool
    async def hang() -> str:
        """Never returns."""
        await anyio.sleep_forever()
        return "unreachable"

    openai_server.push(Reply(tool_calls=(call("hang", "h"),)), Reply(text="gave up"))
    result = await Query(provider, tools=[hang], config=QueryConfig(tool_timeout=0.05)).run(
        [], "go"
    )
    assert result.stop_reason is StopReason.END_TURN
    assert result.tool_results[0].content == "Error: timed out after 0.05s"


async def test_round_limit(openai_server: OpenAIWireServer, provider: OpenAIProvider) -> None:
    ran: list[int] = []

    @tool
    async def step(n: int) -> int:
        """One step."""
        ran.append(n)
        return n

    openai_server.push(
        Reply(tool_calls=(call("step", "s1", n=1),)),
        Reply(tool_calls=(call("step", "s2", n=2),)),
    )
    result = await Query(provider, tools=[step], config=QueryConfig(max_rounds=2)).run([], "loop")
    assert result.stop_reason is StopReason.MAX_ROUNDS and result.rounds == 2
    assert ran == [1]  # the call of the last allowed round is not run ...
    last = result.messages[-1]
    assert isinstance(last, ToolMessage) and last.synthetic and last.tool_call_id == "s2"
    assert_valid_history(result.messages)  # ... but the history stays valid


async def test_length_stop(openai_server: OpenAIWireServer, provider: OpenAIProvider) -> None:
    openai_server.push(
        Reply(text="truncated answ", tool_calls=(call("add", a=1, b=1),), finish_reason="length")
    )
    result = await Query(provider, tools=[add], config=QueryConfig(max_tokens=5)).run([], "long")
    assert result.stop_reason is StopReason.LENGTH
    assert result.text == "truncated answ"
    assert_valid_history(result.messages)
    assert openai_server.chat_requests()[0].body["max_tokens"] == 5


async def test_cancel_mid_stream_keeps_partial_text(
    openai_server: OpenAIWireServer, provider: OpenAIProvider
) -> None:
    openai_server.push(
        Reply(thinking="pondering", text="a b c d e f g h i j", chunk_chars=2, chunk_delay=0.05)
    )
    token = CancelToken()
    rec = Recorder()

    def cancel_after_two_deltas(event: QueryEvent) -> None:
        if len(rec.of(TextDelta)) == 2:
            token.cancel()

    result = await Query(provider).run(
        [], "talk", observers=[rec, cancel_after_two_deltas], cancel=token
    )
    assert result.stop_reason is StopReason.CANCELLED and result.error is None
    (message,) = result.messages
    assert isinstance(message, AssistantMessage) and message.interrupted
    assert message.content == "a b " and message.thinking == "pondering"
    assert isinstance(rec.events[-1], QueryDone) and rec.events[-1].result == result
    assert rec.committed == [message]


async def test_cancel_mid_tool_synthesises_results(
    openai_server: OpenAIWireServer, provider: OpenAIProvider
) -> None:
    cancelled: list[str] = []

    @tool
    async def slow(name: str) -> str:
        """Takes forever."""
        try:
            await anyio.sleep_forever()
        finally:
            cancelled.append(name)
        return name

    openai_server.push(
        Reply(
            tool_calls=(
                call("add", "fast", a=1, b=1),
                call("slow", "s1", name="x"),
                call("slow", "s2", name="y"),
            )
        )
    )
    token = CancelToken()

    def cancel_when_fast_done(event: QueryEvent) -> None:
        if isinstance(event, ToolCallFinished) and event.result.call_id == "fast":
            token.cancel()

    rec = Recorder()
    result = await Query(provider, tools=[add, slow]).run(
        [], "go", observers=[rec, cancel_when_fast_done], cancel=token
    )
    assert result.stop_reason is StopReason.CANCELLED
    assert sorted(cancelled) == ["x", "y"]  # the tools were cancelled with the Query
    by_id = {m.tool_call_id: m for m in result.tool_results}
    assert by_id["fast"].content == "2" and not by_id["fast"].synthetic
    assert by_id["s1"].synthetic and by_id["s2"].synthetic and by_id["s1"].is_error
    assert_valid_history(result.messages)
    assert isinstance(rec.events[-1], QueryDone)
    assert len(openai_server.chat_requests()) == 1  # nothing submitted after the cancel


async def test_outer_cancellation_still_reports_done(
    openai_server: OpenAIWireServer, provider: OpenAIProvider
) -> None:
    openai_server.push(Reply(text="x" * 50, chunk_chars=1, chunk_delay=0.02))
    rec = Recorder()
    with anyio.move_on_after(0.3) as scope:
        await Query(provider).run([], "talk", observers=[rec])
    assert scope.cancelled_caught
    done = rec.events[-1]
    assert isinstance(done, QueryDone) and done.result.stop_reason is StopReason.CANCELLED
    (partial,) = done.result.messages
    assert isinstance(partial, AssistantMessage) and partial.interrupted and partial.content


async def test_cancelled_history_is_accepted_by_the_next_query(
    openai_server: OpenAIWireServer, provider: OpenAIProvider
) -> None:
    @tool
    async def hang() -> str:
        """Never returns."""
        await anyio.sleep_forever()
        return ""

    openai_server.push(Reply(tool_calls=(call("hang", "h1"),)))
    token = CancelToken()

    def cancel_once_started(event: QueryEvent) -> None:
        if isinstance(event, ToolCallStarted):
            token.cancel()

    first = await Query(provider, tools=[hang]).run(
        [], "go", observers=[cancel_once_started], cancel=token
    )
    history = [UserMessage(content="go"), *first.messages]
    assert_valid_history(history)
    openai_server.push(Reply(text="continuing"))
    second = await Query(provider, tools=[hang]).run(history, "again?")
    assert second.text == "continuing"
    sent = openai_server.chat_requests()[1].body["messages"]
    assert sent[2]["role"] == "tool" and sent[2]["tool_call_id"] == "h1"


async def test_rate_limit_then_success(
    openai_server: OpenAIWireServer, provider: OpenAIProvider
) -> None:
    openai_server.push(Reply(fault=HttpError(status=429, retry_after=0.01)), Reply(text="ok"))
    result = await Query(provider).run([], "hi")
    assert result.stop_reason is StopReason.END_TURN and result.text == "ok"


async def test_server_error_is_a_typed_error_result(openai_server: OpenAIWireServer) -> None:
    openai_server.push(Reply(fault=HttpError(status=500, message="exploded")))
    provider = openai_server.provider(max_retries=0)
    try:
        rec = Recorder()
        result = await Query(provider).run([], "hi", observers=[rec])
    finally:
        await provider.aclose()
    assert result.stop_reason is StopReason.ERROR
    assert result.error is not None and result.error.type == "ServerError"
    assert result.error.status_code == 500 and result.error.retryable
    assert "exploded" in result.error.message
    assert isinstance(rec.events[-1], QueryDone)


async def test_dropped_connection_keeps_partial_text(
    openai_server: OpenAIWireServer, provider: OpenAIProvider
) -> None:
    openai_server.push(
        Reply(text="partial answer here", chunk_chars=4, fault=DropConnection(after_chunks=2))
    )
    result = await Query(provider).run([], "hi")
    assert result.stop_reason is StopReason.ERROR
    assert result.error is not None and result.error.type == "StreamError"
    (message,) = result.messages
    assert isinstance(message, AssistantMessage) and message.interrupted
    assert message.content == "partial "


async def test_malformed_chunk_is_an_error_result(
    openai_server: OpenAIWireServer, provider: OpenAIProvider
) -> None:
    openai_server.push(Reply(text="abcdef", chunk_chars=2, fault=MalformedChunk(after_chunks=1)))
    result = await Query(provider).run([], "hi")
    assert result.stop_reason is StopReason.ERROR
    assert result.error is not None and result.error.type == "MalformedStreamError"


async def test_reasoning_deltas(openai_server: OpenAIWireServer, provider: OpenAIProvider) -> None:
    openai_server.push(Reply(thinking="first I think", text="then I answer", chunk_chars=5))
    rec = Recorder()
    result = await Query(provider).run([], "q", observers=[rec])
    assert "".join(e.text for e in rec.of(ThinkingDelta)) == "first I think"
    message = result.messages[0]
    assert isinstance(message, AssistantMessage) and message.thinking == "first I think"
    kinds = [type(e).__name__ for e in rec.events]
    assert kinds.index("TextDelta") > max(i for i, k in enumerate(kinds) if k == "ThinkingDelta")


async def test_usage_is_summed_across_rounds(
    openai_server: OpenAIWireServer, provider: OpenAIProvider
) -> None:
    openai_server.push(
        Reply(
            tool_calls=(call("add", a=1, b=1),), usage={"prompt_tokens": 10, "completion_tokens": 3}
        ),
        Reply(
            tool_calls=(call("add", a=2, b=2),), usage={"prompt_tokens": 20, "completion_tokens": 4}
        ),
        Reply(text="done", usage={"prompt_tokens": 30, "completion_tokens": 5}),
    )
    result = await Query(provider, tools=[add]).run([], "q")
    assert result.usage == Usage(prompt_tokens=60, completion_tokens=12, requests=3)


async def test_committed_message_order(
    openai_server: OpenAIWireServer, provider: OpenAIProvider
) -> None:
    @tool
    async def nap(seconds: float) -> float:
        """Sleeps."""
        await anyio.sleep(seconds)
        return seconds

    openai_server.push(
        Reply(
            text="napping",
            tool_calls=(call("nap", "long", seconds=0.1), call("nap", "short", seconds=0.0)),
        ),
        Reply(text="rested"),
    )
    rec = Recorder()
    result = await Query(provider, tools=[nap]).run([], "q", observers=[rec])
    kinds = [
        (type(e).__name__, getattr(getattr(e, "message", None), "tool_call_id", None))
        for e in rec.events
        if not isinstance(e, TextDelta)
    ]
    assert kinds[0] == ("MessageCommitted", None)  # the assistant message, before any tool runs
    committed_tools = [k[1] for k in kinds if k[0] == "MessageCommitted" and k[1]]
    assert committed_tools == ["short", "long"]  # each result committed the moment it is final
    finished = [e.result.call_id for e in rec.of(ToolCallFinished)]
    assert finished == ["short", "long"]
    assert kinds[-2] == ("MessageCommitted", None) and kinds[-1] == ("QueryDone", None)
    assert rec.committed == list(result.messages)
    # the message order the model sees follows commit order
    sent = openai_server.chat_requests()[1].body["messages"]
    assert [m.get("tool_call_id") for m in sent[2:]] == ["short", "long"]


async def test_events_to_a_channel_and_a_failing_observer(
    openai_server: OpenAIWireServer, provider: OpenAIProvider
) -> None:
    openai_server.push(Reply(text="streamed", chunk_chars=3))
    send, receive = anyio.create_memory_object_stream[QueryEvent](100)

    def broken(event: QueryEvent) -> None:
        raise ValueError("observer bug")

    async with send, receive:
        result = await Query(provider).run([], "hi", observers=[broken], channel=send)
        received = [
            receive.receive_nowait() for _ in range(receive.statistics().current_buffer_used)
        ]
    assert result.text == "streamed"
    assert isinstance(received[-1], QueryDone) and received[-1].result == result
    assert "".join(e.text for e in received if isinstance(e, TextDelta)) == "streamed"


async def test_tool_context_reaches_tools_without_query_knowing(
    openai_server: OpenAIWireServer, provider: OpenAIProvider
) -> None:
    @tool
    async def whoami(ctx: ToolContext[str]) -> str:
        """Who is asking."""
        return ctx.deps

    openai_server.push(Reply(tool_calls=(call("whoami"),)), Reply(text="ok"))
    tools = ToolSet([whoami], context="session-42")
    result = await Query(provider, tools=tools).run([], "who?")
    assert result.tool_results[0].content == "session-42"


async def test_scripted_provider_runs_the_same_loop() -> None:
    provider = ScriptedProvider([Reply(tool_calls=(call("add", a=20, b=22),)), Reply(text="42")])
    result = await run_query("what is 20+22?", provider=provider, tools=[add])
    assert result.text == "42" and result.tool_results[0].content == "42"
    assert len(provider.requests) == 2
    assert isinstance(provider.requests[1].messages[-1], ToolMessage)


def test_run_query_sync_for_scripts() -> None:
    provider = ScriptedProvider([Reply(text="sync ok")])
    result = run_query_sync([UserMessage(content="hi")], provider=provider)
    assert result.text == "sync ok" and result.stop_reason is StopReason.END_TURN


def test_config_validation() -> None:
    with pytest.raises(ConfigurationError, match="max_rounds"):
        QueryConfig(max_rounds=0)
    with pytest.raises(ConfigurationError, match="tool_concurrency"):
        QueryConfig(tool_concurrency=0)
