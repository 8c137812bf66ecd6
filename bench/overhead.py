"""Client CPU per exchange: xai's Query against a plain ``openai`` SDK loop doing the same work.

The exchange: the model answers the user with one tool call whose arguments
arrive in several deltas; the client runs the tool, appends the assistant
message and the tool result, submits again, and the model answers with text
in exactly 20 chunks. Both variants talk to the project's OpenAI-wire test
server (``python -m xai.testing serve``), which runs as a process of its own,
so the CPU time measured in a variant's process is the client's alone.

Each variant runs in a fresh child process (warm-up runs, then ``--runs``
measured runs timed with ``time.process_time()``, cut short after
``--max-seconds`` of wall time if the exchanges are slow); the variants
alternate for ``--repeats`` rounds and the medians are compared. The ratio is
against the SDK baseline measured in the same invocation, so a noisy machine
moves both. Every run checks the final text, so a broken exchange cannot pass
for a fast one.

A third variant is the floor: the same exchange as a bare loop over
``httpx2`` (the HTTP client the ``openai`` SDK uses) and msgspec, with
nothing but what the exchange needs (build the body, split the SSE lines,
decode each chunk into two small structs, gather the call, run the tool).
A Query cannot cost much less than that; ``xai_vs_floor_cpu_ratio`` says how
close it comes. ``--baseline DIR`` adds a fourth: xai's Query run from another
checkout of xai (``git worktree add /tmp/old COMMIT``), in the same rounds, for
``xai_vs_baseline_cpu_ratio`` (new / old, same minutes).

    python bench/overhead.py            # 300 runs x 3 rounds per variant
    python bench/overhead.py --quick    # 50 runs x 3 rounds
    python bench/overhead.py --baseline /tmp/old    # and xai from /tmp/old in the same rounds
    python bench/overhead.py --check    # exit 1 unless xai/sdk <= 0.40 and xai/floor <= 1.05

The last line of output is one JSON object with the figures.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import signal
import statistics
import time
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any, Literal

import _common
import anyio
import httpx2
import msgspec
import openai
from _common import Server, exit_on_sigterm, lookup, lookup_calls
from openai.types.chat import (
    ChatCompletionMessageFunctionToolCallParam,
    ChatCompletionMessageParam,
    ChatCompletionToolParam,
)

import xai
from xai.testing import Reply, Rule, Script, ScriptedCall

Variant = Literal["sdk", "xai", "floor", "baseline"]
VARIANTS: tuple[Variant, ...] = ("sdk", "xai", "floor")
"""Always run; ``baseline`` (xai from ``--baseline DIR``) joins them when asked."""

MODEL = "bench-model"
PROMPT = "What will the weather be in Reykjavik over the next three days?"
TOOL_NAME = "lookup"
TOOL_ARGUMENTS: dict[str, Any] = {"city": "Reykjavik", "unit": "celsius", "days": 3, "detail": True}
ARGUMENT_CHUNK_CHARS = 8
TEXT_CHUNKS = 20
_SENTENCE = "Reykjavik stays cool and breezy: light rain on day one, clearing skies after. "
FINAL_TEXT = (_SENTENCE * 4)[: TEXT_CHUNKS * 12]
"""240 characters, so ``text_chunks=20`` cuts it into exactly 20 pieces of 12."""

GOAL_RATIO = 0.40
"""xai / sdk CPU (issue 35)."""
GOAL_FLOOR_RATIO = 1.05
"""xai / floor CPU (issue 35)."""
DEFAULT_RUNS = 300
QUICK_RUNS = 50
DEFAULT_WARMUP = 20
DEFAULT_REPEATS = 3
DEFAULT_MAX_SECONDS = 6.0
MIN_RUNS = 20
MAX_ROUNDS = 4


class Plan(msgspec.Struct, frozen=True, kw_only=True):
    """How much one child runs."""

    runs: int
    """Measured runs, unless ``max_seconds`` runs out first."""
    warmup: int
    max_seconds: float
    """Wall-time cap of the measured phase (at least ``MIN_RUNS`` runs are measured anyway)."""


class Figures(msgspec.Struct, frozen=True, kw_only=True):
    """What a child process reports (one JSON line on stdout)."""

    variant: str
    runs: int
    cpu_s: float
    wall_s: float
    cpu_ms_per_run: float
    wall_ms_per_run: float


# The same schema xai derives from ``lookup``'s signature and docstring, written out for the SDK.
SDK_TOOL: ChatCompletionToolParam = {
    "type": "function",
    "function": {
        "name": TOOL_NAME,
        "description": "Look up the weather forecast for a city.",
        "parameters": {
            "type": "object",
            "properties": {
                "city": {"description": "Name of the city.", "type": "string"},
                "unit": {
                    "description": 'Temperature unit, "celsius" or "fahrenheit".',
                    "type": "string",
                },
                "days": {"description": "How many days ahead.", "type": "integer"},
                "detail": {"description": "Whether to include hourly detail.", "type": "boolean"},
            },
            "required": ["city", "unit", "days", "detail"],
            "additionalProperties": False,
        },
    },
}


def build_script() -> bytes:
    """The server's script: rules, so one server answers any number of exchanges."""
    script = Script(
        rules=[
            Rule(
                last_role="user",
                reply=Reply(
                    tool_calls=(ScriptedCall(name=TOOL_NAME, arguments=TOOL_ARGUMENTS),),
                    argument_chunk_chars=ARGUMENT_CHUNK_CHARS,
                ),
            ),
            Rule(last_role="tool", reply=Reply(text=FINAL_TEXT, text_chunks=TEXT_CHUNKS)),
        ]
    )
    return msgspec.json.encode(script)


