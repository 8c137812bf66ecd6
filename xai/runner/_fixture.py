"""Fixture mode: replay preset memory, model messages and tool results from a folder.

A fixture folder holds ``ai_messages.json`` (the model's messages in order:
``{"content": ..., "tool_calls": [{"id", "name", "arguments"}]}``),
``tool_messages.json`` (``{"tool_call_id", "content"}`` results matched by
call id), optionally ``memory.json`` (a list of remembered facts) and
``approvals.json`` (scripted decisions of a person: ``{"call_id", "approved",
"arguments", "reason"}``; each call named there waits for approval and is decided
so, as ``Session.approvals.decide`` would be: a denied call never runs and the
model gets the denial). The run goes through the same Session and Query loop with
no model and no network.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec

from xai._reading import MiB, decode_json, read_capped
from xai.events import ApprovalRequested, SessionEvent
from xai.exceptions import ConfigurationError, InvalidEditError
from xai.messages import ToolCall, ToolResult
from xai.runner._input import InputError
from xai.session import Approvals
from xai.testing import Reply, ScriptedCall, ScriptedProvider
from xai.tools import Tool, ToolSet

__all__ = ["MAX_FIXTURE_BYTES", "Fixture", "fixture_decider", "load_fixture"]

MAX_FIXTURE_BYTES = 16 * MiB
"""The largest fixture file (``ai_messages.json``, ...) the runner reads."""


class _AiCall(msgspec.Struct):
    name: str
    arguments: dict[str, Any] | str = msgspec.field(default_factory=dict)
    id: str | None = None


class _AiMessage(msgspec.Struct):
    content: str = ""
    tool_calls: list[_AiCall] = msgspec.field(default_factory=list)


class _ToolMessage(msgspec.Struct):
    tool_call_id: str
    content: str
    is_error: bool = False


class _Decision(msgspec.Struct, forbid_unknown_fields=True):
    """A scripted decision on a held call (``approvals.json``)."""

    call_id: str
    approved: bool = True
    arguments: dict[str, Any] | str | None = None
    reason: str = ""

    def apply(self, approvals: Approvals) -> None:
        arguments = self.arguments
        if arguments is not None and not isinstance(arguments, str):
            arguments = msgspec.json.encode(arguments).decode()
        approvals.decide(
            self.call_id,
            approved=self.approved,
            arguments=arguments if self.approved else None,
            reason=self.reason,
            by="fixture",
        )


class Fixture(msgspec.Struct):
    ai_messages: list[_AiMessage]
    tool_messages: dict[str, _ToolMessage]
    memory: list[str]
    approvals: dict[str, _Decision] = msgspec.field(default_factory=dict)

    def provider(self) -> ScriptedProvider:
        return ScriptedProvider(
            [
                Reply(
                    text=m.content,
                    tool_calls=tuple(
                        ScriptedCall(name=c.name, arguments=c.arguments, id=c.id)
                        for c in m.tool_calls
                    ),
                    chunk_chars=16,
                )
                for m in self.ai_messages
            ],
            model="fixture",
        )

    def tools(self, names: list[str]) -> ToolSet:
        return _ReplayTools(self.tool_messages, names, self.approvals)


def fixture_decider(tools: ToolSet) -> Callable[[SessionEvent, Approvals], None] | None:
    """What applies a replay tool set's scripted decisions to the Session's held calls
    (``None``: the tools are not a fixture's)."""
    if not isinstance(tools, _ReplayTools):
        return None
    decisions = tools.decisions

    def decide(event: SessionEvent, approvals: Approvals) -> None:
        body = event.event
        if isinstance(body, ApprovalRequested) and body.reminder == 0:
            scripted = decisions.get(body.pending.call.id)
            if scripted is not None:
                scripted.apply(approvals)

    return decide


class _ReplayTools(ToolSet):
    """Answers each call with the preset result for its id; runs nothing. A call with a
    scripted decision waits for it (``approvals.json``)."""

    __slots__ = ("_preset", "decisions")

    def __init__(
        self, preset: dict[str, _ToolMessage], names: list[str], decisions: dict[str, _Decision]
    ) -> None:
        def stub() -> str:
            """Replayed from the fixture."""
            return ""

        super().__init__(
            [Tool(stub, name=name) for name in names],
            needs_approval=lambda call: call.id in decisions,
        )
        self._preset = preset
        self.decisions = decisions

    def check_edit(self, call: ToolCall, arguments: str) -> str:
        """The replay runs nothing: an edit needs only be a JSON object."""
        try:
            value = msgspec.json.decode(arguments)
        except msgspec.DecodeError as exc:
            raise InvalidEditError(call.id, call.name, f"not JSON ({exc})") from None
        if not isinstance(value, dict):
            raise InvalidEditError(call.id, call.name, "arguments must be a JSON object")
        return msgspec.json.encode(value).decode()

    async def call(self, call: ToolCall, *, default_timeout: float | None = None) -> ToolResult:
        preset = self._preset.get(call.id)
        arguments: Any
        try:
            arguments = msgspec.json.decode(call.arguments or "{}")
        except (msgspec.DecodeError, RecursionError):
            arguments = call.arguments
        if preset is None:
            error = f"the fixture has no tool message for call {call.id!r}"
            return ToolResult(
                call_id=call.id,
                tool_name=call.name,
                success=False,
                arguments=arguments,
                error=error,
                content=f"Error: {error}",
            )
        return ToolResult(
            call_id=call.id,
            tool_name=call.name,
            success=not preset.is_error,
            arguments=arguments,
            result=None if preset.is_error else preset.content,
            error=preset.content if preset.is_error else None,
            content=preset.content,
        )


def load_fixture(folder: str | Path) -> Fixture:
    folder = Path(folder)
    problems: list[str] = []

    def read(name: str, type_: Any, default: Any) -> Any:
        path = folder / name
        if not path.exists():
            if default is None:
                problems.append(f"{name}: missing from {folder}")
            return default
        try:
            data = decode_json(read_capped(path, MAX_FIXTURE_BYTES), path)
            return msgspec.convert(data, type_)
        except ConfigurationError as exc:
            problems.append(f"{name}: {str(exc).removeprefix(f'{path}: ')}")
        except msgspec.ValidationError as exc:
            problems.append(f"{name}: {exc}")
        return default

    ai = read("ai_messages.json", list[_AiMessage], None) or []
    tools = read("tool_messages.json", list[_ToolMessage], [])
    memory = read("memory.json", list[str], [])
    decisions = read("approvals.json", list[_Decision], [])
    if problems:
        raise InputError(str(folder), problems)
    return Fixture(
        ai_messages=ai,
        tool_messages={t.tool_call_id: t for t in tools},
        memory=memory,
        approvals={d.call_id: d for d in decisions},
    )
