"""Fixture mode: replay preset memory, model messages and tool results from a folder.

A fixture folder holds ``ai_messages.json`` (the model's messages in order:
``{"content": ..., "tool_calls": [{"id", "name", "arguments"}]}``),
``tool_messages.json`` (``{"tool_call_id", "content"}`` results matched by
call id) and optionally ``memory.json`` (a list of remembered facts). The run
goes through the same Session and Query loop with no model and no network.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec

from xai._reading import MiB, decode_json, read_capped
from xai.exceptions import ConfigurationError
from xai.messages import ToolCall, ToolResult
from xai.runner._input import InputError
from xai.testing import Reply, ScriptedCall, ScriptedProvider
from xai.tools import Tool, ToolSet

__all__ = ["MAX_FIXTURE_BYTES", "Fixture", "load_fixture"]

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


class Fixture(msgspec.Struct):
    ai_messages: list[_AiMessage]
    tool_messages: dict[str, _ToolMessage]
    memory: list[str]

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
        return _ReplayTools(self.tool_messages, names)


class _ReplayTools(ToolSet):
    """Answers each call with the preset result for its id; runs nothing."""

    __slots__ = ("_preset",)

    def __init__(self, preset: dict[str, _ToolMessage], names: list[str]) -> None:
        def stub() -> str:
            """Replayed from the fixture."""
            return ""

        super().__init__([Tool(stub, name=name) for name in names])
        self._preset = preset

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
    if problems:
        raise InputError(str(folder), problems)
    return Fixture(ai_messages=ai, tool_messages={t.tool_call_id: t for t in tools}, memory=memory)