# -- variant (a): a plain openai SDK loop -------------------------------------------------


class SdkCounts(msgspec.Struct):
    """What the SDK loop saw, to prove it ran the exchange described above."""

    text_chunks: int = 0
    argument_deltas: int = 0
    requests: int = 0


class _PendingCall(msgspec.Struct):
    id: str = ""
    name: str = ""
    arguments: list[str] = msgspec.field(default_factory=list)


async def sdk_exchange(client: openai.AsyncOpenAI, counts: SdkCounts) -> str:
    """One exchange the way a hand-written SDK loop does it; returns the final text."""
    messages: list[ChatCompletionMessageParam] = [{"role": "user", "content": PROMPT}]
    for _ in range(MAX_ROUNDS):
        stream = await client.chat.completions.create(
            model=MODEL,
            messages=messages,
            tools=[SDK_TOOL],
            stream=True,
            stream_options={"include_usage": True},
        )
        counts.requests += 1
        text: list[str] = []
        calls: dict[int, _PendingCall] = {}
        got_usage = False
        async with stream:
            async for chunk in stream:
                if chunk.usage is not None:
                    got_usage = True
                if not chunk.choices:
                    continue
                delta = chunk.choices[0].delta
                if delta.content:
                    text.append(delta.content)
                    counts.text_chunks += 1
                if delta.tool_calls:
                    for piece in delta.tool_calls:
                        call = calls.get(piece.index)
                        if call is None:
                            call = calls[piece.index] = _PendingCall()
                        if piece.id:
                            call.id = piece.id
                        function = piece.function
                        if function is not None:
                            if function.name and not call.name:
                                call.name = function.name
                            if function.arguments:
                                call.arguments.append(function.arguments)
                                counts.argument_deltas += 1
        if not got_usage:
            raise AssertionError("the server sent no usage chunk")
        content = "".join(text)
        if not calls:
            return content
        tool_calls: list[ChatCompletionMessageFunctionToolCallParam] = [
            {
                "id": call.id,
                "type": "function",
                "function": {"name": call.name, "arguments": "".join(call.arguments) or "{}"},
            }
            for _, call in sorted(calls.items())
        ]
        messages.append({"role": "assistant", "content": content or None, "tool_calls": tool_calls})
        for wire in tool_calls:
            name = wire["function"]["name"]
            if name != TOOL_NAME:
                raise AssertionError(f"the model asked for an unknown tool {name!r}")
            arguments = json.loads(wire["function"]["arguments"])
            result = await lookup(**arguments)
            messages.append({"role": "tool", "tool_call_id": wire["id"], "content": result})
    raise AssertionError("the exchange did not end within the round limit")


