"""The OpenAI Responses API as a provider mode (``LLMConfig(api="responses")``).

As for Chat Completions, the SDK sends the request (auth, base URL, typed HTTP errors) and
xai reads the stream itself: this module turns a ``ProviderRequest`` into the Responses
shape (``POST /responses``) and the published stream events into xai's provider events, the
same ones Chat Completions gives (text, thinking, tool-call pieces, ready calls, usage,
finish). Only the fields xai needs are decoded, with msgspec; the rest are skipped.

Each request carries the whole conversation (``store: false``): xai keeps the history in its
own journal, so nothing depends on the service remembering a previous response.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator
from contextlib import aclosing
from typing import Any, assert_never

import msgspec

from xai._redact import redact
from xai.exceptions import (
    BadRequestError,
    ContextTooLongError,
    MalformedStreamError,
    ServerError,
    StreamError,
)
from xai.messages import (
    AssistantMessage,
    Message,
    SystemMessage,
    ToolCall,
    ToolMessage,
    ToolSpec,
    Usage,
    UserMessage,
)
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
    "decode_responses",
    "responses_params",
    "to_responses_input",
    "to_responses_tools",
]

_INCOMPLETE: dict[str, FinishReason] = {
    "max_output_tokens": "length",
    "content_filter": "content_filter",
}


def to_responses_input(messages: tuple[Message, ...] | list[Message]) -> list[dict[str, Any]]:
    """Messages as Responses ``input`` items: role messages, ``function_call`` items for the
    assistant's tool calls, ``function_call_output`` items for their results."""
    items: list[dict[str, Any]] = []
    for message in messages:
        if isinstance(message, SystemMessage):
            items.append({"role": "system", "content": message.content})
        elif isinstance(message, UserMessage):
            items.append({"role": "user", "content": message.content})
        elif isinstance(message, AssistantMessage):
            if message.content.strip() or not message.tool_calls:
                items.append({"role": "assistant", "content": message.content or "[empty reply]"})
            items.extend(
                {
                    "type": "function_call",
                    "call_id": call.id,
                    "name": call.name,
                    "arguments": call.arguments,
                }
                for call in message.tool_calls
            )
        elif isinstance(message, ToolMessage):
            items.append(
                {
                    "type": "function_call_output",
                    "call_id": message.tool_call_id,
                    "output": message.content,
                }
            )
        else:
            assert_never(message)
    return items


def to_responses_tools(tools: tuple[ToolSpec, ...]) -> list[dict[str, Any]]:
    """Tool specs in the Responses shape (flat: no ``function`` wrapper)."""
    return [
        {
            "type": "function",
            "name": spec.name,
            "description": spec.description,
            "parameters": spec.parameters,
            "strict": False,  # xai validates arguments itself, against any schema
        }
        for spec in tools
    ]


def _text_format(response_format: dict[str, Any]) -> dict[str, Any]:
    """A Chat Completions ``response_format`` as the Responses ``text.format``."""
    if response_format.get("type") == "json_schema":
        inner = response_format.get("json_schema") or {}
        return {"type": "json_schema", **inner}
    return dict(response_format)


def responses_params(request: ProviderRequest, model: str) -> dict[str, Any]:
    """The keyword arguments of ``client.responses.create`` for one request."""
    params: dict[str, Any] = {
        "model": request.model or model,
        "input": to_responses_input(request.messages),
        "store": False,
        "stream": True,
    }
    if request.tools:
        params["tools"] = to_responses_tools(request.tools)
        if request.tool_choice is not None:
            choice = request.tool_choice
            params["tool_choice"] = (
                choice if choice in ("required", "none") else {"type": "function", "name": choice}
            )
    if request.max_tokens is not None:
        params["max_output_tokens"] = request.max_tokens
    if request.temperature is not None:
        params["temperature"] = request.temperature
    if request.response_format is not None:
        params["text"] = {"format": _text_format(request.response_format)}
    return params


class _Details(msgspec.Struct):
    cached_tokens: int | None = None
    reasoning_tokens: int | None = None


class _Usage(msgspec.Struct):
    input_tokens: int | None = None
    output_tokens: int | None = None
    input_tokens_details: _Details | None = None
    output_tokens_details: _Details | None = None


class _Error(msgspec.Struct):
    message: str = ""
    code: str | None = None


class _Incomplete(msgspec.Struct):
    reason: str | None = None


class _Response(msgspec.Struct):
    id: str | None = None
    model: str | None = None
    usage: _Usage | None = None
    error: _Error | None = None
    incomplete_details: _Incomplete | None = None


class _Item(msgspec.Struct):
    type: str = ""
    call_id: str | None = None
    name: str | None = None
    arguments: str | None = None


class _Event(msgspec.Struct):
    """The fields of a Responses stream event that xai reads (others are skipped)."""

    type: str = ""
    delta: str | None = None
    output_index: int = 0
    item: _Item | None = None
    response: _Response | None = None
    message: str | None = None
    code: str | None = None


