"""Pydantic models where users already have them: tool parameters and structured output.

Pydantic is optional (``pip install 'xai-actors[pydantic]'``; the ``openai`` SDK depends on it,
so a plain install has it too) and never imported here: an annotation can only hold a
Pydantic type if the user's code imported Pydantic already, so each check looks in
``sys.modules`` and answers "no" when it is absent. That keeps ``import xai`` free of it.

The schema sent is Pydantic's own ``model_json_schema()``, unchanged, and validation is
Pydantic's own (``model_validate_json``), so what the model is told and what is checked are
what the user's Pydantic code would say.
"""

from __future__ import annotations

import sys
import typing
from collections.abc import Iterator, Sequence
from typing import Any

import msgspec

__all__ = [
    "PydanticArguments",
    "is_pydantic_model",
    "mentions_pydantic",
    "validation_text",
]


def _pydantic() -> Any:
    return sys.modules.get("pydantic")


def is_pydantic_model(annotation: Any) -> bool:
    """Whether ``annotation`` is a Pydantic ``BaseModel`` subclass (never imports Pydantic)."""
    pydantic = _pydantic()
    return (
        pydantic is not None
        and isinstance(annotation, type)
        and issubclass(annotation, pydantic.BaseModel)
    )


def _parts(annotation: Any, seen: set[int]) -> Iterator[Any]:
    """``annotation`` and everything inside it: type arguments and ``Annotated`` metadata."""
    if id(annotation) in seen:
        return
    seen.add(id(annotation))
    yield annotation
    for inner in getattr(annotation, "__metadata__", ()):
        yield from _parts(inner, seen)
    for inner in typing.get_args(annotation):
        yield from _parts(inner, seen)


def mentions_pydantic(annotation: Any) -> bool:
    """Whether an annotation uses Pydantic anywhere: a model, ``Field(...)`` metadata, a
    Pydantic type (``EmailStr``, ``HttpUrl``, ``conint(...)``)."""
    if _pydantic() is None:
        return False
    for part in _parts(annotation, set()):
        owner = part if isinstance(part, type) else type(part)
        if is_pydantic_model(part) or owner.__module__.partition(".")[0] in (
            "pydantic",
            "pydantic_core",
        ):
            return True
    return False


def validation_text(error: Any) -> str:
    """A Pydantic ``ValidationError`` as the model should read it: each field and what is wrong
    (no documentation URLs, which only cost tokens)."""
    lines = []
    for item in error.errors(include_url=False):
        where = ".".join(str(part) for part in item.get("loc", ())) or "arguments"
        lines.append(f"{where}: {item.get('msg', 'invalid')}")
    return "; ".join(lines) or str(error)


class PydanticArguments:
    """A tool's arguments checked by Pydantic.

    One parameter that is a ``BaseModel``: the tool's parameters are that model's schema and
    the function receives the validated instance. Otherwise Pydantic builds a model of the
    signature (``create_model``, unknown arguments forbidden), whose schema is sent.
    """

    __slots__ = ("_model", "_names", "_single", "schema")

    def __init__(
        self,
        name: str,
        fields: Sequence[tuple[str, Any] | tuple[str, Any, Any]],
        descriptions: dict[str, str],
    ) -> None:
        pydantic = _pydantic()
        assert pydantic is not None  # callers check mentions_pydantic first
        self._names = tuple(f[0] for f in fields)
        self._single: str | None = None
        if len(fields) == 1 and len(fields[0]) == 2 and is_pydantic_model(fields[0][1]):
            self._single = fields[0][0]
            self._model: Any = fields[0][1]
        else:
            definitions: dict[str, Any] = {}
            for field in fields:
                annotation = field[1]
                default = field[2] if len(field) == 3 else ...
                doc = descriptions.get(field[0])
                if doc:
                    annotation = typing.Annotated[annotation, pydantic.Field(description=doc)]
                definitions[field[0]] = (annotation, default)
            self._model = pydantic.create_model(
                f"{name}_arguments",
                __config__=pydantic.ConfigDict(extra="forbid"),
                **definitions,
            )
        self.schema: dict[str, Any] = self._model.model_json_schema()

    def parse(self, arguments: str) -> dict[str, Any]:
        """Validate the model's JSON; raises ``msgspec.ValidationError`` saying what is wrong,
        the error the tool set already sends back to the model for msgspec-checked tools."""
        pydantic = _pydantic()
        try:
            value = self._model.model_validate_json(arguments or "{}")
        except pydantic.ValidationError as exc:
            raise msgspec.ValidationError(validation_text(exc)) from None
        if self._single is not None:
            return {self._single: value}
        return {name: getattr(value, name) for name in self._names}


def dump(value: Any) -> Any | None:
    """A Pydantic model a tool returned, as JSON-ready builtins; ``None`` if it is not one."""
    if not is_pydantic_model(type(value)):
        return None
    return value.model_dump(mode="json")
