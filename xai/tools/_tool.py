"""Turning a typed Python function into a tool: schema from annotations, validated arguments."""

from __future__ import annotations

import inspect
import re
import typing
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar, overload

import msgspec

from xai.exceptions import ToolDefinitionError
from xai.messages import ToolSpec
from xai.tools._approval import ArgumentsPolicy
from xai.tools._pydantic import PydanticArguments, mentions_pydantic

__all__ = ["Tool", "ToolContext", "tool"]

DepsT = TypeVar("DepsT")

_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


@dataclass(frozen=True, slots=True)
class ToolContext(Generic[DepsT]):
    """What a tool may know about its caller, injected into a parameter annotated with it.

    ``deps`` is whatever the owner of the tool set bound to it (``ToolSet(...,
    context=...)``): a Session binds its own context here, so tools reach
    Session or Agent state without anything passing through Query's API.
    """

    deps: DepsT
    call_id: str
    tool_name: str


_ARGS_SECTIONS = frozenset({"args", "arguments", "parameters", "params", "keyword args"})
_OTHER_SECTIONS = frozenset(
    {
        "returns", "return", "yields", "yield", "raises", "raise", "examples", "example",
        "notes", "note", "see also", "attributes", "warnings", "warning", "todo", "references",
    }
)  # fmt: skip
_PARAM_LINE = re.compile(r"^\*{0,2}(\w+)\s*(?:\([^)]*\))?\s*:\s*(.*)$")


def _section(line: str) -> str | None:
    """The lower-cased name of a section header line (``Args:``, ``Returns``...), if it is one."""
    name = line.strip().rstrip(":").strip().lower()
    if name in _ARGS_SECTIONS or name in _OTHER_SECTIONS:
        return name
    return None


def _parse_docstring(doc: str) -> tuple[str, dict[str, str]]:
    """Split a Google/NumPy-style docstring into its summary and per-parameter descriptions.

    The summary is everything before the first section header; parameter
    descriptions come from the ``Args:`` (or ``Parameters``) section, with
    continuation lines joined.
    """
    lines = inspect.cleandoc(doc).splitlines() if doc else []
    summary: list[str] = []
    params: dict[str, str] = {}
    section: str | None = None
    current: str | None = None
    indent = 0
    numpy = False  # NumPy style: "name : type" on one line, the description below it
    for line in lines:
        stripped = line.strip()
        header = _section(line)
        if header is not None:
            section, current, numpy = header, None, False
            continue
        if section is None:
            summary.append(line)
            continue
        if stripped and set(stripped) == {"-"}:
            numpy = current is None
            continue
        if section not in _ARGS_SECTIONS or not stripped:
            continue
        line_indent = len(line) - len(line.lstrip())
        match = _PARAM_LINE.match(stripped)
        if match and (current is None or line_indent <= indent):
            current, indent = match.group(1), line_indent
            params[current] = "" if numpy else match.group(2).strip()
        elif current is not None:
            params[current] = f"{params[current]} {stripped}".strip()
    return "\n".join(summary).strip(), params


def _is_context(annotation: Any) -> bool:
    origin = typing.get_origin(annotation) or annotation
    return origin is ToolContext


