"""A set of tools and the one place where a tool call is executed."""

from __future__ import annotations

import copy
import functools
import inspect
import time
import weakref
from collections.abc import AsyncIterator, Callable, Iterable, Iterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import msgspec

from xai._redact import redact
from xai.exceptions import ToolDefinitionError, ToolError
from xai.logs import get_logger
from xai.messages import ToolCall, ToolResult, ToolSpec
from xai.tools._approval import ApprovalPolicy, check_edit, holds
from xai.tools._mcp import MCPServer
from xai.tools._pydantic import dump as pydantic_dump
from xai.tools._tool import Tool, ToolContext

__all__ = ["DEFAULT_MAX_RESULT_CHARS", "ToolSet", "clamp"]

DEFAULT_MAX_RESULT_CHARS = 20_000

_log = get_logger(__name__)
_encode = msgspec.json.Encoder().encode


def clamp(text: str, limit: int) -> tuple[str, bool]:
    """Cut ``text`` to ``limit`` characters, saying how much was dropped."""
    if len(text) <= limit:
        return text, False
    dropped = len(text) - limit
    return f"{text[:limit]}\n…[truncated {dropped} characters]", True


def _render(value: Any) -> tuple[str, Any]:
    """The text the model sees and the JSON-compatible value for the record."""
    if isinstance(value, str):
        return value, value
    if (dumped := pydantic_dump(value)) is not None:  # a Pydantic model the tool returned
        value = dumped
    try:
        return _encode(value).decode(), msgspec.to_builtins(value)
    except (TypeError, msgspec.EncodeError):
        text = str(value)
        return text, text


_DERIVED: weakref.WeakKeyDictionary[Callable[..., Any], Tool] = weakref.WeakKeyDictionary()
"""What was derived from each plain function while it lives (a Tool without its function,
so the entry does not keep the function alive): deriving a schema (signature, type hints,
docstring, a msgspec struct) costs more than a whole turn's bookkeeping, and an
application that opens a Session per request hands the same functions to every one
(issue 35)."""


def _unset(*args: Any, **kwargs: Any) -> Any:
    raise AssertionError("a derived tool's template was called")


def _tool_of(function: Callable[..., Any]) -> Tool:
    """``Tool(function)``; for a plain function its schema is derived once."""
    if not inspect.isfunction(function):  # a bound method is a new object at every access
        return Tool(function)
    template = _DERIVED.get(function)
    if template is None:
        made = Tool(function)
        template = copy.copy(made)
        template.function = _unset
        _DERIVED[function] = template
        return made
    made = copy.copy(template)
    made.function = function
    return made


