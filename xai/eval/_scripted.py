"""The offline model of ``xai eval``: no LLM, but it plays every part the harness needs.

- Memory extraction (the Agent backend's Sessions ask after each turn): every
  user message of three words or more becomes a candidate, verbatim, with its id
  as evidence. Real extraction needs a real model; this one measures the memory
  store and its adjudication, not an extractor.
- Answers: the context sentence sharing most words with the question (dates and
  speakers left out): an extractive baseline, so answer F1 measures whether the
  best line holds the answer. No context: "Not mentioned in the conversation."
- A Session's turn: the reply the dataset recorded for that input, when the
  ``xai`` backend registered one (``EvalModel.expect``); else nothing (an empty
  answer: the Agent listens, as to a conversation between two people).
"""

from __future__ import annotations

import json
import re
from collections import deque
from collections.abc import Mapping
from typing import Any

from xai.eval._agent import ANSWER_INSTRUCTIONS, NOT_MENTIONED
from xai.memory import lexical_tokens as tokens
from xai.session import EXTRACTION_MARKER
from xai.testing import Reply

__all__ = ["EvalModel", "eval_model"]

_HEADER = re.compile(
    r"^\[([^\]\n]+)\] (USER|assistant|tool \S+|automated input \([^)\n]*\)): ", re.M
)
_SENTENCE = re.compile(r"(?<=[.!?])\s+")
_LINE_HEAD = re.compile(r"^(\[[^\]]*\]\s*)?[^:\n]{1,40}:\s*")


def _text(message: Mapping[str, Any]) -> str:
    content = message.get("content")
    return content if isinstance(content, str) else ""


_TRAILER = "\n\nThe USER message ids above: "
"""Where the extraction request's closing line starts (``xai.session._extraction``): the
last message's text once ran on into it, and became a candidate with it."""


def _user_messages(rendered: str) -> list[tuple[str, str]]:
    """(id, text) of each user message in an extraction request (texts may span lines;
    the request's closing line is not part of the last one)."""
    rendered = rendered.rpartition(_TRAILER)[0] or rendered
    headers = list(_HEADER.finditer(rendered))
    out = []
    for header, following in zip(headers, [*headers[1:], None], strict=True):
        if header[2] == "USER":
            end = following.start() if following is not None else len(rendered)
            out.append((header[1], rendered[header.end() : end].strip()))
    return out


def _extractive(content: str) -> str:
    if not content.startswith("Context:\n"):
        return NOT_MENTIONED
    context, _, question = content[len("Context:\n") :].rpartition("\n\nQuestion: ")
    wanted = set(tokens(question))
    best, best_overlap = "", 0
    for line in context.splitlines():
        for sentence in _SENTENCE.split(_LINE_HEAD.sub("", line, count=1)):
            overlap = len(wanted & set(tokens(sentence)))
            if overlap > best_overlap:
                best, best_overlap = sentence, overlap
    return best.strip() or NOT_MENTIONED


def eval_model(body: Mapping[str, Any]) -> Reply | None:
    messages = body.get("messages") or [{}]
    content = _text(messages[-1])
    if content.startswith(EXTRACTION_MARKER):
        found = [
            {"text": said, "kind": "fact", "confidence": 0.6, "evidence": [mid]}
            for mid, said in _user_messages(content)
            if len(said.split()) >= 3
        ]
        return Reply(text=json.dumps({"candidates": found}))
    system = _text(messages[0]) if messages[0].get("role") == "system" else ""
    if system == ANSWER_INSTRUCTIONS:
        return Reply(text=_extractive(content))
    return Reply(text="")


class EvalModel:
    """``eval_model`` that answers a conversation's inputs with the replies the dataset
    recorded for them: the ``xai`` backend registers each before it sends the input."""

    def __init__(self) -> None:
        self._replies: dict[str, deque[str]] = {}

    def expect(self, said: str, reply: str) -> None:
        """Answer the next input ``said`` with ``reply`` (in order, when said twice)."""
        self._replies.setdefault(said, deque()).append(reply)

    def __call__(self, body: Mapping[str, Any]) -> Reply | None:
        messages = body.get("messages") or [{}]
        last = messages[-1]
        waiting = self._replies.get(_text(last)) if last.get("role") == "user" else None
        if waiting:
            system = _text(messages[0]) if messages[0].get("role") == "system" else ""
            if system != ANSWER_INSTRUCTIONS:
                reply = waiting.popleft()
                if not waiting:
                    del self._replies[_text(last)]
                return Reply(text=reply)
        return eval_model(body)