class Tool:
    """A callable the model can use. Build one with ``@tool`` or ``Tool.from_function``.

    Arguments arrive as JSON text and are decoded by msgspec against a Struct
    built from the function's signature, so a wrong type, a missing or an
    unknown argument is caught before the function runs. A function that uses Pydantic (a
    ``BaseModel`` parameter, ``Field(...)`` metadata, Pydantic types) is described and checked
    by Pydantic instead: the schema is its ``model_json_schema()``, unchanged.
    """

    __slots__ = (
        "_args_type",
        "_decoder",
        "_param_names",
        "_pydantic",
        "context_param",
        "description",
        "function",
        "is_async",
        "name",
        "needs_approval",
        "parameters",
        "timeout",
    )

    def __init__(
        self,
        function: Callable[..., Any],
        *,
        name: str | None = None,
        description: str | None = None,
        timeout: float | None = None,
        needs_approval: ArgumentsPolicy = False,
    ) -> None:
        self.function = function
        self.needs_approval = needs_approval
        """A person approves each call first (``True``), or those a function of the
        decoded arguments picks (see docs/approvals.md)."""
        self.name = name or function.__name__
        if not _NAME.match(self.name):
            raise ToolDefinitionError(
                f"tool name {self.name!r} must be 1-64 characters of letters, digits, '_' or '-'"
            )
        self.is_async = inspect.iscoroutinefunction(function)
        self.timeout = timeout
        summary, param_docs = _parse_docstring(function.__doc__ or "")
        self.description = description if description is not None else summary
        try:
            hints = typing.get_type_hints(function, include_extras=True)
        except NameError as exc:
            raise ToolDefinitionError(
                f"tool {self.name!r}: cannot resolve an annotation ({exc})"
            ) from None
        fields: list[tuple[str, Any] | tuple[str, Any, Any]] = []
        described: list[tuple[str, Any] | tuple[str, Any, Any]] = []  # docs as msgspec.Meta
        self.context_param: str | None = None
        for param in inspect.signature(function).parameters.values():
            if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
                raise ToolDefinitionError(
                    f"tool {self.name!r}: *args / **kwargs cannot be described to a model"
                )
            if param.name not in hints:
                raise ToolDefinitionError(
                    f"tool {self.name!r}: parameter {param.name!r} needs a type annotation"
                )
            annotation = hints[param.name]
            if _is_context(annotation):
                self.context_param = param.name
                continue
            doc = param_docs.get(param.name)
            shown = (
                typing.Annotated[annotation, msgspec.Meta(description=doc)] if doc else annotation
            )
            if param.default is inspect.Parameter.empty:
                fields.append((param.name, annotation))
                described.append((param.name, shown))
            else:
                fields.append((param.name, annotation, param.default))
                described.append((param.name, shown, param.default))
        self._param_names = tuple(f[0] for f in fields)
        self._pydantic: PydanticArguments | None = None
        if any(mentions_pydantic(f[1]) for f in fields):
            try:
                self._pydantic = PydanticArguments(self.name, fields, param_docs)
            except Exception as exc:  # Pydantic's own schema or definition errors
                raise ToolDefinitionError(
                    f"tool {self.name!r}: Pydantic cannot describe its arguments ({exc})"
                ) from None
            self.parameters: dict[str, Any] = self._pydantic.schema
            return
        self._args_type: type[msgspec.Struct] = msgspec.defstruct(
            f"{self.name}_arguments",
            described,
            kw_only=True,
            forbid_unknown_fields=True,
        )
        self._decoder = msgspec.json.Decoder(self._args_type)
        try:
            (schema,), components = msgspec.json.schema_components(
                [self._args_type], ref_template="#/$defs/{name}"
            )
        except TypeError as exc:
            raise ToolDefinitionError(
                f"tool {self.name!r}: an argument type has no JSON schema ({exc})"
            ) from None
        own = components.pop(self._args_type.__name__, schema)
        own.pop("title", None)
        if components:
            own["$defs"] = components
        self.parameters = own

    @classmethod
    def from_function(cls, function: Callable[..., Any], **options: Any) -> Tool:
        return cls(function, **options)

    @property
    def spec(self) -> ToolSpec:
        return ToolSpec(name=self.name, description=self.description, parameters=self.parameters)

    def parse_arguments(self, arguments: str) -> dict[str, Any]:
        """Decode and validate the model's JSON; raises ``msgspec.DecodeError`` /
        ``ValidationError`` (for a tool checked by Pydantic too)."""
        if self._pydantic is not None:
            return self._pydantic.parse(arguments)
        decoded = self._decoder.decode(arguments or "{}")
        return {name: getattr(decoded, name) for name in self._param_names}

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """Call the underlying function directly (tools stay ordinary functions)."""
        return self.function(*args, **kwargs)

    def __repr__(self) -> str:
        return f"Tool({self.name!r})"


F = TypeVar("F", bound=Callable[..., Any])


@overload
def tool(function: Callable[..., Awaitable[Any]] | Callable[..., Any], /) -> Tool: ...


@overload
def tool(
    *,
    name: str | None = None,
    description: str | None = None,
    timeout: float | None = None,
    needs_approval: ArgumentsPolicy = False,
) -> Callable[[Callable[..., Any]], Tool]: ...


def tool(
    function: Callable[..., Any] | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    timeout: float | None = None,
    needs_approval: ArgumentsPolicy = False,
) -> Tool | Callable[[Callable[..., Any]], Tool]:
    """Make a tool from a typed function, sync or async; use bare or with options.

    The description comes from the docstring's summary, each parameter's from
    its ``Args:`` entry. A parameter annotated ``ToolContext[...]`` is not shown
    to the model; it receives the tool set's context at call time. ``timeout``
    overrides the Query's tool timeout for this tool. ``needs_approval``: a person approves
    each call before it runs (``True``), or the calls a function of the decoded arguments
    picks (docs/approvals.md).
    """

    def build(fn: Callable[..., Any]) -> Tool:
        return Tool(
            fn, name=name, description=description, timeout=timeout, needs_approval=needs_approval
        )

    if function is not None:
        return build(function)
    return build