async def run_sdk(base_url: str, plan: Plan) -> Figures:
    async with openai.AsyncOpenAI(
        api_key="bench", base_url=base_url, max_retries=0, timeout=30.0
    ) as client:
        # The first warm-up run is checked in detail, the others by their text.
        counts = SdkCounts()
        text = await sdk_exchange(client, counts)
        check(text, counts.text_chunks, counts.requests)
        if counts.argument_deltas < 2:
            raise AssertionError(f"tool arguments came in {counts.argument_deltas} delta(s)")
        for _ in range(plan.warmup - 1):
            check_text(await sdk_exchange(client, counts))

        async def one_run() -> None:
            text = await sdk_exchange(client, counts)
            if text != FINAL_TEXT:
                check_text(text)

        return await measure("sdk", one_run, plan)


# -- variant (c): the floor, a bare httpx2 + msgspec loop ------------------------------------


class _FloorFunction(msgspec.Struct):
    name: str | None = None
    arguments: str | None = None


class _FloorCall(msgspec.Struct):
    index: int = 0
    id: str | None = None
    function: _FloorFunction | None = None


class _FloorDelta(msgspec.Struct):
    content: str | None = None
    tool_calls: list[_FloorCall] | None = None


class _FloorChoice(msgspec.Struct):
    delta: _FloorDelta | None = None
    finish_reason: str | None = None


class _FloorChunk(msgspec.Struct):
    choices: list[_FloorChoice] | None = None
    usage: dict[str, Any] | None = None


_decode_floor_chunk = msgspec.json.Decoder(_FloorChunk).decode
_encode = msgspec.json.Encoder().encode


