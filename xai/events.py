"""Events a Query emits, as one tagged union (``QueryEvent``) keyed by ``type``.

No event refers to a Session or an Agent: they carry the Query's id, the round
(1-based model request number) and plain values, so they can be journaled,
sent over a wire or fanned out to any number of observers.

Order within one Query: for each round, ``TextDelta`` / ``ThinkingDelta`` as
they stream, then ``MessageCommitted`` for the round's assistant message, then
per tool call ``ToolCallStarted`` … ``ToolCallFinished`` + ``MessageCommitted``
(tool calls overlap, so their events interleave), and finally one
``QueryDone`` — always, even when the Query is cancelled or fails.
"""

from __future__ import annotations

from typing import TypeAlias

import msgspec

from xai.messages import Message, QueryResult, ToolCall, ToolResult

__all__ = [
    "MessageCommitted",
    "QueryDone",
    "QueryEvent",
    "TextDelta",
    "ThinkingDelta",
    "ToolCallFinished",
    "ToolCallStarted",
    "decode_query_event",
]


class _QueryEvent(msgspec.Struct, frozen=True, kw_only=True, tag_field="type"):
    query_id: str
    round: int


class TextDelta(_QueryEvent, frozen=True, tag="text_delta"):
    text: str


class ThinkingDelta(_QueryEvent, frozen=True, tag="thinking_delta"):
    text: str


class ToolCallStarted(_QueryEvent, frozen=True, tag="tool_call_started"):
    call: ToolCall


class ToolCallFinished(_QueryEvent, frozen=True, tag="tool_call_finished"):
    result: ToolResult


class MessageCommitted(_QueryEvent, frozen=True, tag="message_committed"):
    """A message is final. A Session journals it before it shows the event to anyone."""

    message: Message


class QueryDone(_QueryEvent, frozen=True, tag="query_done"):
    result: QueryResult


QueryEvent: TypeAlias = (
    TextDelta | ThinkingDelta | ToolCallStarted | ToolCallFinished | MessageCommitted | QueryDone
)

_decoder = msgspec.json.Decoder(QueryEvent)


def decode_query_event(data: bytes | str) -> QueryEvent:
    return _decoder.decode(data)
