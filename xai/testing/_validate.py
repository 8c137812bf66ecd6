"""The Chat Completions rules every request to a test double is checked against.

xai promises to work with any OpenAI-compatible service (OpenAI, DeepSeek,
SiliconFlow, Qwen, vLLM, Ollama, LM Studio, Anthropic- and Mistral-compatible
gateways), so a request is valid here only if the strictest of them would take
it. ``check_chat_request`` returns every rule a request body (OpenAI wire
shape) breaks; both doubles answer such a request the way a real endpoint does
(HTTP 400 / ``BadRequestError``) and report it, so the test that caused it
fails (see ``xai.testing.pytest_plugin``).

| rule | what is checked | who enforces it |
|---|---|---|
| ``request_shape`` | ``model`` is a non-empty string; ``messages`` is a non-empty list of objects, each with a role among ``system``, ``developer``, ``user``, ``assistant``, ``tool``; ``content`` is a string or a list of content parts (``null`` only for an assistant message); a tool message has a string ``tool_call_id``; ``stream_options`` only with ``stream: true`` | OpenAI (``[] is too short - 'messages'``, ``Invalid value ... 'role'``, ``The 'stream_options' parameter is only allowed when 'stream' is enabled``) |
| ``system_after_start`` | ``system`` / ``developer`` messages come only before every other message | Qwen chat templates under vLLM (``System message must be at the beginning``), Anthropic-compatible endpoints (one system prompt); OpenAI itself accepts them anywhere |
| ``empty_assistant`` | an assistant message has text that is not only whitespace, or at least one tool call | Mistral (``Assistant message must have either content or tool_calls``), Anthropic-compatible endpoints (``text content blocks must contain non-whitespace text``) |
| ``malformed_tool_call`` | each tool call has a non-empty string ``id`` unique within its message, ``type: "function"``, a non-empty ``function.name`` and a string ``function.arguments`` | OpenAI (``Missing required parameter: 'messages[i].tool_calls[j].id'`` and the like) |
| ``unanswered_tool_call`` | an assistant message with tool calls is followed, before any message that is not a tool message (and before the end of the request), by a tool message for every one of its calls | OpenAI (``An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'``), DeepSeek, Qwen |
| ``orphan_tool_message`` | a tool message belongs to the run of tool messages right after an assistant message with tool calls, and answers one of that message's calls (so never right after a user, system or plain assistant message, nor first) | OpenAI (``messages with role 'tool' must be a response to a preceding message with 'tool_calls'``), DeepSeek, Qwen |
| ``duplicate_tool_answer`` | no call is answered by more than one tool message | Anthropic-compatible endpoints (one ``tool_result`` per ``tool_use``) |
| ``invalid_tool_choice`` | ``tool_choice``, if given, is ``"auto"``, ``"none"``, ``"required"`` or ``{"type": "function", "function": {"name": ...}}`` naming one of ``tools``; anything but ``"none"`` and ``"auto"`` needs ``tools`` | OpenAI (``Invalid value for 'tool_choice': 'tool_choice' is only allowed when 'tools' are specified``) |
| ``invalid_tool_spec`` | ``tools``, if given, is a list of ``{"type": "function", "function": {"name": ...}}`` with names of 1-64 letters, digits, ``_`` or ``-`` | OpenAI (``string does not match pattern '^[a-zA-Z0-9_-]+$'``) |

Not checked, because the services named above accept it: several user
messages in a row, an assistant message last, tool messages in another order
than their calls, tool-call arguments that are not valid JSON (a model may
produce them; xai sends them back with an error result), an empty user message.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any, Literal, TypeAlias

import msgspec

__all__ = ["Violation", "ViolationRule", "check_chat_request", "outline"]

ViolationRule: TypeAlias = Literal[
    "request_shape",
    "system_after_start",
    "empty_assistant",
    "malformed_tool_call",
    "unanswered_tool_call",
    "orphan_tool_message",
    "duplicate_tool_answer",
    "invalid_tool_spec",
    "invalid_tool_choice",
]

_ROLES = ("system", "developer", "user", "assistant", "tool")
_TOOL_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


class Violation(msgspec.Struct, frozen=True, kw_only=True):
    """One broken rule: which, where (``index`` into ``messages``, if a message), and how."""

    rule: ViolationRule
    message: str
    index: int | None = None

    def __str__(self) -> str:
        return f"{self.rule}: {self.message}"


def _where(messages: Sequence[Any], index: int) -> str:
    item = messages[index]
    role = item.get("role") if isinstance(item, Mapping) else None
    return f"messages[{index}] ({role})" if isinstance(role, str) else f"messages[{index}]"


def _text_of(content: Any) -> str | None:
    """The text of a content value; ``None`` if it is not a string, null or a list of parts."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list) and all(
        isinstance(part, Mapping) and isinstance(part.get("type"), str) for part in content
    ):
        return "".join(
            str(part.get("text") or part.get("refusal") or "")
            for part in content
            if part.get("type") in ("text", "refusal")
        )
    return None


