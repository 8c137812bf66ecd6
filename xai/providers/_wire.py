"""Decoding an OpenAI Chat Completions answer, streamed or whole, into provider events.

The SDK's own stream parser builds a pydantic model per chunk; here the SSE
lines are split on bytes and each ``data:`` payload is decoded by msgspec
straight into small typed structs, which is most of why a Query costs less
CPU than a plain SDK loop (see ``bench/overhead.py``). A whole JSON answer
(``"stream": false``, or a gateway that ignores ``stream``) is decoded by the
same structs into the same events (``decode_body`` tells the two apart).
"""

from __future__ import annotations

import functools
from collections.abc import AsyncGenerator, AsyncIterator, Iterator
from contextlib import aclosing
from typing import Literal

import msgspec

from xai._redact import redact
from xai.exceptions import MalformedStreamError, ProviderError, StreamError
from xai.messages import ToolCall, Usage, new_id
from xai.providers._estimate import estimate_usage
from xai.providers._limit import RequestLimit
from xai.providers._protocol import (
    FinishReason,
    ProviderEvent,
    ProviderRequest,
    StreamFinished,
    TextChunk,
    ThinkingChunk,
    ToolCallChunk,
    ToolCallReady,
    UsageReport,
)

__all__ = [
    "BodyKind",
    "EmptyAnswerError",
    "body_kind",
    "decode_body",
    "decode_completion",
    "decode_stream",
    "map_finish_reason",
]


class EmptyAnswerError(StreamError):
    """The answer's body held nothing at all: not one chunk, no ``[DONE]``.

    ``OpenAIProvider`` turns it into an inferred ``ContextTooLongError``: it is
    how llama.cpp's server answers a streamed request past its context window.
    """


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
    function_call: _Function | None = None
    """The legacy (pre-``tools``) single call; llama.cpp sends it beside ``tool_calls``."""


class _Choice(msgspec.Struct):
    delta: _Delta | None = None
    """A stream chunk's piece of the message."""
    message: _Delta | None = None
    """A whole answer's message (same fields; its tool calls carry no ``index``)."""
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


def _chunk(payload: bytes, what: str, where: str) -> _Chunk:
    """One decoded chunk (or whole answer); a body that is not one, or that carries an
    ``error`` object, raises the typed error naming ``what`` / ``where`` it was."""
    try:
        chunk = _decode_chunk(payload)
    except msgspec.DecodeError as exc:
        raise MalformedStreamError(redact(f"malformed {what} ({exc}): {payload[:200]!r}")) from None
    if chunk.error is not None:
        raise ProviderError(redact(f"error {where}: {chunk.error.message}"))
    return chunk


