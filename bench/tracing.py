"""What tracing costs: xai's Query CPU per exchange with telemetry on against off, same run.

The exchange is ``bench/overhead.py``'s (one tool call whose arguments arrive in
deltas, then 20 text chunks, over two streamed requests to the project's
OpenAI-wire test server in a process of its own). Variant ``off`` runs the Query
without telemetry; variant ``on`` gives it a ``Telemetry`` on the OpenTelemetry SDK
as an application would set it up: a ``TracerProvider`` with a
``BatchSpanProcessor`` (its exporter drops the batches, so no network is measured,
but the processor's thread is: ``time.process_time()`` counts every thread) and a
``MeterProvider`` with an in-memory reader. Each exchange then makes two ``chat``
spans, one ``execute_tool`` span and six histogram records. Variant ``spans`` is
``on`` with the metrics left to a no-op ``MeterProvider``: what the spans alone cost.
Variant ``api`` gives the Query a ``Telemetry`` on OpenTelemetry's no-op providers:
xai's side of the work (its attribute dicts, context switches and API calls) with
none of the SDK's, so ``on`` against ``api`` is what the SDK itself costs.

The variants run in the same child process, in alternating blocks of 2
exchanges (four Queries on one provider), so a machine that gets busier or quieter
moves them alike; ``--repeats`` fresh processes do that, and the ratio reported is
the median of their ratios.

    python bench/tracing.py            # 300 runs per variant x 3 processes
    python bench/tracing.py --quick    # 50 runs x 3 processes
    python bench/tracing.py --check    # exit 1 if the goal (on/off CPU <= 1.10) is not met

The last line of output is one JSON object with the figures.
"""

from __future__ import annotations

import argparse
import gc
import json
import signal
import statistics
import time
from collections.abc import Sequence
from typing import Literal

import _common
import anyio
import msgspec
from _common import Server, exit_on_sigterm, lookup, lookup_calls
from opentelemetry.metrics import NoOpMeterProvider
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult
from opentelemetry.trace import NoOpTracerProvider
from overhead import (
    MODEL,
    PROMPT,
    Figures,
    Plan,
    build_script,
    check_result,
    plan_from,
    plan_parser,
)

import xai
from xai.telemetry import Telemetry

Variant = Literal["off", "api", "spans", "on"]
VARIANTS: tuple[Variant, ...] = ("off", "api", "spans", "on")

GOAL_RATIO = 1.10
DEFAULT_MAX_SECONDS = 16.0
MIN_RUNS = 20
SPANS_PER_EXCHANGE = 3
BLOCK = 2
"""Exchanges per variant before switching to the next: small, so load that comes and goes
hits every variant alike."""


class Dropped(SpanExporter):
    """An exporter that counts spans and sends them nowhere."""

    def __init__(self) -> None:
        self.spans = 0

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        self.spans += len(spans)
        return SpanExportResult.SUCCESS

    def shutdown(self) -> None:
        pass


class Pair(msgspec.Struct, frozen=True, kw_only=True):
    """What one child process reports: every variant, measured interleaved."""

    off: Figures
    api: Figures
    spans: Figures
    on: Figures


async def run(base_url: str, plan: Plan) -> Pair:
    """Every variant in one process, in alternating blocks of ``BLOCK`` exchanges, so a
    machine that gets busier or quieter meanwhile moves them alike."""
    provider = xai.OpenAIProvider(
        xai.LLMConfig(model=MODEL, base_url=base_url, api_key="bench", max_retries=0)
    )
    exporter = Dropped()
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(BatchSpanProcessor(exporter))
    meter_provider = MeterProvider(metric_readers=[InMemoryMetricReader()])
    telemetry = Telemetry(tracer_provider=tracer_provider, meter_provider=meter_provider)
    spans_only = Telemetry(tracer_provider=tracer_provider, meter_provider=NoOpMeterProvider())
    api_only = Telemetry(tracer_provider=NoOpTracerProvider(), meter_provider=NoOpMeterProvider())
    try:
        async with provider:
            queries: dict[Variant, xai.Query] = {
                "off": xai.Query(provider, tools=[lookup]),
                "api": xai.Query(provider, tools=[lookup], telemetry=api_only),
                "spans": xai.Query(provider, tools=[lookup], telemetry=spans_only),
                "on": xai.Query(provider, tools=[lookup], telemetry=telemetry),
            }
            for query in queries.values():
                for _ in range(plan.warmup):
                    check_result(await query.run((), PROMPT))
            pair = await measure(queries, plan)
    finally:
        tracer_provider.force_flush()
        tracer_provider.shutdown()
        meter_provider.shutdown()
    expected = 2 * (plan.warmup + pair.on.runs) * SPANS_PER_EXCHANGE  # spans and on
    if exporter.spans != expected:
        raise AssertionError(f"{exporter.spans} spans exported, expected {expected}")
    return pair


