"""How a scripted ``Reply`` unfolds into stream pieces, shared by both test doubles."""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Iterator, Mapping
from typing import Any

import msgspec

from xai.messages import new_id
from xai.testing._script import Reply

__all__ = ["Piece", "estimate_usage", "finish_reason", "hash_embedding", "pieces"]

# ("thinking", text) | ("text", text) | ("tool", index, id, name or None, arguments piece)
Piece = tuple[Any, ...]


def _split(text: str, size: int, count: int | None) -> list[str]:
    if not text:
        return []
    if count is not None and count > 0:
        size = max(1, math.ceil(len(text) / count))
    size = max(1, size)
    return [text[i : i + size] for i in range(0, len(text), size)]


def pieces(reply: Reply) -> Iterator[Piece]:
    for part in _split(reply.thinking, reply.chunk_chars, None):
        yield ("thinking", part)
    for part in _split(reply.text, reply.chunk_chars, reply.text_chunks):
        yield ("text", part)
    for index, call in enumerate(reply.tool_calls):
        call_id = call.id or f"call_{new_id()}"
        parts = _split(call.arguments_text, reply.argument_chunk_chars, None) or [""]
        yield ("tool", index, call_id, call.name, parts[0])
        for part in parts[1:]:
            yield ("tool", index, None, None, part)


def finish_reason(reply: Reply) -> str:
    if reply.finish_reason is not None:
        return reply.finish_reason
    return "tool_calls" if reply.tool_calls else "stop"


def estimate_usage(body: Mapping[str, Any], reply: Reply) -> dict[str, int]:
    """Rough token counts (4 characters a token) unless the reply scripts its own."""
    if reply.usage is not None:
        usage = dict(reply.usage)
        usage.setdefault("prompt_tokens", 0)
        usage.setdefault("completion_tokens", 0)
        usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
        return usage
    prompt_chars = len(msgspec.json.encode(body.get("messages", [])))
    completion_chars = len(reply.text) + len(reply.thinking)
    completion_chars += sum(len(c.arguments_text) + len(c.name) for c in reply.tool_calls)
    prompt = prompt_chars // 4 + 1
    completion = completion_chars // 4 + 1
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
    }


_WORD = re.compile(r"\w+")


def hash_embedding(text: str, dim: int = 64) -> list[float]:
    """A deterministic bag-of-words vector: texts sharing words point the same way."""
    vector = [0.0] * dim
    for word in _WORD.findall(text.lower()):
        digest = hashlib.blake2b(word.encode(), digest_size=8).digest()
        index = int.from_bytes(digest[:4], "little") % dim
        vector[index] += 1.0 if digest[4] & 1 else -1.0
    norm = math.sqrt(sum(v * v for v in vector)) or 1.0
    return [v / norm for v in vector]