async def decode_stream(
    body: AsyncIterator[bytes],
    *,
    request: ProviderRequest | None = None,
    limit: RequestLimit | None = None,
) -> AsyncGenerator[ProviderEvent, None]:
    """Turn the raw bytes of an SSE response into provider events.

    Tool-call pieces are assembled by ``index`` (parallel calls interleave);
    an id or name repeated on every piece counts once, and a legacy
    ``function_call`` delta is read as call 0 unless the stream uses
    ``tool_calls``. The complete calls are emitted after the text, then usage (if the server
    sent none and ``request`` is given, an estimate: see ``xai.providers._estimate``), then
    ``StreamFinished``. ``limit`` bounds the whole answer (``ProviderTimeoutError``).
    Raises ``MalformedStreamError`` for a payload that is not a chunk and ``StreamError``
    if the stream ends before the model finished.

    One generator does it all, usage and limit included: each layer of async generators
    between the socket and the Query costs CPU on every streamed event.
    """
    ids: dict[int, str] = {}
    names: dict[int, str] = {}
    arguments: dict[int, list[str]] = {}
    modern = False  # the stream has used ``tool_calls`` (so a legacy ``function_call`` is a copy)
    raw_finish: str | None = None
    finished = False
    usage: Usage | None = None
    first: _Chunk | None = None  # names the model that answered and the completion
    buffer = b""
    data_lines: list[bytes] = []
    # Kept only for an estimate, should the server send no usage.
    text: list[str] | None = [] if request is not None else None
    thinking: list[str] | None = [] if request is not None else None

    async for piece in body if limit is None else limit.guard(body):
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
            chunk = _chunk(payload, "stream chunk", "inside the stream")
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
            reasoning = delta.reasoning_content or delta.reasoning
            if reasoning:
                if thinking is not None:
                    thinking.append(reasoning)
                yield ThinkingChunk(reasoning)
            content = delta.content
            if content:
                if text is not None:
                    text.append(content)
                yield TextChunk(content)
            calls = delta.tool_calls
            if calls:
                modern = True
            elif delta.function_call is not None and not modern:
                # A server that speaks only the legacy field: one call, index 0. Beside
                # ``tool_calls`` (llama.cpp sends both) it repeats them and is ignored.
                calls = [_ToolCallDelta(function=delta.function_call)]
            for call in calls or ():
                index = call.index
                fn = call.function
                name = fn.name if fn is not None else None
                args = (fn.arguments if fn is not None else None) or ""
                # Some servers (llama.cpp) repeat the id and the name on every piece:
                # the first of each is whole, and later pieces carry only arguments.
                call_id = call.id if call.id and index not in ids else None
                if call_id:
                    ids[index] = call_id
                name = name if name and index not in names else None
                if name:
                    names[index] = name
                arguments.setdefault(index, []).append(args)
                yield ToolCallChunk(index, call_id, name, args)

    if not finished and raw_finish is None:
        if first is None:
            raise EmptyAnswerError("the stream was empty: HTTP 200 and not one chunk")
        raise StreamError("the stream ended before the model finished its answer")
    model, response_id = (first.model, first.id) if first is not None else (None, None)
    answer = _Answer(request, text, thinking) if usage is None and request is not None else None
    for event in _ending(ids, names, arguments, usage, raw_finish, model, response_id, answer):
        yield event


class _Answer(msgspec.Struct, frozen=True):
    """What an estimate of a usage the server did not send is made from."""

    request: ProviderRequest
    text: list[str] | None
    thinking: list[str] | None

    def usage(self, calls: list[ToolCall]) -> Usage:
        return estimate_usage(
            self.request,
            text="".join(self.text or ()),
            thinking="".join(self.thinking or ()),
            calls=tuple(calls),
        )


def _ending(
    ids: dict[int, str],
    names: dict[int, str],
    arguments: dict[int, list[str]],
    usage: Usage | None,
    raw_finish: str | None,
    model: str | None,
    response_id: str | None,
    answer: _Answer | None = None,
) -> Iterator[ProviderEvent]:
    """The assembled tool calls, the usage (the server's, else estimated from ``answer``
    when given) and ``StreamFinished`` (naming the model that answered and the
    completion's id, when the server said)."""
    calls: list[ToolCall] = []
    for index in sorted(arguments):
        name = names.get(index)
        if not name:
            raise MalformedStreamError(f"tool call #{index} in the answer has no function name")
        call = ToolCall(
            id=ids.get(index) or f"call_{new_id()}",
            name=name,
            arguments="".join(arguments[index]) or "{}",
        )
        calls.append(call)
        yield ToolCallReady(call)
    if usage is None and answer is not None:
        usage = answer.usage(calls)
    if usage is not None:
        yield UsageReport(usage)
    yield StreamFinished(
        map_finish_reason(raw_finish, has_tool_calls=bool(arguments)),
        raw_finish,
        model=model,
        response_id=response_id,
    )


