"""Which tool calls a person must approve, and checking the arguments a person edits.

Three ways to ask for approval, any of which holds a call: a tool's own
``needs_approval`` (``True``, or a function of the call's decoded arguments), and the
tool set's policy (``ToolSet(needs_approval=...)``: ``True`` for every tool, a
collection of tool names, or a function of the ``ToolCall``). A policy function that
raises holds the call (the safe side). A call whose arguments are not a JSON object, or
that names no tool, is never held: it cannot run, and goes back to the model as an
error result at once.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from typing import Any, Protocol, TypeAlias

import msgspec

from xai.exceptions import InvalidEditError
from xai.logs import get_logger
from xai.messages import ToolCall

__all__ = ["ApprovalPolicy", "ArgumentsPolicy", "check_edit", "holds"]

_log = get_logger(__name__)

ArgumentsPolicy: TypeAlias = bool | Callable[[dict[str, Any]], bool]
"""A tool's own rule: always, never, or by its decoded arguments."""
ApprovalPolicy: TypeAlias = bool | Collection[str] | Callable[[ToolCall], bool] | None
"""A tool set's rule: every tool (``True``), none (``None``/``False``), these names, or
a function of the call."""


class Tool(Protocol):
    """What approval needs of a Python tool (``xai.tools.Tool`` is one)."""

    @property
    def needs_approval(self) -> ArgumentsPolicy: ...

    def parse_arguments(self, arguments: str) -> dict[str, Any]: ...


def holds(policy: ApprovalPolicy, tool: Tool | None, known: bool, call: ToolCall) -> bool:
    """Whether ``call`` waits for a person. ``tool``: the Python tool it names (``None``
    for an MCP tool); ``known``: some tool of the set has that name."""
    if not known:
        return False
    try:
        raw = msgspec.json.decode(call.arguments or "{}")
    except msgspec.DecodeError:
        return False
    if not isinstance(raw, dict):
        return False
    try:
        if tool is not None and _asks(tool.needs_approval, raw):
            return True
        if policy is None or isinstance(policy, bool):
            return bool(policy)
        if callable(policy):
            return bool(policy(call))
        return call.name in policy
    except Exception:
        _log.warning("tool.approval_policy_failed", tool=call.name, call_id=call.id, exc_info=True)
        return True


def _asks(rule: ArgumentsPolicy, arguments: dict[str, Any]) -> bool:
    if isinstance(rule, bool):
        return rule
    return bool(rule(arguments))


def check_edit(tool: Tool | None, call: ToolCall, arguments: str) -> str:
    """The edited ``arguments`` of ``call`` if they are a JSON object the tool accepts;
    ``InvalidEditError`` otherwise. A Python tool checks them against its own schema (the
    same decoding a call gets); an MCP tool's server checks its own, so here only the
    object shape is."""
    try:
        raw = msgspec.json.decode(arguments)
    except msgspec.DecodeError as exc:
        raise InvalidEditError(call.id, call.name, f"not JSON ({exc})") from None
    if not isinstance(raw, dict):
        raise InvalidEditError(call.id, call.name, "arguments must be a JSON object")
    if tool is not None:
        try:
            tool.parse_arguments(arguments)
        except (msgspec.ValidationError, msgspec.DecodeError) as exc:
            raise InvalidEditError(call.id, call.name, str(exc)) from None
        except Exception as exc:  # Pydantic's ValidationError
            raise InvalidEditError(call.id, call.name, str(exc)) from None
    return msgspec.json.encode(raw).decode()
