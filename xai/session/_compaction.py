"""Keeping a Session's next request inside the model's context window.

Between Queries only: estimate the next request (characters calibrated by the
prompt tokens the provider last reported), and above the threshold replace the
older part of the history by a summary: written by the model under the
summariser's own limits, or, if that fails, a rule-based digest. The system
prompt and the most recent messages stay; a tool call never loses its result.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, assert_never

from xai.exceptions import RunError
from xai.messages import (
    AssistantMessage,
    Message,
    StopReason,
    SystemMessage,
    ToolMessage,
    Usage,
    UserMessage,
)
from xai.providers import Provider
from xai.query import Query, QueryConfig

if TYPE_CHECKING:
    from xai.telemetry import Telemetry

__all__ = [
    "COMPACTION_MARKER",
    "Calibration",
    "digest",
    "message_chars",
    "split_point",
    "summarise",
]

COMPACTION_MARKER = "[xai:compaction]"
_PER_MESSAGE_CHARS = 16  # role, separators and ids on the wire

SUMMARISER_PROMPT = (
    "You compress conversations. Write a faithful, compact summary of the conversation "
    "below so it can continue without it: the user's goals and requests, facts and "
    "decisions, what tools returned that still matters, open questions and commitments. "
    "Keep names, numbers and identifiers exact. Plain text, no preamble."
)


def message_chars(message: Message) -> int:
    """Characters a message costs on the wire (thinking is not sent back)."""
    size = _PER_MESSAGE_CHARS + len(message.content)
    if isinstance(message, AssistantMessage):
        for call in message.tool_calls:
            size += len(call.name) + len(call.arguments) + _PER_MESSAGE_CHARS
    return size


class Calibration:
    """Characters per token for this Session's model, learned from reported usage."""

    __slots__ = ("chars_per_token",)

    def __init__(self, chars_per_token: float = 4.0) -> None:
        self.chars_per_token = chars_per_token

    def update(self, prompt_tokens: int, chars: int) -> None:
        if prompt_tokens > 0 and chars > 0:
            measured = chars / prompt_tokens
            # Clamp: a provider that counts oddly must not make the estimate absurd.
            self.chars_per_token = min(8.0, max(1.0, measured))

    def tokens(self, chars: int) -> int:
        return int(chars / self.chars_per_token) + 1


def split_point(history: Sequence[Message], keep_tokens: int, calibration: Calibration) -> int:
    """Index of the first message to keep verbatim: the recent ones that fit ``keep_tokens``.

    Never splits a tool call from its result: the kept part never starts with a
    tool message. Never drops the latest input.
    """
    last_input = max(
        (i for i, m in enumerate(history) if isinstance(m, UserMessage)), default=len(history)
    )
    budget = keep_tokens
    index = len(history)
    while index > 0:
        cost = calibration.tokens(message_chars(history[index - 1]))
        if cost > budget:
            break
        budget -= cost
        index -= 1
    index = min(index, last_input)
    while index < len(history) and isinstance(history[index], ToolMessage):
        index += 1
    return index


def _transcript(messages: Sequence[Message], previous_summary: str, max_chars: int) -> str:
    lines: list[str] = []
    if previous_summary:
        lines.append(f"(summary of what came before)\n{previous_summary}")
    for message in messages:
        if isinstance(message, UserMessage):
            lines.append(f"{message.origin}: {message.content}")
        elif isinstance(message, AssistantMessage):
            calls = "".join(f" [called {c.name}({c.arguments})]" for c in message.tool_calls)
            lines.append(f"assistant: {message.content}{calls}")
        elif isinstance(message, ToolMessage):
            lines.append(f"tool {message.tool_name} returned: {message.content}")
        elif isinstance(message, SystemMessage):
            lines.append(f"system: {message.content}")
        else:
            assert_never(message)
    text = "\n".join(lines)
    if len(text) > max_chars:
        # Keep the beginning (goals) and the end (latest state); mark the cut.
        head = max_chars // 3
        tail = max_chars - head
        text = f"{text[:head]}\n…[{len(text) - max_chars} characters omitted]…\n{text[-tail:]}"
    return text


def digest(messages: Sequence[Message], previous_summary: str, max_chars: int) -> str:
    """A summary without a model: each message shortened to its first line or so."""
    lines: list[str] = []
    if previous_summary:
        lines.append(previous_summary[: max_chars // 2])
    for message in messages:
        text = " ".join(message.content.split())
        if isinstance(message, UserMessage):
            lines.append(f"- {message.origin} said: {text[:200]}")
        elif isinstance(message, AssistantMessage):
            calls = ", ".join(c.name for c in message.tool_calls)
            said = f"- assistant: {text[:200]}" if text else "- assistant"
            lines.append(f"{said}{f' (called {calls})' if calls else ''}")
        elif isinstance(message, ToolMessage):
            lines.append(f"- {message.tool_name} → {text[:120]}")
        elif isinstance(message, SystemMessage):
            lines.append(f"- system: {text[:200]}")
        else:
            assert_never(message)
    out = "\n".join(lines)
    if len(out) > max_chars:
        out = "…\n" + out[-max_chars:]
    return out


async def summarise(
    provider: Provider,
    messages: Sequence[Message],
    previous_summary: str,
    *,
    max_tokens: int,
    input_tokens: int,
    calibration: Calibration,
    on_usage: Callable[[Usage], object] | None = None,
    telemetry: Telemetry | None = None,
) -> str:
    """The model's summary of ``messages``; raises ``RunError`` if it cannot give one."""
    max_chars = int(input_tokens * calibration.chars_per_token)
    transcript = _transcript(messages, previous_summary, max_chars)
    query = Query(
        provider,
        config=QueryConfig(max_rounds=1, max_tokens=max_tokens, temperature=0.0),
        telemetry=telemetry,
    )
    result = await query.run(
        [SystemMessage(content=SUMMARISER_PROMPT)],
        UserMessage(content=f"{COMPACTION_MARKER}\n{transcript}", origin="system"),
    )
    if on_usage is not None:
        on_usage(result.usage)
    if (
        result.stop_reason not in (StopReason.END_TURN, StopReason.LENGTH)
        or not result.text.strip()
    ):
        reason = result.error.message if result.error else result.stop_reason.value
        raise RunError(f"the summariser gave no summary ({reason})")
    return result.text.strip()