async def floor_exchange(client: httpx2.AsyncClient, counts: SdkCounts) -> str:
    """The exchange with nothing but httpx2 and msgspec; returns the final text."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": PROMPT}]
    for _ in range(MAX_ROUNDS):
        body = _encode(
            {
                "model": MODEL,
                "messages": messages,
                "tools": [SDK_TOOL],
                "stream": True,
                "stream_options": {"include_usage": True},
            }
        )
        counts.requests += 1
        text: list[str] = []
        calls: dict[int, _PendingCall] = {}
        got_usage = False
        async with client.stream("POST", "chat/completions", content=body) as response:
            if response.status_code != 200:
                raise AssertionError(f"HTTP {response.status_code}")
            buffer = b""
            async for piece in response.aiter_bytes():
                buffer = buffer + piece if buffer else piece
                *lines, buffer = buffer.split(b"\n")
                for line in lines:
                    if not line.startswith(b"data: ") or line == b"data: [DONE]":
                        continue
                    chunk = _decode_floor_chunk(line[6:])
                    if chunk.usage is not None:
                        got_usage = True
                    if not chunk.choices:
                        continue
                    delta = chunk.choices[0].delta
                    if delta is None:
                        continue
                    if delta.content:
                        text.append(delta.content)
                        counts.text_chunks += 1
                    for piece_call in delta.tool_calls or ():
                        call = calls.get(piece_call.index)
                        if call is None:
                            call = calls[piece_call.index] = _PendingCall()
                        if piece_call.id:
                            call.id = piece_call.id
                        function = piece_call.function
                        if function is not None:
                            if function.name and not call.name:
                                call.name = function.name
                            if function.arguments:
                                call.arguments.append(function.arguments)
                                counts.argument_deltas += 1
        if not got_usage:
            raise AssertionError("the server sent no usage chunk")
        content = "".join(text)
        if not calls:
            return content
        finished = [(c.id, c.name, "".join(c.arguments) or "{}") for _, c in sorted(calls.items())]
        tool_calls = [
            {"id": id_, "type": "function", "function": {"name": name, "arguments": arguments}}
            for id_, name, arguments in finished
        ]
        messages.append({"role": "assistant", "content": content, "tool_calls": tool_calls})
        for id_, name, arguments in finished:
            if name != TOOL_NAME:
                raise AssertionError(f"the model asked for an unknown tool {name!r}")
            result = await lookup(**msgspec.json.decode(arguments))
            messages.append({"role": "tool", "tool_call_id": id_, "content": result})
    raise AssertionError("the exchange did not end within the round limit")


async def run_floor(base_url: str, plan: Plan) -> Figures:
    headers = {"Authorization": "Bearer bench", "Content-Type": "application/json"}
    async with httpx2.AsyncClient(
        base_url=base_url.rstrip("/") + "/", headers=headers, timeout=30.0
    ) as client:
        counts = SdkCounts()
        text = await floor_exchange(client, counts)
        check(text, counts.text_chunks, counts.requests)
        if counts.argument_deltas < 2:
            raise AssertionError(f"tool arguments came in {counts.argument_deltas} delta(s)")
        for _ in range(plan.warmup - 1):
            check_text(await floor_exchange(client, counts))

        async def one_run() -> None:
            text = await floor_exchange(client, counts)
            if text != FINAL_TEXT:
                check_text(text)

        return await measure("floor", one_run, plan)


# -- variant (b): xai's Query ----------------------------------------------------------------


async def run_xai(base_url: str, plan: Plan) -> Figures:
    provider = xai.OpenAIProvider(
        xai.LLMConfig(model=MODEL, base_url=base_url, api_key="bench", max_retries=0)
    )
    async with provider:
        query = xai.Query(provider, tools=[lookup])
        # Both variants must send the same request bodies, tool schema included.
        spec, sdk = query.tools.specs[0], SDK_TOOL["function"]
        if (spec.name, spec.description, spec.parameters) != (
            sdk["name"],
            sdk.get("description"),
            sdk.get("parameters"),
        ):
            raise AssertionError(f"SDK_TOOL differs from the schema xai derives: {spec!r}")
        deltas: list[xai.TextDelta] = []

        def observe(event: xai.QueryEvent) -> None:
            if isinstance(event, xai.TextDelta):
                deltas.append(event)

        # The first warm-up run is watched, to prove the exchange is the one described above.
        result = await query.run((), PROMPT, observers=[observe])
        check_result(result)
        check(result.text, len(deltas), result.usage.requests)
        if len(result.tool_results) != 1 or result.tool_results[0].is_error:
            raise AssertionError(f"the tool call did not succeed: {result.tool_results!r}")
        for _ in range(plan.warmup - 1):
            check_result(await query.run((), PROMPT))

        async def one_run() -> None:
            result = await query.run((), PROMPT)
            if result.text != FINAL_TEXT or result.rounds != 2:
                check_result(result)

        return await measure("xai", one_run, plan)


def check_result(result: xai.QueryResult) -> None:
    if result.error is not None:
        raise AssertionError(f"the query failed: {result.error!r}")
    if result.stop_reason != "end_turn" or result.rounds != 2:
        raise AssertionError(f"unexpected stop: {result.stop_reason} after {result.rounds} rounds")
    check_text(result.text)


def check_text(text: str) -> None:
    if text != FINAL_TEXT:
        raise AssertionError(f"unexpected final text: {text!r}")


def check(text: str, text_chunks: int, requests: int) -> None:
    """The first run of each variant: the whole text, in the scripted number of chunks."""
    check_text(text)
    if text_chunks != TEXT_CHUNKS:
        raise AssertionError(f"expected {TEXT_CHUNKS} text chunks, got {text_chunks}")
    if requests != 2:
        raise AssertionError(f"expected 2 requests per exchange, got {requests}")


# -- measuring, in the child ---------------------------------------------------------------


async def measure(variant: Variant, one_run: Callable[[], Awaitable[None]], plan: Plan) -> Figures:
    """Client CPU (this process only) and wall time of ``plan.runs`` calls of ``one_run``."""
    calls_before = lookup_calls()
    gc.collect()
    runs = 0
    cpu0, wall0 = time.process_time(), time.perf_counter()
    deadline = wall0 + plan.max_seconds
    while runs < plan.runs:
        await one_run()
        runs += 1
        if runs >= MIN_RUNS and time.perf_counter() > deadline:
            break
    cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
    if lookup_calls() - calls_before != runs:
        raise AssertionError(f"the tool ran {lookup_calls() - calls_before} times in {runs} runs")
    return Figures(
        variant=variant,
        runs=runs,
        cpu_s=cpu,
        wall_s=wall,
        cpu_ms_per_run=cpu * 1000 / runs,
        wall_ms_per_run=wall * 1000 / runs,
    )


def child(variant: Variant, base_url: str, plan: Plan) -> int:
    runners = {"sdk": run_sdk, "xai": run_xai, "floor": run_floor, "baseline": run_xai}
    figures = anyio.run(runners[variant], base_url, plan, backend="asyncio")
    if variant == "baseline":
        figures = msgspec.structs.replace(figures, variant="baseline")
    print(msgspec.json.encode(figures).decode(), flush=True)
    return 0


# -- orchestrating, in the parent ------------------------------------------------------------


def run_child(variant: Variant, base_url: str, plan: Plan, baseline: str | None) -> Figures:
    args = ["--variant", variant, "--base-url", base_url, "--runs", str(plan.runs)]
    args += ["--warmup", str(plan.warmup), "--max-seconds", str(plan.max_seconds)]
    env = None
    if variant == "baseline" and baseline is not None:
        # The other checkout's xai first on the path; this file and _common stay ours.
        env = {
            **os.environ,
            "PYTHONPATH": os.pathsep.join([baseline, os.environ.get("PYTHONPATH", "")]),
        }
    return _common.run_child(__file__, args, Figures, what=f"{variant} variant", env=env)


def parent(plan: Plan, repeats: int, check_goal: bool, baseline: str | None = None) -> int:
    signal.signal(signal.SIGTERM, exit_on_sigterm)
    server = Server(build_script())
    variants: tuple[Variant, ...] = (*VARIANTS, "baseline") if baseline else VARIANTS
    results: dict[Variant, list[Figures]] = {v: [] for v in variants}
    try:
        base_url = server.start()
        print(f"server: {base_url} (a separate process; only client CPU is measured)")
        print(
            f"exchange: 1 tool call in {ARGUMENT_CHUNK_CHARS}-char argument deltas, then "
            f"{TEXT_CHUNKS} text chunks, over 2 streamed requests; per process "
            f"{plan.warmup} warm-up + {plan.runs} measured runs (capped at {plan.max_seconds:g}s); "
            f"{repeats} rounds"
        )
        if baseline:
            print(f"baseline: xai from {baseline}, in the same rounds")
        for round_ in range(repeats):
            order = variants if round_ % 2 == 0 else variants[::-1]
            for variant in order:
                figures = run_child(variant, base_url, plan, baseline)
                results[variant].append(figures)
                print(
                    f"  round {round_ + 1} {variant}: {figures.cpu_ms_per_run:.3f} ms CPU/run, "
                    f"{figures.wall_ms_per_run:.3f} ms wall/run ({figures.runs} runs)"
                )
    finally:
        server.stop()

    def median(variant: Variant, wall: bool = False) -> float:
        return statistics.median(
            r.wall_ms_per_run if wall else r.cpu_ms_per_run for r in results[variant]
        )

    sdk_cpu, xai_cpu, floor_cpu = median("sdk"), median("xai"), median("floor")
    sdk_wall, xai_wall = median("sdk", wall=True), median("xai", wall=True)
    cpu_ratio = xai_cpu / sdk_cpu
    floor_ratio = xai_cpu / floor_cpu
    wall_ratio = xai_wall / sdk_wall

    def per_round(base: Variant) -> str:
        return ", ".join(
            f"{b.cpu_ms_per_run / a.cpu_ms_per_run:.3f}"
            for a, b in zip(results[base], results["xai"], strict=True)
        )

    measured = min(r.runs for rs in results.values() for r in rs)
    met_sdk = cpu_ratio <= GOAL_RATIO
    met_floor = floor_ratio <= GOAL_FLOOR_RATIO
    print(f"sdk (a): {sdk_cpu:.3f} ms CPU/run, {sdk_wall:.3f} ms wall/run (median of {repeats})")
    print(f"xai (b): {xai_cpu:.3f} ms CPU/run, {xai_wall:.3f} ms wall/run (median of {repeats})")
    print(f"floor (c): {floor_cpu:.3f} ms CPU/run (bare httpx2 + msgspec; median of {repeats})")
    print(
        f"b/a CPU ratio: {cpu_ratio:.3f} (per round: {per_round('sdk')}; "
        f"goal <= {GOAL_RATIO}: {'met' if met_sdk else 'NOT met'}); wall ratio: {wall_ratio:.3f}"
    )
    print(
        f"b/c CPU ratio: {floor_ratio:.3f} (per round: {per_round('floor')}; "
        f"goal <= {GOAL_FLOOR_RATIO}: {'met' if met_floor else 'NOT met'})"
    )
    if measured < plan.runs:
        print(
            f"note: the {plan.max_seconds:g}s cap cut a process to {measured} measured runs; "
            "exchanges are slow in wall time (is the server delaying its small writes?)"
        )
    summary: dict[str, object] = {
        "sdk_cpu_ms_per_run": round(sdk_cpu, 4),
        "xai_cpu_ms_per_run": round(xai_cpu, 4),
        "floor_cpu_ms_per_run": round(floor_cpu, 4),
        "xai_vs_sdk_cpu_ratio": round(cpu_ratio, 4),
        "xai_vs_floor_cpu_ratio": round(floor_ratio, 4),
        "floor_vs_sdk_cpu_ratio": round(floor_cpu / sdk_cpu, 4),
        "sdk_wall_ms_per_run": round(sdk_wall, 4),
        "xai_wall_ms_per_run": round(xai_wall, 4),
        "xai_vs_sdk_wall_ratio": round(wall_ratio, 4),
        "goal_max_cpu_ratio": GOAL_RATIO,
        "goal_max_floor_ratio": GOAL_FLOOR_RATIO,
    }
    if baseline:
        base_cpu = median("baseline")
        base_ratio = xai_cpu / base_cpu
        print(
            f"b/baseline CPU ratio: {base_ratio:.3f} (per round: {per_round('baseline')}; "
            f"baseline {base_cpu:.3f} ms CPU/run, xai from {baseline})"
        )
        summary |= {
            "baseline_cpu_ms_per_run": round(base_cpu, 4),
            "xai_vs_baseline_cpu_ratio": round(base_ratio, 4),
            "baseline_vs_floor_cpu_ratio": round(base_cpu / floor_cpu, 4),
            "baseline_vs_sdk_cpu_ratio": round(base_cpu / sdk_cpu, 4),
        }
    met = met_sdk and met_floor
    summary |= {
        "goal_met": met,
        "runs": plan.runs,
        "runs_measured_min": measured,
        "warmup": plan.warmup,
        "repeats": repeats,
    }
    print(json.dumps(summary))
    return 1 if check_goal and not met else 0


def plan_parser(
    description: str, *, repeats_help: str, max_seconds: float = DEFAULT_MAX_SECONDS
) -> argparse.ArgumentParser:
    """The options every CPU bench of this kind takes (runs, warm-up, repeats, time cap)."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--runs", type=int, help=f"measured runs per process ({DEFAULT_RUNS})")
    parser.add_argument("--quick", action="store_true", help=f"{QUICK_RUNS} measured runs")
    parser.add_argument("--warmup", type=int, default=DEFAULT_WARMUP, help="warm-up runs")
    parser.add_argument("--repeats", type=int, default=DEFAULT_REPEATS, help=repeats_help)
    parser.add_argument(
        "--max-seconds",
        type=float,
        default=max_seconds,
        help="wall-time cap of one process's measured runs",
    )
    parser.add_argument("--check", action="store_true", help="exit 1 if the goal is not met")
    parser.add_argument("--base-url", help=argparse.SUPPRESS)
    return parser