def decode_completion(
    payload: bytes, *, request: ProviderRequest | None = None
) -> list[ProviderEvent]:
    """The events of one whole JSON answer (a ``chat.completion`` object).

    The same events a stream of that answer gives, as if it had come in one
    chunk: thinking, text, one ``ToolCallChunk`` per call, then the assembled
    calls, the usage (if the server sent none and ``request`` is given, an
    estimate) and ``StreamFinished``. Raises
    ``MalformedStreamError`` for a body that is not a completion and
    ``ProviderError`` for an ``{"error": …}`` body.
    """
    completion = _chunk(payload, "JSON answer", "in the answer")
    if not completion.choices:
        raise MalformedStreamError(redact(f"a JSON answer without choices: {payload[:200]!r}"))
    choice = completion.choices[0]
    message = choice.message or choice.delta
    events: list[ProviderEvent] = []
    ids: dict[int, str] = {}
    names: dict[int, str] = {}
    arguments: dict[int, list[str]] = {}
    text: list[str] = []
    thinking: list[str] = []
    if message is not None:
        reasoning = message.reasoning_content or message.reasoning
        if reasoning:
            thinking.append(reasoning)
            events.append(ThinkingChunk(reasoning))
        if message.content:
            text.append(message.content)
            events.append(TextChunk(message.content))
        # A whole message lists its calls in order; ``index`` belongs to stream deltas.
        whole_calls = message.tool_calls
        if not whole_calls and message.function_call is not None:
            whole_calls = [_ToolCallDelta(function=message.function_call)]  # the legacy field
        for index, call in enumerate(whole_calls or ()):
            fn = call.function
            name = fn.name if fn is not None else None
            args = (fn.arguments if fn is not None else None) or ""
            if call.id:
                ids[index] = call.id
            if name:
                names[index] = name
            arguments[index] = [args]
            events.append(ToolCallChunk(index, call.id, name, args))
    usage = _usage(completion.usage) if completion.usage is not None else None
    answer = _Answer(request, text, thinking) if usage is None and request is not None else None
    # A whole answer is finished by definition, whatever its finish reason says.
    events.extend(
        _ending(
            ids,
            names,
            arguments,
            usage,
            choice.finish_reason,
            completion.model,
            completion.id,
            answer,
        )
    )
    return events


async def _decode_whole(
    body: AsyncIterator[bytes], request: ProviderRequest | None, limit: RequestLimit | None
) -> AsyncGenerator[ProviderEvent, None]:
    parts: list[bytes] = []
    async for piece in body if limit is None else limit.guard(body):
        parts.append(piece)
    payload = b"".join(parts)
    if not payload.strip():
        raise EmptyAnswerError("the answer was empty: HTTP 200 and no body")
    for event in decode_completion(payload, request=request):
        yield event


async def _prepend(first: bytes, rest: AsyncIterator[bytes]) -> AsyncGenerator[bytes, None]:
    yield first
    async for piece in rest:
        yield piece


BodyKind = Literal["stream", "whole", "unknown"]


@functools.lru_cache(maxsize=64)
def body_kind(content_type: str | None) -> BodyKind:
    """What a ``Content-Type`` says the body is: an SSE ``stream``, a ``whole`` JSON answer,
    or ``unknown`` (told apart by its first byte). Parsed once per distinct header value."""
    kind = (content_type or "").split(";", 1)[0].strip().lower()
    if kind == "text/event-stream":
        return "stream"
    if kind == "application/json" or kind.endswith("+json"):
        return "whole"
    return "unknown"


def decode_body(
    body: AsyncIterator[bytes],
    content_type: str | None,
    *,
    request: ProviderRequest | None = None,
    limit: RequestLimit | None = None,
) -> AsyncGenerator[ProviderEvent, None]:
    """Provider events from an answer's body, streamed (SSE) or whole (JSON).

    The ``Content-Type`` decides: ``text/event-stream`` is a stream,
    ``application/json`` (or any ``+json``) a whole answer, which is what a
    gateway that ignores ``"stream": true`` sends. A body labelled neither is
    told apart by its first byte (``{`` starts a JSON answer). ``request`` and
    ``limit`` are ``decode_stream``'s.
    """
    kind = body_kind(content_type)
    if kind == "stream":
        # The decoder itself: no extra step per chunk.
        return decode_stream(body, request=request, limit=limit)
    if kind == "whole":
        return _decode_whole(body, request, limit)
    return _decode_sniffed(body, request, limit)


async def _decode_sniffed(
    body: AsyncIterator[bytes], request: ProviderRequest | None, limit: RequestLimit | None
) -> AsyncGenerator[ProviderEvent, None]:
    body = body if limit is None else limit.guard(body)  # bounded here, once for all
    first = b""
    async for piece in body:
        first += piece
        if first.strip():
            break
    chained = _prepend(first, body)
    whole = first.lstrip().startswith(b"{")
    events = (
        _decode_whole(chained, request, None) if whole else decode_stream(chained, request=request)
    )
    async with aclosing(events):
        async for event in events:
            yield event
