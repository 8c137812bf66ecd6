from __future__ import annotations

import msgspec
import pytest

from xai.events import (
    MessageCommitted,
    QueryDone,
    TextDelta,
    ToolCallFinished,
    decode_query_event,
)
from xai.messages import (
    AssistantMessage,
    ErrorInfo,
    Message,
    QueryResult,
    StopReason,
    SystemMessage,
    ToolCall,
    ToolMessage,
    ToolResult,
    Usage,
    UserMessage,
    decode_message,
    decode_messages,
    encode,
)

MESSAGES: list[Message] = [
    SystemMessage(content="be brief"),
    UserMessage(content="hi", origin="agent"),
    AssistantMessage(
        content="calling",
        thinking="hmm",
        tool_calls=(ToolCall("c1", "add", '{"a":1}'),),
    ),
    ToolMessage(tool_call_id="c1", tool_name="add", content="2", is_error=False),
    AssistantMessage(content="partial", interrupted=True),
]


@pytest.mark.parametrize("message", MESSAGES, ids=lambda m: type(m).__name__)
def test_message_round_trips_through_json(message: Message) -> None:
    data = encode(message)
    assert decode_message(data) == message
    assert msgspec.json.decode(data)["role"] in ("system", "user", "assistant", "tool")


def test_message_list_round_trip_keeps_order_and_ids() -> None:
    decoded = decode_messages(encode(MESSAGES))
    assert decoded == MESSAGES
    assert [m.id for m in decoded] == [m.id for m in MESSAGES]
    assert len({m.id for m in MESSAGES}) == len(MESSAGES)


def test_messages_are_frozen() -> None:
    message = UserMessage(content="x")
    with pytest.raises(AttributeError):
        message.content = "y"  # type: ignore[misc]


def test_user_origin_is_validated() -> None:
    with pytest.raises(msgspec.ValidationError):
        decode_message(b'{"role":"user","content":"x","origin":"martian"}')


def test_usage_adds_up() -> None:
    total = Usage(prompt_tokens=3, completion_tokens=2, requests=1) + Usage(
        prompt_tokens=5, completion_tokens=1, reasoning_tokens=1, requests=1
    )
    assert total == Usage(prompt_tokens=8, completion_tokens=3, reasoning_tokens=1, requests=2)
    assert total.total_tokens == 11


def test_query_result_text_is_last_assistant_message() -> None:
    result = QueryResult(query_id="q", stop_reason=StopReason.END_TURN, messages=tuple(MESSAGES))
    assert result.text == "partial"
    assert [m.tool_call_id for m in result.tool_results] == ["c1"]
    assert QueryResult(query_id="q", stop_reason=StopReason.ERROR).text == ""


def test_query_events_round_trip() -> None:
    result = QueryResult(
        query_id="q",
        stop_reason=StopReason.ERROR,
        messages=tuple(MESSAGES),
        usage=Usage(prompt_tokens=1, requests=1),
        rounds=2,
        error=ErrorInfo(type="ServerError", message="boom", retryable=True, status_code=500),
    )
    record = ToolResult(
        call_id="c1", tool_name="add", success=True, arguments={"a": 1}, result=2, content="2"
    )
    events = [
        TextDelta(query_id="q", round=1, text="he"),
        MessageCommitted(query_id="q", round=1, message=MESSAGES[2]),
        ToolCallFinished(query_id="q", round=1, result=record),
        QueryDone(query_id="q", round=2, result=result),
    ]
    for event in events:
        assert decode_query_event(encode(event)) == event
