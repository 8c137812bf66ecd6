"""What the test doubles answer: scripted replies, rules that match requests, and faults.

Everything here is a msgspec Struct, so a whole script can live in a JSON file
(``python -m xai.testing serve --script replies.json``).
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Literal, TypeAlias

import msgspec

__all__ = [
    "Delay",
    "DropConnection",
    "Fault",
    "HttpError",
    "MalformedChunk",
    "Reply",
    "Rule",
    "Script",
    "ScriptExhausted",
    "Scripted",
    "ScriptedCall",
]


class ScriptedCall(msgspec.Struct, frozen=True, kw_only=True):
    """A tool call the scripted model makes. ``arguments`` may be a dict or raw (even invalid) JSON text."""

    name: str
    arguments: dict[str, Any] | str = msgspec.field(default_factory=dict)
    id: str | None = None

    @property
    def arguments_text(self) -> str:
        if isinstance(self.arguments, str):
            return self.arguments
        return msgspec.json.encode(self.arguments).decode()


class HttpError(msgspec.Struct, frozen=True, kw_only=True, tag="http_error"):
    """Answer with an HTTP error status (e.g. 429 with ``retry_after``, 500, 401, 400)."""

    status: int = 500
    message: str = "injected failure"
    code: str | None = None
    retry_after: float | None = None
    """Sent as ``retry-after-ms`` (milliseconds) and ``Retry-After`` (whole seconds, rounded up)."""


class Delay(msgspec.Struct, frozen=True, kw_only=True, tag="delay"):
    """Wait ``seconds`` before sending anything (longer than the client's timeout to provoke one)."""

    seconds: float


class DropConnection(msgspec.Struct, frozen=True, kw_only=True, tag="drop_connection"):
    """Close the connection abruptly after ``after_chunks`` content chunks (text, thinking or tool pieces)."""

    after_chunks: int = 1


class MalformedChunk(msgspec.Struct, frozen=True, kw_only=True, tag="malformed_chunk"):
    """Send a chunk that is not JSON after ``after_chunks`` good content chunks."""

    after_chunks: int = 1
    payload: str = '{"choices": [ this is not json'


Fault: TypeAlias = HttpError | Delay | DropConnection | MalformedChunk


class Reply(msgspec.Struct, frozen=True, kw_only=True):
    """One scripted answer.

    Text is streamed in pieces of ``chunk_chars`` characters (or split into
    exactly ``text_chunks`` pieces); tool-call arguments in pieces of
    ``argument_chunk_chars``. ``finish_reason`` defaults to ``tool_calls`` when
    there are calls, else ``stop``. ``usage`` overrides the estimated token
    counts. ``chunk_delay`` sleeps between chunks (for cancel-mid-stream tests).
    """

    text: str = ""
    thinking: str = ""
    tool_calls: tuple[ScriptedCall, ...] = ()
    finish_reason: str | None = None
    usage: dict[str, int] | None = None
    chunk_chars: int = 8
    text_chunks: int | None = None
    argument_chunk_chars: int = 12
    chunk_delay: float = 0.0
    fault: Fault | None = None
    reasoning_field: Literal["reasoning_content", "reasoning"] = "reasoning_content"


class Rule(msgspec.Struct, frozen=True, kw_only=True):
    """Answer ``reply`` to requests that match every condition given.

    ``last_role``: role of the request's last message; ``contains``: text found
    in the last message's content; ``times``: how often the rule may fire
    (``None``: always).
    """

    reply: Reply
    last_role: str | None = None
    contains: str | None = None
    times: int | None = None


class Script(msgspec.Struct, kw_only=True):
    """A file-able script: rules first, then replies in order, then ``default``.

    (Programmatic responders, ``Scripted.add_responder``, come after the rules.)
    """

    replies: list[Reply] = msgspec.field(default_factory=list)
    rules: list[Rule] = msgspec.field(default_factory=list)
    default: Reply | None = None


class ScriptExhausted(LookupError):
    """A request arrived and the script had nothing left to answer it with."""


Responder: TypeAlias = Callable[[Mapping[str, Any]], Reply | None]


def _last(body: Mapping[str, Any]) -> Mapping[str, Any]:
    messages = body.get("messages") or [{}]
    last = messages[-1]
    return last if isinstance(last, Mapping) else {}


def _content_text(message: Mapping[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(str(p.get("text", "")) for p in content if isinstance(p, Mapping))
    return ""


class Scripted:
    """Thread-safe reply selection shared by the scripted provider and the wire server."""

    def __init__(self, script: Script | Iterable[Reply] | None = None) -> None:
        self._lock = threading.Lock()
        self._replies: deque[Reply] = deque()
        self._rules: list[list[Any]] = []  # [rule, remaining]
        self._responders: list[Responder] = []
        self.default: Reply | None = None
        if isinstance(script, Script):
            self.load(script)
        elif script is not None:
            self.push(*script)

    def load(self, script: Script) -> None:
        with self._lock:
            self._replies.extend(script.replies)
            self._rules.extend([rule, rule.times] for rule in script.rules)
            if script.default is not None:
                self.default = script.default

    def push(self, *replies: Reply) -> None:
        """Queue replies, answered in order to requests no rule matched."""
        with self._lock:
            self._replies.extend(replies)

    def add_rule(self, rule: Rule) -> None:
        with self._lock:
            self._rules.append([rule, rule.times])

    def add_responder(self, responder: Responder) -> None:
        """A function of the request body returning a Reply (or ``None`` to pass)."""
        with self._lock:
            self._responders.append(responder)

    def reset(self) -> None:
        with self._lock:
            self._replies.clear()
            self._rules.clear()
            self._responders.clear()
            self.default = None

    @property
    def remaining(self) -> int:
        return len(self._replies)

    def next_reply(self, body: Mapping[str, Any]) -> Reply:
        """Rules first (in order), then responders, then queued replies, then the default."""
        last = _last(body)
        with self._lock:
            for entry in self._rules:
                rule, remaining = entry
                if remaining is not None and remaining <= 0:
                    continue
                if rule.last_role is not None and last.get("role") != rule.last_role:
                    continue
                if rule.contains is not None and rule.contains not in _content_text(last):
                    continue
                if remaining is not None:
                    entry[1] = remaining - 1
                return rule.reply  # type: ignore[no-any-return]
            responders = list(self._responders)
        for responder in responders:
            reply = responder(body)
            if reply is not None:
                return reply
        with self._lock:
            if self._replies:
                return self._replies.popleft()
            if self.default is not None:
                return self.default
        raise ScriptExhausted(
            "the scripted model has no reply left for this request "
            f"(last message: {_content_text(last)[:80]!r})"
        )
