"""Shared helpers for the Session tests."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

import msgspec

from xai.events import AgentEvent, SessionEvent
from xai.messages import AssistantMessage, Message, ToolCall, ToolMessage, UserMessage
from xai.session import COMPACTION_MARKER, EXTRACTION_MARKER, Subscription
from xai.session._journal import read_records
from xai.session._records import CompactedRecord, InputRecord, MessageRecord
from xai.testing import Reply

_USER_LINE = re.compile(r"^\[(\w+)\] USER: (.*)$", re.MULTILINE)


def last_content(body: Mapping[str, Any]) -> str:
    messages = body.get("messages") or [{}]
    content = messages[-1].get("content")
    return content if isinstance(content, str) else ""


def extraction_responder(body: Mapping[str, Any]) -> Reply | None:
    """Answers memory-extraction requests with one candidate per USER line."""
    text = last_content(body)
    if not text.startswith(EXTRACTION_MARKER):
        return None
    candidates = [
        {"text": f"The user said: {said}", "kind": "fact", "confidence": 0.8, "evidence": [mid]}
        for mid, said in _USER_LINE.findall(text)
    ]
    return Reply(text=msgspec.json.encode({"candidates": candidates}).decode())


def summary_responder(summary: str = "SUMMARY OF EARLIER TALK") -> Any:
    def respond(body: Mapping[str, Any]) -> Reply | None:
        if last_content(body).startswith(COMPACTION_MARKER):
            return Reply(text=summary)
        return None

    return respond


E = TypeVar("E", SessionEvent, AgentEvent)


def drain(subscription: Subscription[E]) -> list[E]:
    out: list[E] = []
    while (event := subscription.get_nowait()) is not None:
        out.append(event)
    return out


def is_side_request(body: Mapping[str, Any]) -> bool:
    text = last_content(body)
    return text.startswith((EXTRACTION_MARKER, COMPACTION_MARKER))


def history_problems(messages: Sequence[Message]) -> list[str]:
    """What breaks the Chat Completions rules in ``messages``: each assistant tool call is
    answered by exactly one tool message before the next assistant or user message, and
    no tool message answers anything else."""
    problems: list[str] = []
    waiting: set[str] | None = None  # calls of the last assistant message, unanswered
    for index, message in enumerate(messages):
        if isinstance(message, ToolMessage):
            if waiting is None or message.tool_call_id not in waiting:
                problems.append(f"{index}: tool result {message.tool_call_id} answers no open call")
            else:
                waiting.discard(message.tool_call_id)
            continue
        if waiting:
            kind = type(message).__name__
            problems.append(f"{index}: calls {sorted(waiting)} unanswered before a {kind}")
        waiting = (
            {c.id for c in message.tool_calls}
            if isinstance(message, AssistantMessage) and message.tool_calls
            else None
        )
    if waiting:
        problems.append(f"end: calls {sorted(waiting)} unanswered")
    return problems


def wire_problems(messages: Sequence[Mapping[str, Any]]) -> list[str]:
    """``history_problems`` for a request body's ``messages`` as sent on the wire."""
    converted: list[Message] = []
    for m in messages:
        role = m.get("role")
        if role == "tool":
            converted.append(
                ToolMessage(tool_call_id=m["tool_call_id"], tool_name="", content=str(m["content"]))
            )
        elif role == "assistant":
            calls = tuple(
                ToolCall(id=c["id"], name=c["function"]["name"]) for c in m.get("tool_calls") or ()
            )
            converted.append(AssistantMessage(content=m.get("content") or "", tool_calls=calls))
        elif role == "user":
            converted.append(UserMessage(content=str(m.get("content"))))
    return history_problems(converted)


def journal_as_written(path: Path) -> list[Message]:
    """The history a journal holds in the order its lines were written (no placement, no
    repair): what a reader of the file sees."""
    history: list[Message] = []
    for record in read_records(path):
        if isinstance(record, (InputRecord, MessageRecord)):
            history.append(record.message)
        elif isinstance(record, CompactedRecord):
            del history[: record.removed]
    return history