def plan_from(parser: argparse.ArgumentParser, args: argparse.Namespace) -> Plan:
    runs: int = args.runs if args.runs is not None else QUICK_RUNS if args.quick else DEFAULT_RUNS
    if runs < 1 or args.repeats < 1 or args.warmup < 0 or args.max_seconds <= 0:
        parser.error("--runs and --repeats must be >= 1, --warmup >= 0, --max-seconds > 0")
    return Plan(runs=runs, warmup=max(1, args.warmup), max_seconds=args.max_seconds)


def main(argv: Sequence[str] | None = None) -> int:
    parser = plan_parser(
        "Client CPU per exchange: xai's Query against a plain openai SDK loop.",
        repeats_help="rounds per variant",
    )
    parser.add_argument(
        "--baseline", metavar="DIR", help="also run xai's Query from the checkout in DIR"
    )
    parser.add_argument("--variant", choices=(*VARIANTS, "baseline"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    plan = plan_from(parser, args)
    if args.variant is not None:
        if not args.base_url:
            parser.error("--variant needs --base-url")
        return child(args.variant, args.base_url, plan)
    baseline = str(Path(args.baseline).resolve()) if args.baseline else None
    if baseline is not None and not (Path(baseline) / "xai" / "__init__.py").is_file():
        parser.error(f"--baseline {args.baseline}: no xai package there")
    return parent(plan, args.repeats, args.check, baseline)


if __name__ == "__main__":
    raise SystemExit(main())
