"""Shared helpers for the Session tests."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, TypeVar

import msgspec

from xai.events import AgentEvent, SessionEvent
from xai.session import COMPACTION_MARKER, EXTRACTION_MARKER, Subscription
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
