"""Trace a Session with OpenTelemetry and print the span tree.

Offline: a scripted model asks for two tools at once and delegates a sub-task to a
child Session. Spans go to the SDK's in-memory exporter (your own TracerProvider,
nothing global is set); swap in an OTLP exporter to send them to a collector.

    pip install 'xai-actors[otel]' opentelemetry-sdk
    python examples/otel_tracing.py
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import anyio
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from xai.session import HELPER_INSTRUCTIONS, Session, SessionConfig
from xai.telemetry import Telemetry
from xai.testing import Reply, ScriptedCall, ScriptedProvider

SHOWN = (
    "gen_ai.request.model",
    "gen_ai.response.finish_reasons",
    "gen_ai.usage.input_tokens",
    "gen_ai.usage.output_tokens",
    "gen_ai.tool.call.id",
    "xai.tool.success",
    "xai.turn.status",
)


async def forecast(city: str) -> str:
    """The weather forecast for a city."""
    return f"{city}: light rain, 9 °C"


async def tides(harbour: str) -> str:
    """Today's tides in a harbour."""
    return f"{harbour}: high water 12:40"


def model(body: Mapping[str, Any]) -> Reply:
    """The scripted model: tools first, then an answer; the helper counts boats."""
    messages = body["messages"]
    if HELPER_INSTRUCTIONS in messages[0]["content"]:
        return Reply(text="There are 42 boats in the harbour.")
    if messages[-1]["role"] == "user":
        return Reply(
            tool_calls=(
                ScriptedCall(name="forecast", arguments={"city": "Bergen"}),
                ScriptedCall(name="tides", arguments={"harbour": "Bergen"}),
                ScriptedCall(name="delegate", arguments={"task": "Count the boats in Bergen."}),
            )
        )
    return Reply(text="Light rain, high water at 12:40, and 42 boats out: take your jacket.")


def print_tree(spans: list[ReadableSpan]) -> None:
    by_parent: dict[int | None, list[ReadableSpan]] = {}
    for span in spans:
        parent = span.parent.span_id if span.parent else None
        by_parent.setdefault(parent, []).append(span)

    def show(span: ReadableSpan, depth: int) -> None:
        attributes = span.attributes or {}
        details = ", ".join(f"{k}={attributes[k]!r}" for k in SHOWN if k in attributes)
        print(f"{'  ' * depth}{span.name}" + (f"  [{details}]" if details else ""))
        assert span.context is not None
        for child in sorted(by_parent.get(span.context.span_id, []), key=_start):
            show(child, depth + 1)

    for root in sorted(by_parent.get(None, []), key=_start):
        show(root, 0)


def _start(span: ReadableSpan) -> int:
    return span.start_time or 0


async def main() -> None:
    exporter = InMemorySpanExporter()
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(exporter))
    telemetry = Telemetry(tracer_provider=tracer_provider)

    provider = ScriptedProvider(model="harbour-model")
    provider.script.add_responder(model)
    async with Session(
        provider,
        tools=[forecast, tides],
        config=SessionConfig(delegation=True),
        telemetry=telemetry,
    ) as session:
        outcome = await session.send("Should I sail out of Bergen today?")
    print(f"answer: {outcome.text}\n")
    print_tree(list(exporter.get_finished_spans()))
    tracer_provider.shutdown()


if __name__ == "__main__":
    anyio.run(main)