class ToolSet:
    """Tools by name, the context bound to them, and how big a result may get.

    ``call`` never raises for a tool's failure: an unknown name, arguments
    that are not JSON or fail validation, an exception or a timeout all come
    back as a ``ToolResult`` with ``success=False`` and an error the model can
    read. Sync functions run in a worker thread so they never block the loop.

    ``mcp`` adds MCP servers as tool sources: their tools (schemas as the server lists
    them) join the set while the servers are open (``async with toolset.open():``, which a
    Session or Agent given this set does in its run), and their calls come back as the same
    record: the server's ``isError`` as a failure, a server that dies mid-call as an error.
    """

    __slots__ = (
        "_sources",
        "_specs",
        "_tools",
        "context",
        "max_result_chars",
        "needs_approval",
    )

    def __init__(
        self,
        tools: Iterable[Tool | Callable[..., Any]] = (),
        *,
        mcp: Iterable[MCPServer] = (),
        context: Any = None,
        max_result_chars: int = DEFAULT_MAX_RESULT_CHARS,
        needs_approval: ApprovalPolicy = None,
    ) -> None:
        self.needs_approval = needs_approval
        """Calls a person approves first, beside each tool's own ``needs_approval``:
        every tool (``True``), these names, or a function of the ``ToolCall``."""
        self._tools: dict[str, Tool] = {}
        for item in tools:
            t = item if isinstance(item, Tool) else _tool_of(item)
            if t.name in self._tools:
                raise ToolDefinitionError(f"two tools are named {t.name!r}")
            self._tools[t.name] = t
        self._sources: tuple[MCPServer, ...] = tuple(mcp)
        names = [s.name for s in self._sources]
        if len(set(names)) != len(names):
            raise ToolDefinitionError(f"two MCP servers share a name: {names}")
        self.context = context
        self.max_result_chars = max_result_chars
        self._specs = tuple(t.spec for t in self._tools.values())

    def derive(self, *, context: Any, extra: Iterable[Tool] = ()) -> ToolSet:
        """A copy (same class: subclasses keep their behaviour) with another context and
        ``extra`` tools added."""
        clone = copy.copy(self)
        clone._tools = dict(self._tools)
        for t in extra:
            if t.name in clone._tools:
                raise ToolDefinitionError(f"two tools are named {t.name!r}")
            clone._tools[t.name] = t
        clone._specs = tuple(t.spec for t in clone._tools.values())
        clone.context = context
        return clone

    def with_context(self, context: Any) -> ToolSet:
        """The same tools bound to another context (cheap: tools are shared)."""
        return ToolSet(
            self._tools.values(),
            mcp=self._sources,
            context=context,
            max_result_chars=self.max_result_chars,
            needs_approval=self.needs_approval,
        )

    @property
    def mcp_servers(self) -> tuple[MCPServer, ...]:
        return self._sources

    @property
    def specs(self) -> tuple[ToolSpec, ...]:
        """Python tools first, then each open MCP server's tools. ``ToolDefinitionError``
        if two share a name (``open`` refuses that first): a request never lists a name
        twice."""
        if not self._sources:
            return self._specs
        specs = self._specs + tuple(spec for s in self._sources for spec in s.specs)
        if len({spec.name for spec in specs}) != len(specs):
            for source in self._sources:
                self._check_names(source)  # says which server clashes with what
        return specs

    @asynccontextmanager
    async def open(self) -> AsyncIterator[ToolSet]:
        """Start the MCP servers that nobody has started yet, and stop them on leaving.

        A server already open (its owner, e.g. the Agent, started it) is used and left
        alone. Raises ``MCPServerError`` naming a server that fails to start (the ones
        started before it are stopped), ``ToolDefinitionError`` when a server's tool has
        the name of another tool of this set (a Python tool, one added by ``derive`` such
        as a Session's ``delegate``, or another server's), whoever started the server.
        """
        opened: list[MCPServer] = []
        try:
            for source in self._sources:
                if source.state == "closed":
                    await source.start()
                    opened.append(source)
            for source in self._sources:
                self._check_names(source)
            yield self
        finally:
            for source in reversed(opened):  # each one shields its own stop
                await source.aclose()

    def _check_names(self, source: MCPServer) -> None:
        for name in source.tool_names():
            other = next((s for s in self._sources if s is not source and name in s), None)
            if name in self._tools or other is not None:
                where = f"MCP server {other.name!r}" if other is not None else "a Python tool"
                raise ToolDefinitionError(
                    f"MCP server {source.name!r} has a tool named {name!r}, as {where} does: "
                    "give the server a prefix"
                )

    def _source(self, name: str) -> MCPServer | None:
        return next((s for s in self._sources if name in s), None)

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def __iter__(self) -> Iterator[Tool]:
        return iter(self._tools.values())

    def __len__(self) -> int:
        return len(self._tools)

    def get(self, name: str) -> Tool | None:
        """The Python tool ``name`` (``spec`` covers the MCP servers' tools too)."""
        return self._tools.get(name)

    def spec(self, name: str) -> ToolSpec | None:
        """The spec of the tool ``name``: a Python tool's, or an open MCP server's."""
        found = self._tools.get(name)
        if found is not None:
            return found.spec
        source = self._source(name)
        if source is None:
            return None
        return next((spec for spec in source.specs if spec.name == name), None)

    def holds(self, call: ToolCall) -> bool:
        """Whether ``call`` waits for a person's approval before it runs."""
        known = call.name in self._tools or self._source(call.name) is not None
        return holds(self.needs_approval, self._tools.get(call.name), known, call)

    def check_edit(self, call: ToolCall, arguments: str) -> str:
        """``arguments`` (normalised JSON) if ``call``'s tool accepts them as edited by a
        person; ``InvalidEditError`` if not."""
        return check_edit(self._tools.get(call.name), call, arguments)

    def _failure(
        self, call: ToolCall, arguments: dict[str, Any] | str, error: str, started: float
    ) -> ToolResult:
        error = redact(error)  # exception text can carry a key a tool was given
        content, truncated = clamp(f"Error: {error}", self.max_result_chars)
        return ToolResult(
            call_id=call.id,
            tool_name=call.name,
            success=False,
            arguments=arguments,
            error=error,
            content=content,
            truncated=truncated,
            duration_ms=(time.perf_counter() - started) * 1000,
        )

    async def call(self, call: ToolCall, *, default_timeout: float | None = None) -> ToolResult:
        """Run one tool call to a uniform record. Cancellation propagates; nothing else does.

        ``default_timeout`` applies unless the tool has its own ``timeout``.
        """
        started = time.perf_counter()
        try:
            raw = msgspec.json.decode(call.arguments or "{}")
        except msgspec.DecodeError as exc:
            return self._failure(
                call, call.arguments, f"arguments are not valid JSON ({exc})", started
            )
        arguments: dict[str, Any] | str = raw if isinstance(raw, dict) else call.arguments
        t = self._tools.get(call.name)
        source = self._source(call.name) if t is None else None
        if t is None and source is None:
            known = ", ".join(sorted(s.name for s in self.specs)) or "none"
            return self._failure(
                call, arguments, f"unknown tool {call.name!r} (available: {known})", started
            )
        if not isinstance(raw, dict):
            return self._failure(call, arguments, "arguments must be a JSON object", started)
        if source is not None:
            return await self._call_mcp(call, source, raw, default_timeout, started)
        assert t is not None
        try:
            kwargs = t.parse_arguments(call.arguments)
        except (msgspec.ValidationError, msgspec.DecodeError) as exc:
            return self._failure(call, arguments, f"invalid arguments: {exc}", started)
        if t.context_param is not None:
            kwargs[t.context_param] = ToolContext(self.context, call.id, t.name)
        limit = t.timeout if t.timeout is not None else default_timeout
        value: Any = None
        try:
            with anyio.move_on_after(limit) as deadline:
                if t.is_async:
                    value = await t.function(**kwargs)
                else:
                    value = await anyio.to_thread.run_sync(
                        functools.partial(t.function, **kwargs), abandon_on_cancel=True
                    )
        except ToolError as exc:
            return self._failure(call, arguments, str(exc), started)
        except Exception as exc:
            _log.warning("tool.failed", tool=t.name, call_id=call.id, exc_info=True)
            return self._failure(call, arguments, f"{type(exc).__name__}: {exc}", started)
        if deadline.cancelled_caught:
            return self._failure(call, arguments, f"timed out after {limit}s", started)
        text, value = _render(value)
        return self._success(call, arguments, text, value, started)

    def _success(
        self, call: ToolCall, arguments: dict[str, Any] | str, text: str, value: Any, started: float
    ) -> ToolResult:
        content, truncated = clamp(text, self.max_result_chars)
        if truncated:  # the record stays as small as what the model sees
            value = content
        return ToolResult(
            call_id=call.id,
            tool_name=call.name,
            success=True,
            arguments=arguments,
            result=value,
            content=content,
            truncated=truncated,
            duration_ms=(time.perf_counter() - started) * 1000,
        )

    async def _call_mcp(
        self,
        call: ToolCall,
        source: MCPServer,
        arguments: dict[str, Any],
        default_timeout: float | None,
        started: float,
    ) -> ToolResult:
        """Forward to the server; a cancel (the Query's, or the timeout) cancels the request
        there too: the SDK sends ``notifications/cancelled`` when its call is cancelled."""
        limit = source.timeout if source.timeout is not None else default_timeout
        outcome = None
        try:
            with anyio.move_on_after(limit) as deadline:
                outcome = await source.call(call.name, arguments)
        except ToolError as exc:
            return self._failure(call, arguments, str(exc), started)
        except Exception as exc:
            _log.warning("tool.failed", tool=call.name, call_id=call.id, exc_info=True)
            return self._failure(call, arguments, f"{type(exc).__name__}: {exc}", started)
        if deadline.cancelled_caught or outcome is None:
            return self._failure(call, arguments, f"timed out after {limit}s", started)
        if outcome.is_error:
            return self._failure(call, arguments, outcome.text or "the tool failed", started)
        return self._success(call, arguments, outcome.text, outcome.value, started)
