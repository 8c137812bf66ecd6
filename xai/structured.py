"""Structured output: ask for JSON shaped like a msgspec type or a Pydantic model, parse it,
never crash.

A Pydantic ``BaseModel`` works wherever a msgspec type does: its schema is its own
``model_json_schema()`` and its answer is checked by ``model_validate_json`` (Pydantic is
never imported here; see ``xai.tools._pydantic``).

``response_format(T)`` gives the ``json_schema`` format to send; ``parse(text,
T)`` returns a ``Parsed`` that always keeps the raw text and, on failure, the
error; ``ask_structured`` runs a Query, parses, and optionally shows the model
its error once so it can repair its answer.

Endpoints differ in which ``response_format`` they take: many small servers
refuse ``json_schema`` (with a 4xx, or with a 500 whose message names the
field) while ``json_object`` works. ``format_refused`` recognises that refusal
and ``fallback_formats`` gives the next thing to try: ``json_schema``, then
``json_object``, then instructions alone (the schema is always in the prompt).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, TypeVar

import msgspec

from xai.logs import get_logger
from xai.messages import ErrorInfo, Message, QueryResult, SystemMessage, UserMessage
from xai.providers import Provider
from xai.query import Query, QueryConfig
from xai.tools import is_pydantic_model, validation_text

if TYPE_CHECKING:
    from xai.telemetry import Telemetry

__all__ = [
    "JSON_OBJECT",
    "Parsed",
    "ask_json",
    "ask_structured",
    "fallback_formats",
    "format_refused",
    "json_object_text",
    "json_schema",
    "parse",
    "response_format",
]

T = TypeVar("T")

_FENCE = re.compile(r"^```(?:json)?\s*|\s*```$", re.MULTILINE)

_log = get_logger(__name__)

JSON_OBJECT: dict[str, Any] = {"type": "json_object"}
"""The plain JSON mode (no schema), which more servers take than ``json_schema``."""

_FORMAT_WORDS = ("response_format", "json_schema", "json_object", "response format")


@dataclass(frozen=True, slots=True)
class Parsed(Generic[T]):
    """The outcome of parsing a model's answer: ``value`` or ``error``, and always ``raw``."""

    raw: str
    value: T | None = None
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None


def json_schema(type_: Any) -> dict[str, Any]:
    """The JSON schema of ``type_``: Pydantic's ``model_json_schema()`` for a Pydantic model,
    else msgspec's."""
    if is_pydantic_model(type_):
        schema: dict[str, Any] = type_.model_json_schema()
        return schema
    return msgspec.json.schema(type_)


def response_format(
    type_: Any, *, name: str | None = None, strict: bool | None = None
) -> dict[str, Any]:
    """An OpenAI ``response_format`` asking for JSON that matches ``type_``'s schema.

    ``strict`` (default: on for msgspec types) asks for OpenAI's strict mode; a Pydantic
    model's schema is sent as Pydantic writes it, which strict mode usually refuses (it wants
    ``additionalProperties: false`` everywhere), so it defaults to off there.
    """
    if is_pydantic_model(type_):
        own = json_schema(type_)
        strict = False if strict is None else strict
    else:
        (schema,), components = msgspec.json.schema_components(
            [type_], ref_template="#/$defs/{name}"
        )
        own = components.pop(getattr(type_, "__name__", ""), schema)
        if components:
            own = {**own, "$defs": components}
        strict = True if strict is None else strict
    return {
        "type": "json_schema",
        "json_schema": {
            "name": name or getattr(type_, "__name__", "output"),
            "schema": own,
            "strict": strict,
        },
    }


def format_refused(error: ErrorInfo | None) -> bool:
    """Whether a failed request was the endpoint refusing its ``response_format``.

    A request error (4xx: ``BadRequestError``) counts, as before; so does a
    server error (5xx) whose message names the format (``response_format``,
    ``json_schema``): llama.cpp's server, for one, answers an unsupported
    ``json_schema`` with HTTP 500 and a validation error. Such an answer is not
    a fault a retry fixes: the next format is.
    """
    if error is None:
        return False
    if error.type == "BadRequestError":
        return True
    status = error.status_code or 0
    if error.type == "ServerError" or status >= 500:
        text = error.message.lower()
        return any(word in text for word in _FORMAT_WORDS)
    return False


def fallback_formats(first: dict[str, Any] | None) -> list[dict[str, Any] | None]:
    """The formats to try in order, starting at ``first``: ``json_schema`` ->
    ``json_object`` -> none (instructions alone)."""
    if first is None:
        return [None]
    if first.get("type") == "json_object":
        return [first, None]
    return [first, JSON_OBJECT, None]