_decode_event = msgspec.json.Decoder(_Event).decode


def _usage(raw: _Usage | None) -> Usage | None:
    if raw is None:
        return None
    details_in = raw.input_tokens_details
    details_out = raw.output_tokens_details
    return Usage(
        prompt_tokens=raw.input_tokens or 0,
        completion_tokens=raw.output_tokens or 0,
        reasoning_tokens=(details_out.reasoning_tokens or 0) if details_out else 0,
        cached_tokens=(details_in.cached_tokens or 0) if details_in else 0,
        requests=1,
    )


def _failure(error: _Error | None, fallback: str) -> BadRequestError | ServerError:
    code = (error.code if error is not None else None) or ""
    text = error.message if error is not None and error.message else fallback
    message = redact(f"the Responses API failed the request: {text}")
    if "context" in code:
        return ContextTooLongError(message, status_code=400)
    if code.startswith("invalid"):
        return BadRequestError(message, status_code=400)
    return ServerError(message)


async def _payloads(body: AsyncIterator[bytes]) -> AsyncGenerator[bytes, None]:
    """The ``data`` of each Server-Sent Event in ``body`` (``event:`` lines name the type
    again; the JSON's own ``type`` is what is read)."""
    buffer = b""
    data: list[bytes] = []
    async for piece in body:
        buffer = buffer + piece if buffer else piece
        *lines, buffer = buffer.split(b"\n")
        for line in lines:
            line = line.removesuffix(b"\r")
            if line:
                if line.startswith(b"data:"):
                    data.append(line[6:] if line[5:6] == b" " else line[5:])
                continue
            if data:
                yield b"\n".join(data)
                data = []
    if data:
        yield b"\n".join(data)


async def decode_responses(body: AsyncIterator[bytes]) -> AsyncGenerator[ProviderEvent, None]:
    """The raw bytes of a streamed Responses answer as xai's provider events.

    Tool calls are numbered in the order they start; ``ToolCallReady`` events come after the
    text, then ``UsageReport`` and ``StreamFinished``, as the provider protocol says. An
    ``error`` or ``response.failed`` event raises the typed provider error, a payload that is
    not JSON ``MalformedStreamError``, a stream that ends before ``response.completed``
    ``StreamError``.
    """
    slots: dict[int, int] = {}  # output_index -> our tool-call index
    calls: dict[int, ToolCall] = {}  # our index -> the finished call
    finished: list[ProviderEvent] = []
    # Closed explicitly when an event raises: left to the garbage collector, trio warns.
    async with aclosing(_payloads(body)) as payloads:
        async for payload in payloads:
            if payload == b"[DONE]":  # not sent by OpenAI; some gateways add it anyway
                continue
            try:
                event = _decode_event(payload)
            except msgspec.DecodeError as exc:
                raise MalformedStreamError(
                    redact(f"malformed Responses event ({exc}): {payload[:200]!r}")
                ) from None
            kind = event.type
            if kind == "response.output_text.delta":
                if event.delta:
                    yield TextChunk(event.delta)
            elif kind in ("response.reasoning_summary_text.delta", "response.reasoning_text.delta"):
                if event.delta:
                    yield ThinkingChunk(event.delta)
            elif kind == "response.output_item.added":
                item = event.item
                if item is not None and item.type == "function_call":
                    index = slots.setdefault(event.output_index, len(slots))
                    yield ToolCallChunk(index=index, id=item.call_id, name=item.name, arguments="")
            elif kind == "response.function_call_arguments.delta":
                index = slots.setdefault(event.output_index, len(slots))
                yield ToolCallChunk(index=index, id=None, name=None, arguments=event.delta or "")
            elif kind == "response.output_item.done":
                item = event.item
                if item is not None and item.type == "function_call":
                    index = slots.setdefault(event.output_index, len(slots))
                    calls[index] = ToolCall(
                        item.call_id or f"call_{index}", item.name or "", item.arguments or "{}"
                    )
            elif kind in ("response.completed", "response.incomplete"):
                response = event.response or _Response()
                finished = [ToolCallReady(calls[index]) for index in sorted(calls)]
                usage = _usage(response.usage)
                if usage is not None:
                    finished.append(UsageReport(usage))
                raw: str | None = None
                reason: FinishReason = "tool_calls" if calls else "stop"
                if kind == "response.incomplete":
                    details = response.incomplete_details
                    raw = details.reason if details is not None else None
                    reason = _INCOMPLETE.get(raw or "", "length")
                finished.append(
                    StreamFinished(
                        reason=reason, raw_reason=raw, model=response.model, response_id=response.id
                    )
                )
            elif kind == "response.failed":
                raise _failure(event.response.error if event.response else None, kind)
            elif kind == "error":
                raise _failure(_Error(message=event.message or "", code=event.code), kind)
    if not finished:  # the stream ended without response.completed: the answer is not whole
        raise StreamError("the Responses API stream ended before response.completed")
    for last in finished:
        yield last