def _calls_of(
    messages: Sequence[Any], index: int, raw: Any, out: list[Violation]
) -> dict[str, str]:
    """The well-formed tool calls of an assistant message, by id (name as value)."""
    where = _where(messages, index)
    if raw is None:
        return {}
    if not isinstance(raw, list):
        out.append(
            Violation(
                rule="malformed_tool_call",
                index=index,
                message=f"{where}: tool_calls is not a list",
            )
        )
        return {}
    calls: dict[str, str] = {}
    for j, call in enumerate(raw):
        problem = None
        fn = call.get("function") if isinstance(call, Mapping) else None
        call_id = call.get("id") if isinstance(call, Mapping) else None
        if not isinstance(call, Mapping):
            problem = "is not an object"
        elif not isinstance(call_id, str) or not call_id:
            problem = "has no id"
        elif call.get("type") != "function":
            problem = f"has type {call.get('type')!r}, not 'function'"
        elif not isinstance(fn, Mapping) or not isinstance(fn.get("name"), str) or not fn["name"]:
            problem = "has no function name"
        elif not isinstance(fn.get("arguments"), str):
            problem = "has arguments that are not a string"
        elif call_id in calls:
            problem = f"repeats the id {call_id!r} of an earlier call in the same message"
        if problem is not None:
            out.append(
                Violation(
                    rule="malformed_tool_call",
                    index=index,
                    message=f"{where}: tool_calls[{j}] {problem}",
                )
            )
            continue
        assert isinstance(call_id, str) and isinstance(fn, Mapping)
        calls[call_id] = str(fn["name"])
    return calls


def _check_tools(tools: Any, out: list[Violation]) -> None:
    if tools is None:
        return
    if not isinstance(tools, list):
        out.append(Violation(rule="invalid_tool_spec", message="tools is not a list"))
        return
    for j, spec in enumerate(tools):
        fn = spec.get("function") if isinstance(spec, Mapping) else None
        name = fn.get("name") if isinstance(fn, Mapping) else None
        if not isinstance(spec, Mapping) or spec.get("type") != "function":
            problem = "is not a function tool"
        elif not isinstance(name, str) or not _TOOL_NAME.match(name):
            problem = f"has the name {name!r} (1-64 letters, digits, '_' or '-')"
        else:
            continue
        out.append(Violation(rule="invalid_tool_spec", message=f"tools[{j}] {problem}"))


def _check_tool_choice(choice: Any, tools: Any, out: list[Violation]) -> None:
    if choice is None or choice in ("auto", "none"):
        return
    names = [
        spec["function"].get("name")
        for spec in (tools if isinstance(tools, list) else [])
        if isinstance(spec, Mapping) and isinstance(spec.get("function"), Mapping)
    ]
    if isinstance(choice, Mapping):
        fn = choice.get("function")
        named = fn.get("name") if isinstance(fn, Mapping) else None
        if choice.get("type") != "function" or not isinstance(named, str):
            problem = f"is not a named function: {choice!r}"
        elif named not in names:
            problem = f"names {named!r}, which is not among tools {names}"
        else:
            return
    elif choice != "required":
        problem = f"is {choice!r} (not auto, none, required or a named function)"
    elif not names:
        problem = "is 'required' but the request has no tools"
    else:
        return
    out.append(Violation(rule="invalid_tool_choice", message=f"tool_choice {problem}"))


def _unanswered(
    messages: Sequence[Any], asker: int, open_calls: Mapping[str, str], before: int | None
) -> Violation:
    calls = ", ".join(f"{call_id} ({name})" for call_id, name in open_calls.items())
    end = "the end of the request" if before is None else _where(messages, before)
    return Violation(
        rule="unanswered_tool_call",
        index=asker,
        message=f"{_where(messages, asker)}: tool call(s) {calls} have no tool message before {end}",
    )


