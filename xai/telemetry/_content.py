"""What goes into span attributes besides plain values: message contents in the shape the
GenAI conventions give them (only when the user opted in), the server a provider talks to,
and a low-cardinality ``error.type`` for a failed tool call.

Every content string passes through ``redact``: a key that reached a prompt or a tool's
output never reaches a trace.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any, assert_never
from urllib.parse import urlsplit

import msgspec

from xai._redact import redact
from xai.messages import (
    AssistantMessage,
    Message,
    SystemMessage,
    ToolMessage,
    ToolResult,
    UserMessage,
)

__all__ = ["input_messages", "output_messages", "server_of", "to_json", "tool_error_type"]

_encode = msgspec.json.Encoder().encode


def to_json(value: Any) -> str:
    """``value`` as JSON text, redacted (span attributes hold strings, not structures)."""
    try:
        return redact(_encode(value).decode())
    except (TypeError, msgspec.EncodeError):
        return redact(str(value))


def _arguments(raw: str) -> Any:
    """Tool arguments as an object when they are JSON (the convention asks for one)."""
    try:
        return msgspec.json.decode(raw)
    except msgspec.DecodeError:
        return raw


def _message(message: Message) -> dict[str, Any]:
    if isinstance(message, UserMessage | SystemMessage):
        role = "user" if isinstance(message, UserMessage) else "system"
        return {"role": role, "parts": [{"type": "text", "content": message.content}]}
    if isinstance(message, AssistantMessage):
        parts: list[dict[str, Any]] = []
        if message.thinking:
            parts.append({"type": "reasoning", "content": message.thinking})
        if message.content:
            parts.append({"type": "text", "content": message.content})
        parts.extend(
            {
                "type": "tool_call",
                "id": call.id,
                "name": call.name,
                "arguments": _arguments(call.arguments),
            }
            for call in message.tool_calls
        )
        return {"role": "assistant", "parts": parts}
    if isinstance(message, ToolMessage):
        part = {
            "type": "tool_call_response",
            "id": message.tool_call_id,
            "response": message.content,
        }
        return {"role": "tool", "parts": [part]}
    assert_never(message)


def input_messages(messages: Sequence[Message]) -> str:
    """``gen_ai.input.messages``: the request's messages, in order, as JSON."""
    return to_json([_message(m) for m in messages])


def output_messages(message: AssistantMessage, finish_reason: str) -> str:
    """``gen_ai.output.messages``: the one answer a round produced, as JSON."""
    return to_json([{**_message(message), "finish_reason": finish_reason}])


def server_of(base_url: str | None) -> tuple[str, int] | None:
    """``server.address`` and ``server.port`` of an endpoint URL (the scheme's port if none)."""
    if not base_url:
        return None
    try:
        parts = urlsplit(base_url)
        port = parts.port
    except ValueError:
        return None
    if not parts.hostname:
        return None
    if port is None:
        port = 443 if parts.scheme == "https" else 80
    return parts.hostname, port


# The failures ``ToolSet.call`` reports, by the text it gives them (see xai/tools/_toolset.py).
_TOOL_ERRORS = (
    ("unknown tool ", "unknown_tool"),
    ("arguments are not valid JSON", "invalid_arguments"),
    ("arguments must be a JSON object", "invalid_arguments"),
    ("invalid arguments", "invalid_arguments"),
    ("timed out after ", "timeout"),
)
_EXCEPTION = re.compile(r"^([A-Za-z_][\w.]*(?:Error|Exception|Timeout|Exit|Interrupt)): ")


def tool_error_type(result: ToolResult) -> str:
    """A low-cardinality ``error.type`` for a failed call: ``unknown_tool``,
    ``invalid_arguments``, ``timeout``, the exception's class name when the tool raised
    one, ``tool_error`` when it raised ``ToolError`` (its message is the tool's own)."""
    error = result.error or ""
    for prefix, kind in _TOOL_ERRORS:
        if error.startswith(prefix):
            return kind
    match = _EXCEPTION.match(error)
    return match.group(1) if match else "tool_error"
