"""Token estimates for an answer whose server reported no usage.

Some servers ignore ``stream_options.include_usage``, and some gateways strip
the usage from a whole answer. Rather than count such a request as free
(zeros), the provider estimates its tokens and marks the figure
``Usage.estimated``.

The tokenizer is a calibrated rule of thumb, not a model's vocabulary:
**UTF-8 bytes / 4**. For English and code that is the familiar "four
characters a token" (OpenAI's guide; the Session's compaction starts from it
too); for other scripts it scales with how BPE vocabularies split them: a
Chinese character (3 bytes) counts 0.75 tokens, between DeepSeek's published
0.6 and the ~1 of OpenAI's cl100k, and a Cyrillic or Greek letter (2 bytes)
0.5. Plain ``chars / 4`` would count Chinese text at a third of its cost. The
offline MiniLM tokenizer that memory ships is not used: it is a 30k-word
uncased English WordPiece vocabulary, no closer to any chat model's BPE than
this rule, it lives in the memory layer above providers, and loading it would
cost every provider a tokenizer for a figure that stays an estimate anyway.
The model's real tokenizer is unknown here (any OpenAI-compatible service).

A prompt is estimated from the request's messages (content, tool calls and
results), the tool specs and the response format, plus a few tokens of
framing per message as chat formats add; the completion from the text, the
thinking and the tool calls (name and arguments) the answer produced.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator

import msgspec

from xai.messages import AssistantMessage, ToolCall, Usage
from xai.providers._protocol import (
    ProviderEvent,
    ProviderRequest,
    StreamFinished,
    TextChunk,
    ThinkingChunk,
    ToolCallReady,
    UsageReport,
)

__all__ = ["estimate_tokens", "estimate_usage", "fill_missing_usage"]

_BYTES_PER_TOKEN = 4
_PER_MESSAGE_TOKENS = 4
"""Role and separators around each message (OpenAI's chat format counts 3 or 4)."""
_REPLY_PRIMING_TOKENS = 3
"""The assistant header every answer is primed with."""
_PER_TOOL_TOKENS = 8
"""The framing a server wraps around each tool spec it shows the model."""


def estimate_tokens(text: str) -> int:
    """Estimated tokens of ``text``: its UTF-8 bytes / 4, rounded up (see the module doc)."""
    if not text:
        return 0
    return -(-len(text.encode()) // _BYTES_PER_TOKEN)


def _call_tokens(call: ToolCall) -> int:
    return estimate_tokens(call.name) + estimate_tokens(call.arguments)


def estimate_prompt_tokens(request: ProviderRequest) -> int:
    """Estimated prompt tokens of ``request`` (thinking is never sent, so never counted)."""
    total = _REPLY_PRIMING_TOKENS
    for message in request.messages:
        total += _PER_MESSAGE_TOKENS + estimate_tokens(message.content)
        if isinstance(message, AssistantMessage):
            total += sum(_call_tokens(call) for call in message.tool_calls)
    for spec in request.tools:
        total += _PER_TOOL_TOKENS + estimate_tokens(spec.name) + estimate_tokens(spec.description)
        total += estimate_tokens(msgspec.json.encode(spec.parameters).decode())
    if request.response_format is not None:
        total += estimate_tokens(msgspec.json.encode(request.response_format).decode())
    return total


def estimate_usage(
    request: ProviderRequest, *, text: str, thinking: str, calls: tuple[ToolCall, ...] = ()
) -> Usage:
    """An estimated ``Usage`` of one request and the answer it got."""
    reasoning = estimate_tokens(thinking)
    completion = estimate_tokens(text) + reasoning + sum(_call_tokens(c) for c in calls)
    return Usage(
        prompt_tokens=estimate_prompt_tokens(request),
        completion_tokens=completion,
        reasoning_tokens=reasoning,
        requests=1,
        estimated=True,
    )


async def fill_missing_usage(
    events: AsyncIterator[ProviderEvent], request: ProviderRequest
) -> AsyncGenerator[ProviderEvent, None]:
    """Pass ``events`` on; if the stream finishes without a ``UsageReport``, add an estimated
    one just before ``StreamFinished`` (where the protocol puts usage)."""
    text: list[str] = []
    thinking: list[str] = []
    calls: list[ToolCall] = []
    reported = False
    async for event in events:
        if isinstance(event, TextChunk):
            text.append(event.text)
        elif isinstance(event, ThinkingChunk):
            thinking.append(event.text)
        elif isinstance(event, ToolCallReady):
            calls.append(event.call)
        elif isinstance(event, UsageReport):
            reported = True
        elif isinstance(event, StreamFinished) and not reported:
            usage = estimate_usage(
                request, text="".join(text), thinking="".join(thinking), calls=tuple(calls)
            )
            yield UsageReport(usage)
        yield event
