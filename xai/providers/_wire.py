"""Decoding an OpenAI Chat Completions SSE stream into provider events.

The SDK's own stream parser builds a pydantic model per chunk; here the SSE
lines are split on bytes and each ``data:`` payload is decoded by msgspec
straight into small typed structs, which is most of why a Query costs less
CPU than a plain SDK loop (see ``bench/overhead.py``).
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator

import msgspec

from xai._redact import redact
from xai.exceptions import MalformedStreamError, ProviderError, StreamError
from xai.messages import ToolCall, Usage, new_id
from xai.providers._protocol import (
    FinishReason,
    ProviderEvent,
    StreamFinished,
    TextChunk,
    ThinkingChunk,
    ToolCallChunk,
    ToolCallReady,
    UsageReport,
)

__all__ = ["decode_stream", "map_finish_reason"]


class _Function(msgspec.Struct):
    name: str | None = None
    arguments: str | None = None


class _ToolCallDelta(msgspec.Struct):
    index: int = 0
    id: str | None = None
    function: _Function | None = None


class _Delta(msgspec.Struct):
    content: str | None = None
    reasoning_content: str | None = None
    reasoning: str | None = None
    tool_calls: list[_ToolCallDelta] | None = None


class _Choice(msgspec.Struct):
    delta: _Delta | None = None
    finish_reason: str | None = None


class _PromptDetails(msgspec.Struct):
    cached_tokens: int | None = None


class _CompletionDetails(msgspec.Struct):
    reasoning_tokens: int | None = None


class _Usage(msgspec.Struct):
    prompt_tokens: int | None = 0
    completion_tokens: int | None = 0
    prompt_tokens_details: _PromptDetails | None = None
    completion_tokens_details: _CompletionDetails | None = None


class _StreamErrorBody(msgspec.Struct):
    message: str = "the server reported an error inside the stream"
    code: str | int | None = None


class _Chunk(msgspec.Struct):
    id: str | None = None
    model: str | None = None
    choices: list[_Choice] | None = None
    usage: _Usage | None = None
    error: _StreamErrorBody | None = None


_decode_chunk = msgspec.json.Decoder(_Chunk).decode

_FINISH: dict[str, FinishReason] = {
    "stop": "stop",
    "end_turn": "stop",
    "eos": "stop",
    "tool_calls": "tool_calls",
    "function_call": "tool_calls",
    "tool_use": "tool_calls",
    "length": "length",
    "max_tokens": "length",
    "content_filter": "content_filter",
}


def map_finish_reason(raw: str | None, *, has_tool_calls: bool) -> FinishReason:
    """Map a server's finish reason onto ours; unknown values count as a normal stop."""
    if raw is not None and raw in _FINISH:
        return _FINISH[raw]
    return "tool_calls" if has_tool_calls else "stop"


def _usage(raw: _Usage) -> Usage:
    return Usage(
        prompt_tokens=raw.prompt_tokens or 0,
        completion_tokens=raw.completion_tokens or 0,
        reasoning_tokens=(raw.completion_tokens_details.reasoning_tokens or 0)
        if raw.completion_tokens_details
        else 0,
        cached_tokens=(raw.prompt_tokens_details.cached_tokens or 0)
        if raw.prompt_tokens_details
        else 0,
        requests=1,
    )


async def decode_stream(body: AsyncIterator[bytes]) -> AsyncGenerator[ProviderEvent, None]:
    """Turn the raw bytes of an SSE response into provider events.

    Tool-call pieces are assembled by ``index`` (parallel calls interleave);
    the complete calls are emitted after the text, then usage (if the server
    sent any), then ``StreamFinished``. Raises ``MalformedStreamError`` for a
    payload that is not a chunk and ``StreamError`` if the stream ends before
    the model finished.
    """
    ids: dict[int, str] = {}
    names: dict[int, str] = {}
    arguments: dict[int, list[str]] = {}
    raw_finish: str | None = None
    finished = False
    usage: Usage | None = None
    first: _Chunk | None = None  # names the model that answered and the completion
    buffer = b""
    data_lines: list[bytes] = []

    async for piece in body:
        buffer = buffer + piece if buffer else piece
        *lines, buffer = buffer.split(b"\n")
        for line in lines:
            if line.endswith(b"\r"):
                line = line[:-1]
            if line:
                if line.startswith(b"data:"):
                    data_lines.append(line[6:] if line[5:6] == b" " else line[5:])
                continue  # comments (":"), "event:", "id:" and "retry:" lines carry nothing for us
            if not data_lines:
                continue
            payload = data_lines[0] if len(data_lines) == 1 else b"\n".join(data_lines)
            data_lines = []
            if payload == b"[DONE]":
                finished = True
                continue
            try:
                chunk = _decode_chunk(payload)
            except msgspec.DecodeError as exc:
                raise MalformedStreamError(
                    redact(f"malformed stream chunk ({exc}): {payload[:200]!r}")
                ) from None
            if chunk.error is not None:
                raise ProviderError(redact(f"error inside the stream: {chunk.error.message}"))
            if first is None:
                first = chunk
            if chunk.usage is not None:
                usage = _usage(chunk.usage)
            if not chunk.choices:
                continue
            choice = chunk.choices[0]
            if choice.finish_reason is not None:
                raw_finish = choice.finish_reason
            delta = choice.delta
            if delta is None:
                continue
            thinking = delta.reasoning_content or delta.reasoning
            if thinking:
                yield ThinkingChunk(thinking)
            if delta.content:
                yield TextChunk(delta.content)
            if delta.tool_calls:
                for call in delta.tool_calls:
                    index = call.index
                    fn = call.function
                    name = fn.name if fn is not None else None
                    args = (fn.arguments if fn is not None else None) or ""
                    if call.id:
                        ids[index] = call.id
                    if name and index not in names:
                        # Some servers repeat the name on every chunk; the first one is whole.
                        names[index] = name
                    arguments.setdefault(index, []).append(args)
                    yield ToolCallChunk(index, call.id, name, args)

    if not finished and raw_finish is None:
        raise StreamError("the stream ended before the model finished its answer")
    for index in sorted(arguments):
        name = names.get(index)
        if not name:
            raise MalformedStreamError(f"tool call #{index} in the stream has no function name")
        yield ToolCallReady(
            ToolCall(
                id=ids.get(index) or f"call_{new_id()}",
                name=name,
                arguments="".join(arguments[index]) or "{}",
            )
        )
    if usage is not None:
        yield UsageReport(usage)
    yield StreamFinished(
        map_finish_reason(raw_finish, has_tool_calls=bool(arguments)),
        raw_finish,
        model=first.model if first is not None else None,
        response_id=first.id if first is not None else None,
    )