def check_chat_request(body: Any) -> list[Violation]:
    """Every rule (see the module docstring) that a chat request body breaks, in order."""
    if not isinstance(body, Mapping):
        return [Violation(rule="request_shape", message="the request body is not a JSON object")]
    out: list[Violation] = []
    model = body.get("model")
    if not isinstance(model, str) or not model:
        out.append(Violation(rule="request_shape", message="model is not a non-empty string"))
    if "stream_options" in body and body.get("stream") is not True:
        out.append(
            Violation(
                rule="request_shape",
                message="stream_options is only allowed on a streamed request (stream: true)",
            )
        )
    _check_tools(body.get("tools"), out)
    _check_tool_choice(body.get("tool_choice"), body.get("tools"), out)
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        out.append(Violation(rule="request_shape", message="messages is not a non-empty list"))
        return out

    asker: int | None = None  # the assistant message whose calls the current tool run answers
    open_calls: dict[str, str] = {}  # its calls still without a tool message
    answered: set[str] = set()
    conversation_started = False
    for i, message in enumerate(messages):
        where = _where(messages, i)
        role = message.get("role") if isinstance(message, Mapping) else None
        if not isinstance(message, Mapping) or role not in _ROLES:
            out.append(
                Violation(
                    rule="request_shape",
                    index=i,
                    message=f"messages[{i}] is not a message with a known role (got {role!r})",
                )
            )
            continue
        if role != "tool":
            if open_calls:
                assert asker is not None
                out.append(_unanswered(messages, asker, open_calls, i))
            asker, open_calls, answered = None, {}, set()
        content = message.get("content")
        text = _text_of(content)
        if text is None or (content is None and role not in ("assistant",)):
            out.append(
                Violation(
                    rule="request_shape",
                    index=i,
                    message=f"{where}: content is not a string or a list of content parts",
                )
            )
            text = ""
        if role in ("system", "developer"):
            if conversation_started:
                out.append(
                    Violation(
                        rule="system_after_start",
                        index=i,
                        message=f"{where} comes after the conversation began",
                    )
                )
            continue
        conversation_started = True
        if role == "assistant":
            raw_calls = message.get("tool_calls")
            calls = _calls_of(messages, i, raw_calls, out)
            if not raw_calls and not text.strip():
                out.append(
                    Violation(
                        rule="empty_assistant",
                        index=i,
                        message=f"{where} has no text and no tool calls (content {content!r})",
                    )
                )
            if calls:
                asker, open_calls, answered = i, calls, set()
        elif role == "tool":
            call_id = message.get("tool_call_id")
            if not isinstance(call_id, str):
                out.append(
                    Violation(rule="request_shape", index=i, message=f"{where} has no tool_call_id")
                )
            elif asker is None:
                after = "starts the request" if i == 0 else f"follows {_where(messages, i - 1)}"
                out.append(
                    Violation(
                        rule="orphan_tool_message",
                        index=i,
                        message=f"{where} answers {call_id!r} but {after}, "
                        "not an assistant message with tool calls and its tool messages",
                    )
                )
            elif call_id in answered:
                out.append(
                    Violation(
                        rule="duplicate_tool_answer",
                        index=i,
                        message=f"{where} answers {call_id!r} of {_where(messages, asker)} again",
                    )
                )
            elif call_id not in open_calls:
                out.append(
                    Violation(
                        rule="orphan_tool_message",
                        index=i,
                        message=f"{where} answers {call_id!r}, which "
                        f"{_where(messages, asker)} did not ask for",
                    )
                )
            else:
                answered.add(call_id)
                del open_calls[call_id]
    if open_calls:
        assert asker is not None
        out.append(_unanswered(messages, asker, open_calls, None))
    return out


def outline(body: Any) -> str:
    """The roles of a request's messages in one line, e.g. ``system user assistant[2 calls] tool tool``."""
    messages = body.get("messages") if isinstance(body, Mapping) else None
    if not isinstance(messages, list):
        return "(no messages)"
    words: list[str] = []
    for message in messages:
        role = message.get("role") if isinstance(message, Mapping) else None
        word = str(role)
        if role == "assistant" and isinstance(message, Mapping):
            calls = message.get("tool_calls")
            if isinstance(calls, list) and calls:
                word += f"[{len(calls)} call{'s' if len(calls) > 1 else ''}]"
            elif not (_text_of(message.get("content")) or "").strip():
                word += "[empty]"
        words.append(word)
    return " ".join(words)
