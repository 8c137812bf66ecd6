"""Structured output: ask for JSON shaped like a msgspec type, parse it, never crash.

``response_format(T)`` gives the ``json_schema`` format to send; ``parse(text,
T)`` returns a ``Parsed`` that always keeps the raw text and, on failure, the
error; ``ask_structured`` runs a Query, parses, and optionally shows the model
its error once so it can repair its answer.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, TypeVar

import msgspec

from xai.messages import Message, QueryResult, SystemMessage, UserMessage
from xai.providers import Provider
from xai.query import Query, QueryConfig

if TYPE_CHECKING:
    from xai.telemetry import Telemetry

__all__ = ["Parsed", "ask_json", "ask_structured", "json_object_text", "parse", "response_format"]

T = TypeVar("T")

_FENCE = re.compile(r"^```(?:json)?\s*|\s*```$", re.MULTILINE)


@dataclass(frozen=True, slots=True)
class Parsed(Generic[T]):
    """The outcome of parsing a model's answer: ``value`` or ``error``, and always ``raw``."""

    raw: str
    value: T | None = None
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None


def response_format(type_: Any, *, name: str | None = None, strict: bool = True) -> dict[str, Any]:
    """An OpenAI ``response_format`` asking for JSON that matches ``type_``'s schema."""
    (schema,), components = msgspec.json.schema_components([type_], ref_template="#/$defs/{name}")
    own = components.pop(getattr(type_, "__name__", ""), schema)
    if components:
        own = {**own, "$defs": components}
    return {
        "type": "json_schema",
        "json_schema": {
            "name": name or getattr(type_, "__name__", "output"),
            "schema": own,
            "strict": strict,
        },
    }


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
    requests: memory extraction, judging)."""
    query = Query(
        provider,
        config=QueryConfig(
            max_rounds=1,
            max_tokens=max_tokens,
            temperature=0.0,
            response_format={"type": "json_object"},
        ),
        telemetry=telemetry,
    )
    return await query.run(
        [SystemMessage(content=instructions)], UserMessage(content=content, origin="system")
    )


def parse(text: str, type_: type[T]) -> Parsed[T]:
    """Decode ``text`` (code fences and prose around one JSON object tolerated) into ``type_``."""
    candidate = json_object_text(text) or text
    try:
        return Parsed(raw=text, value=msgspec.json.decode(candidate, type=type_))
    except (msgspec.DecodeError, msgspec.ValidationError) as exc:
        return Parsed(raw=text, error=str(exc))


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
    format (endpoints that ignore it still get instructions in the prompt).
    With ``repair``, a parse failure is shown to the model once; the result is
    then the repair run's, with ``usage`` and ``rounds`` counting both runs, so
    every request sent is paid for in the figures.
    """
    schema = msgspec.json.encode(msgspec.json.schema(type_)).decode()
    instruction = UserMessage(
        content=f"Answer with JSON only, matching this JSON schema:\n{schema}", origin="system"
    )
    base = config or QueryConfig()
    if schema_format:
        base = msgspec.structs.replace(base, response_format=response_format(type_))
    query = Query(provider, config=base)
    history = [*messages, instruction]
    result = await query.run(history)
    parsed = parse(result.text, type_)
    if parsed.ok or not repair or result.error is not None:
        return parsed, result
    retry = UserMessage(
        content=f"That answer was not valid ({parsed.error}). Reply again with JSON only.",
        origin="system",
    )
    second = await query.run([*history, *result.messages], retry)
    both = msgspec.structs.replace(
        second, usage=result.usage + second.usage, rounds=result.rounds + second.rounds
    )
    return parse(second.text, type_), both
