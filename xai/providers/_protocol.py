"""The provider protocol: one request in, a stream of typed provider events out."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any, Literal, Protocol, TypeAlias, runtime_checkable

import msgspec

from xai.messages import Message, ToolCall, ToolSpec, Usage

__all__ = [
    "FinishReason",
    "Provider",
    "ProviderEvent",
    "ProviderRequest",
    "StreamFinished",
    "TextChunk",
    "ThinkingChunk",
    "ToolCallChunk",
    "ToolCallReady",
    "UsageReport",
]

FinishReason: TypeAlias = Literal["stop", "tool_calls", "length", "content_filter"]


class ProviderRequest(msgspec.Struct, frozen=True, kw_only=True):
    """One model request: the whole conversation so far plus per-request options."""

    messages: tuple[Message, ...]
    tools: tuple[ToolSpec, ...] = ()
    max_tokens: int | None = None
    temperature: float | None = None
    response_format: dict[str, Any] | None = None
    """Passed through as-is, e.g. ``{"type": "json_object"}`` or a ``json_schema`` format."""
    model: str | None = None
    """Overrides the provider's configured model for this request."""
    tool_choice: str | None = None
    """``None``: the model decides (nothing sent); ``"required"``: it must call a tool;
    ``"none"``: it must not; any other value names the tool it must call."""


class _ProviderEvent(msgspec.Struct, frozen=True, tag_field="type"):
    pass


class TextChunk(_ProviderEvent, frozen=True, tag="text"):
    text: str


class ThinkingChunk(_ProviderEvent, frozen=True, tag="thinking"):
    """Reasoning text (``reasoning_content`` / ``reasoning`` deltas)."""

    text: str


class ToolCallChunk(_ProviderEvent, frozen=True, tag="tool_call_chunk"):
    """A piece of a tool call as it streams; ``index`` says which call it belongs to."""

    index: int
    id: str | None
    name: str | None
    arguments: str


class ToolCallReady(_ProviderEvent, frozen=True, tag="tool_call_ready"):
    """A tool call assembled from its chunks, emitted once the model has finished."""

    call: ToolCall


class UsageReport(_ProviderEvent, frozen=True, tag="usage"):
    usage: Usage


class StreamFinished(_ProviderEvent, frozen=True, tag="finished"):
    """The last event of a successful stream.

    ``raw_reason`` is what the server said (``None`` if it said nothing).
    """

    reason: FinishReason
    raw_reason: str | None = None
    model: str | None = None
    """The model that answered, as the server named it (if it did)."""
    response_id: str | None = None
    """The server's id of the completion (if it sent one)."""


ProviderEvent: TypeAlias = (
    TextChunk | ThinkingChunk | ToolCallChunk | ToolCallReady | UsageReport | StreamFinished
)


@runtime_checkable
class Provider(Protocol):
    """Anything that can stream a model's answer as ``ProviderEvent``s.

    A stream ends with exactly one ``StreamFinished`` or raises a
    ``ProviderError``. ``ToolCallReady`` events come after all text, and
    ``UsageReport`` (at most one) just before ``StreamFinished``.
    """

    @property
    def model(self) -> str: ...

    def stream(self, request: ProviderRequest) -> AsyncIterator[ProviderEvent]: ...

    async def aclose(self) -> None: ...