def json_object_text(text: str) -> str | None:
    """The JSON object inside a model's answer (code fences and prose around it dropped)."""
    body = _FENCE.sub("", text.strip())
    start, end = body.find("{"), body.rfind("}")
    return body[start : end + 1] if 0 <= start < end else None


async def ask_json(
    provider: Provider,
    instructions: str,
    content: str,
    *,
    max_tokens: int,
    telemetry: Telemetry | None = None,
) -> QueryResult:
    """One deterministic round asking for a JSON object (the Session's and the Agent's own
    requests: memory extraction, judging).

    An endpoint that refuses the ``json_object`` format (``format_refused``) is
    asked again without it: the instructions say what to write. The result's ``usage``
    and ``rounds`` count every request sent, the refused one too.
    """
    result: QueryResult | None = None
    for fmt in fallback_formats(JSON_OBJECT):
        query = Query(
            provider,
            config=QueryConfig(
                max_rounds=1, max_tokens=max_tokens, temperature=0.0, response_format=fmt
            ),
            telemetry=telemetry,
        )
        result = _counted(
            result,
            await query.run(
                [SystemMessage(content=instructions)],
                UserMessage(content=content, origin="system"),
            ),
        )
        if result.error is None or not format_refused(result.error):
            break
        _log.warning("structured.format_refused", format=_kind(fmt), error=result.error.message)
    assert result is not None  # fallback_formats is never empty
    return result


def parse(text: str, type_: type[T]) -> Parsed[T]:
    """Decode ``text`` (code fences and prose around one JSON object tolerated) into ``type_``,
    a msgspec type or a Pydantic model."""
    candidate = json_object_text(text) or text
    if is_pydantic_model(type_):
        try:
            value: T = type_.model_validate_json(candidate)  # type: ignore[attr-defined]
        except ValueError as exc:  # pydantic.ValidationError is a ValueError
            return Parsed(raw=text, error=_pydantic_error(exc))
        return Parsed(raw=text, value=value)
    try:
        return Parsed(raw=text, value=msgspec.json.decode(candidate, type=type_))
    except (msgspec.DecodeError, msgspec.ValidationError) as exc:
        return Parsed(raw=text, error=str(exc))


def _pydantic_error(exc: ValueError) -> str:
    return validation_text(exc) if hasattr(exc, "errors") else str(exc)


async def ask_structured(
    provider: Provider,
    messages: Sequence[Message],
    type_: type[T],
    *,
    config: QueryConfig | None = None,
    repair: bool = True,
    schema_format: bool = True,
) -> tuple[Parsed[T], QueryResult]:
    """Run a Query asking for ``type_`` and parse the answer.

    With ``schema_format`` the request carries a ``json_schema`` response
    format (endpoints that ignore it still get instructions in the prompt); an
    endpoint that refuses it (``format_refused``) is asked again with
    ``json_object``, then with no format.
    With ``repair``, a parse failure is shown to the model once; the result is
    then the repair run's, with ``usage`` and ``rounds`` counting both runs, so
    every request sent is paid for in the figures.
    """
    schema = msgspec.json.encode(json_schema(type_)).decode()
    instruction = UserMessage(
        content=f"Answer with JSON only, matching this JSON schema:\n{schema}", origin="system"
    )
    base = config or QueryConfig()
    first = response_format(type_) if schema_format else base.response_format
    history = [*messages, instruction]
    spent: QueryResult | None = None
    for fmt in fallback_formats(first):
        query = Query(provider, config=msgspec.structs.replace(base, response_format=fmt))
        result = _counted(spent, await query.run(history))
        if result.error is None or not format_refused(result.error):
            break
        _log.warning("structured.format_refused", format=_kind(fmt), error=result.error.message)
        spent = result
    parsed = parse(result.text, type_)
    if parsed.ok or not repair or result.error is not None:
        return parsed, result
    retry = UserMessage(
        content=f"That answer was not valid ({parsed.error}). Reply again with JSON only.",
        origin="system",
    )
    second = _counted(result, await query.run([*history, *result.messages], retry))
    return parse(second.text, type_), second


def _kind(fmt: dict[str, Any] | None) -> str:
    return str(fmt.get("type")) if fmt is not None else "none"


def _counted(before: QueryResult | None, after: QueryResult) -> QueryResult:
    """``after`` with ``before``'s usage and rounds added (every request sent is paid for)."""
    if before is None:
        return after
    return msgspec.structs.replace(
        after, usage=before.usage + after.usage, rounds=before.rounds + after.rounds
    )