async def measure(queries: dict[Variant, xai.Query], plan: Plan) -> Pair:
    """Client CPU (this process, every thread) and wall time of ``plan.runs`` exchanges per
    variant, in alternating blocks."""
    calls_before = lookup_calls()
    cpu: dict[Variant, float] = dict.fromkeys(VARIANTS, 0.0)
    wall: dict[Variant, float] = dict.fromkeys(VARIANTS, 0.0)
    runs = 0
    gc.collect()
    deadline = time.perf_counter() + plan.max_seconds
    while runs < plan.runs:
        block = min(BLOCK, plan.runs - runs)
        order = VARIANTS if (runs // BLOCK) % 2 == 0 else VARIANTS[::-1]
        for variant in order:
            query = queries[variant]
            cpu0, wall0 = time.process_time(), time.perf_counter()
            for _ in range(block):
                result = await query.run((), PROMPT)
                if result.rounds != 2 or result.error is not None:
                    check_result(result)
            cpu[variant] += time.process_time() - cpu0
            wall[variant] += time.perf_counter() - wall0
        runs += block
        if runs >= MIN_RUNS and time.perf_counter() > deadline:
            break
    if lookup_calls() - calls_before != len(VARIANTS) * runs:
        raise AssertionError(f"the tool ran {lookup_calls() - calls_before} times in {runs} runs")

    def figures(variant: Variant) -> Figures:
        return Figures(
            variant=variant,
            runs=runs,
            cpu_s=cpu[variant],
            wall_s=wall[variant],
            cpu_ms_per_run=cpu[variant] * 1000 / runs,
            wall_ms_per_run=wall[variant] * 1000 / runs,
        )

    return Pair(off=figures("off"), api=figures("api"), spans=figures("spans"), on=figures("on"))


def child(base_url: str, plan: Plan) -> int:
    pair = anyio.run(run, base_url, plan, backend="asyncio")
    print(msgspec.json.encode(pair).decode(), flush=True)
    return 0


def run_child(base_url: str, plan: Plan) -> Pair:
    args = ["--child", "--base-url", base_url, "--runs", str(plan.runs)]
    args += ["--warmup", str(plan.warmup), "--max-seconds", str(plan.max_seconds)]
    return _common.run_child(__file__, args, Pair, what="tracing child")


def parent(plan: Plan, repeats: int, check_goal: bool) -> int:
    signal.signal(signal.SIGTERM, exit_on_sigterm)
    server = Server(build_script())
    results: dict[Variant, list[Figures]] = {variant: [] for variant in VARIANTS}
    try:
        base_url = server.start()
        print(f"server: {base_url} (a separate process; only client CPU is measured)")
        print(
            f"exchange: 2 streamed requests and 1 tool call; tracing on = {SPANS_PER_EXCHANGE} "
            f"spans + 6 histogram records per exchange; per process {plan.warmup} warm-up + "
            f"{plan.runs} measured runs (capped at {plan.max_seconds:g}s); {repeats} rounds"
        )
        for round_ in range(repeats):
            pair = run_child(base_url, plan)
            results["off"].append(pair.off)
            results["api"].append(pair.api)
            results["spans"].append(pair.spans)
            results["on"].append(pair.on)
            print(
                f"  process {round_ + 1}: off {pair.off.cpu_ms_per_run:.3f} / api "
                f"{pair.api.cpu_ms_per_run:.3f} / spans "
                f"{pair.spans.cpu_ms_per_run:.3f} / on "
                f"{pair.on.cpu_ms_per_run:.3f} ms CPU/run, off {pair.off.wall_ms_per_run:.3f} "
                f"/ on {pair.on.wall_ms_per_run:.3f} ms wall/run ({pair.on.runs} runs each)"
            )
    finally:
        server.stop()

    def median(variant: Variant, wall: bool = False) -> float:
        return statistics.median(
            r.wall_ms_per_run if wall else r.cpu_ms_per_run for r in results[variant]
        )

    off_cpu, on_cpu = median("off"), median("on")
    off_wall, on_wall = median("off", wall=True), median("on", wall=True)
    per_round = [
        b.cpu_ms_per_run / a.cpu_ms_per_run
        for a, b in zip(results["off"], results["on"], strict=True)
    ]
    # The ratio of each process (both variants under the same load), their median.
    cpu_ratio = statistics.median(per_round)
    wall_ratio = statistics.median(
        b.wall_ms_per_run / a.wall_ms_per_run
        for a, b in zip(results["off"], results["on"], strict=True)
    )

    def cpu_ratio_of(variant: Variant) -> float:
        return statistics.median(
            b.cpu_ms_per_run / a.cpu_ms_per_run
            for a, b in zip(results["off"], results[variant], strict=True)
        )

    spans_ratio, api_ratio = cpu_ratio_of("spans"), cpu_ratio_of("api")
    met = cpu_ratio <= GOAL_RATIO
    print(f"tracing off: {off_cpu:.3f} ms CPU/run, {off_wall:.3f} ms wall/run")
    print(f"no-op API:   {median('api'):.3f} ms CPU/run (api/off CPU ratio {api_ratio:.3f})")
    print(f"spans only:  {median('spans'):.3f} ms CPU/run (spans/off CPU ratio {spans_ratio:.3f})")
    print(f"tracing on:  {on_cpu:.3f} ms CPU/run, {on_wall:.3f} ms wall/run")
    print(
        f"on/off CPU ratio: {cpu_ratio:.3f} (per round: "
        f"{', '.join(f'{r:.3f}' for r in per_round)}; goal <= {GOAL_RATIO}: "
        f"{'met' if met else 'NOT met'}); wall ratio: {wall_ratio:.3f}"
    )
    summary = {
        "off_cpu_ms_per_run": round(off_cpu, 4),
        "on_cpu_ms_per_run": round(on_cpu, 4),
        "on_vs_off_cpu_ratio": round(cpu_ratio, 4),
        "api_cpu_ms_per_run": round(median("api"), 4),
        "api_vs_off_cpu_ratio": round(api_ratio, 4),
        "spans_cpu_ms_per_run": round(median("spans"), 4),
        "spans_vs_off_cpu_ratio": round(spans_ratio, 4),
        "off_wall_ms_per_run": round(off_wall, 4),
        "on_wall_ms_per_run": round(on_wall, 4),
        "on_vs_off_wall_ratio": round(wall_ratio, 4),
        "goal_max_cpu_ratio": GOAL_RATIO,
        "goal_met": met,
        "runs": plan.runs,
        "runs_measured_min": min(r.runs for rs in results.values() for r in rs),
        "warmup": plan.warmup,
        "repeats": repeats,
    }
    print(json.dumps(summary))
    return 1 if check_goal and not met else 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = plan_parser(
        "Query CPU per exchange with OpenTelemetry tracing on against off.",
        repeats_help="child processes",
        max_seconds=DEFAULT_MAX_SECONDS,
    )
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    plan = plan_from(parser, args)
    if args.child:
        if not args.base_url:
            parser.error("--child needs --base-url")
        return child(args.base_url, plan)
    return parent(plan, args.repeats, args.check)


if __name__ == "__main__":
    raise SystemExit(main())
