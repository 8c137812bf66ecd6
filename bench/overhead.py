"""Client CPU per exchange: xai's Query, Session and Agent against a plain ``openai`` SDK loop
and a bare HTTP loop doing the same work.

The exchange: the model answers the user with one tool call whose arguments
arrive in several deltas; the client runs the tool, appends the assistant
message and the tool result, submits again, and the model answers with text
in exactly 20 chunks. Both variants talk to the project's OpenAI-wire test
server (``python -m xai.testing serve``), which runs as a process of its own,
so the CPU time measured in a variant's process is the client's alone.

The variants run in worker processes that take turns: each worker sets its
variants up and warms them up, then runs blocks of ``BLOCK_RUNS`` exchanges on
request, timed with ``time.process_time()``, while the others wait; the parent
goes round every unit (a worker's variant) block by block, in alternating order.
A ratio is taken per block against the block of its baseline unit in the same
turn (a second or so apart) and the figure is the median of those ratios: load
that comes and goes, a garbage collection or a burst of other work on a shared
machine moves one block's ratio of many, not the figure. ``--repeats`` rounds of
fresh workers give the per-round figures, whose spread the output states. Every
run checks the final text, so a broken exchange cannot pass for a fast one.
The CPU is the whole process's, user and kernel (an fsync's and a file's creation are
the kernel's, in a worker thread): ``<unit>_system_ms_per_run`` states the kernel's part.

Variants: ``sdk``, a plain ``openai`` SDK loop; ``xai``, xai's ``Query``;
``floor``, the same exchange as a bare loop over ``httpx2`` (the HTTP client the
``openai`` SDK uses) and msgspec, with nothing but what the exchange needs
(build the body, split the SSE lines, decode each chunk into two small structs,
gather the call, run the tool): a Query cannot cost much less;
``session_once``, a ``Session`` opened for the exchange and closed after it,
start and close timed; ``agent``, the same on a Session of an ``Agent`` whose
memory is off (no extraction, no memory tool; its journal synced per turn).
``--baseline DIR`` (repeatable) adds a worker running ``xai``, ``session_once``
and ``agent`` from another checkout of xai (``git worktree add /tmp/old COMMIT``)
in the same rounds: ``xai_vs_<dir>_cpu_ratio`` and so on, new / old.

    python bench/overhead.py            # 300 exchanges per unit x 3 rounds
    python bench/overhead.py --quick    # 50 x 3
    python bench/overhead.py --baseline /tmp/old --baseline /tmp/main
    python bench/overhead.py --check    # exit 1 unless every goal below is met

Goals (issue 35): xai/sdk <= 0.40, xai/floor <= 1.05, session_once/xai <= 1.10,
agent/sdk <= 0.50.

The last line of output is one JSON object with the figures.
"""

from __future__ import annotations

import argparse
import functools
import gc
import json
import os
import resource
import signal
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Sequence
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any, Literal

import anyio
import httpx2
import msgspec
import openai
from _common import LineChild, Server, exit_on_sigterm, lookup, lookup_calls, median_ci
from openai.types.chat import (
    ChatCompletionMessageFunctionToolCallParam,
    ChatCompletionMessageParam,
    ChatCompletionToolParam,
)

import xai
from xai.testing import Reply, Rule, Script, ScriptedCall

Variant = Literal[
    "sdk", "xai", "floor", "session_once", "agent", "agent_unsynced", "agent_moodless"
]
VARIANTS: tuple[Variant, ...] = ("sdk", "floor", "xai", "session_once", "agent")
"""Run by default (``--variants`` picks some; ``agent_unsynced`` and ``agent_moodless``,
the Agent without its fsyncs or without its mood, say what those cost)."""
BASELINE_VARIANTS: tuple[Variant, ...] = ("xai", "session_once", "agent")
"""The variants a ``--baseline`` checkout runs too (its xai's, in the same rounds)."""
OneRun = Callable[[], Awaitable[None]]

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
GOAL_SESSION_ONCE_RATIO = 1.10
"""A Session opened for one exchange and closed, against a bare Query (issue 35)."""
GOAL_AGENT_RATIO = 0.50
"""An Agent's turn with its memory off, against the SDK loop (issue 35)."""
GOALS: dict[str, float] = {
    "xai_vs_sdk": GOAL_RATIO,
    "xai_vs_floor": GOAL_FLOOR_RATIO,
    "session_once_vs_xai": GOAL_SESSION_ONCE_RATIO,
    "agent_vs_sdk": GOAL_AGENT_RATIO,
}
BLOCK_RUNS = 5
"""Exchanges of one unit before the next unit's turn: a block lasts some 20-60 ms, so
load that comes and goes hits neighbouring blocks alike."""
DEFAULT_RUNS = 300
QUICK_RUNS = 50
DEFAULT_WARMUP = 20
DEFAULT_REPEATS = 3
DEFAULT_MAX_SECONDS = 6.0
MAX_ROUNDS = 4


class Plan(msgspec.Struct, frozen=True, kw_only=True):
    """How much one child runs."""

    runs: int
    """Measured runs, unless ``max_seconds`` runs out first."""
    warmup: int
    max_seconds: float
    """Wall-time cap of the measured phase, per unit (at least two blocks run anyway)."""


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


async def setup_sdk(base_url: str, stack: AsyncExitStack) -> OneRun:
    client = await stack.enter_async_context(
        openai.AsyncOpenAI(api_key="bench", base_url=base_url, max_retries=0, timeout=30.0)
    )
    # The first run is checked in detail, the others by their text.
    counts = SdkCounts()
    text = await sdk_exchange(client, counts)
    check(text, counts.text_chunks, counts.requests)
    if counts.argument_deltas < 2:
        raise AssertionError(f"tool arguments came in {counts.argument_deltas} delta(s)")

    async def one_run() -> None:
        text = await sdk_exchange(client, counts)
        if text != FINAL_TEXT:
            check_text(text)

    return one_run


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


async def setup_floor(base_url: str, stack: AsyncExitStack) -> OneRun:
    headers = {"Authorization": "Bearer bench", "Content-Type": "application/json"}
    client = await stack.enter_async_context(
        httpx2.AsyncClient(base_url=base_url.rstrip("/") + "/", headers=headers, timeout=30.0)
    )
    counts = SdkCounts()
    text = await floor_exchange(client, counts)
    check(text, counts.text_chunks, counts.requests)
    if counts.argument_deltas < 2:
        raise AssertionError(f"tool arguments came in {counts.argument_deltas} delta(s)")

    async def one_run() -> None:
        text = await floor_exchange(client, counts)
        if text != FINAL_TEXT:
            check_text(text)

    return one_run


# -- variant (b): xai's Query, and a Session and an Agent around it -------------------------


async def xai_provider(base_url: str, stack: AsyncExitStack) -> xai.OpenAIProvider:
    provider = xai.OpenAIProvider(
        xai.LLMConfig(model=MODEL, base_url=base_url, api_key="bench", max_retries=0)
    )
    return await stack.enter_async_context(provider)


async def setup_xai(base_url: str, stack: AsyncExitStack) -> OneRun:
    query = xai.Query(await xai_provider(base_url, stack), tools=[lookup])
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

    async def one_run() -> None:
        result = await query.run((), PROMPT)
        if result.text != FINAL_TEXT or result.rounds != 2:
            check_result(result)

    return one_run


async def setup_session_once(base_url: str, stack: AsyncExitStack) -> OneRun:
    """A Session opened for the exchange and closed after it (no directory, no memory),
    start and close timed with it: what an application that opens a Session per request pays."""
    from xai.session import Session

    provider = await xai_provider(base_url, stack)

    async def one_run() -> None:
        async with Session(provider, tools=[lookup]) as session:
            outcome = await session.send(PROMPT)
        if outcome.text != FINAL_TEXT:
            raise AssertionError(f"unexpected outcome: {outcome!r}")

    await one_run()
    return one_run


class _NoEmbedder:
    """An embedder the memory-off Agent never asks (it would fail the run if it did)."""

    name = "bench-none"
    dimension = 8

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        raise AssertionError("the memory-off Agent embedded text")


async def setup_agent(
    base_url: str, stack: AsyncExitStack, *, synced: bool = True, mood: bool = True
) -> OneRun:
    """A turn of an Agent whose memory is off (no extraction, no memory tool): a Session
    opened for the exchange and closed after it (from an empty history, as every other
    variant starts), its journal under the Agent's temporary directory (``fsync="turn"``;
    ``synced=False``: no fsync of the journal nor of the memory's ledger; ``mood=False``:
    the Agent's mood off)."""
    from xai.agent import Agent, AgentConfig
    from xai.session import SessionConfig

    provider = await xai_provider(base_url, stack)
    directory = stack.enter_context(tempfile.TemporaryDirectory(prefix="xai-bench-agent-"))
    # Only what differs from the defaults is named: a baseline checkout may predate it.
    session_options: dict[str, Any] = {"extract_memory": False, "delegation": False}
    agent_options: dict[str, Any] = {"memory_tool": False}
    if not synced:
        session_options["fsync"] = "off"
        agent_options["sync_ledger"] = False
    if not mood:
        from xai.mood import MoodConfig

        agent_options["mood"] = MoodConfig(enabled=False)
    config = AgentConfig(session=SessionConfig(**session_options), **agent_options)
    agent = await stack.enter_async_context(
        Agent(directory, provider, tools=[lookup], embedder=_NoEmbedder(), config=config)
    )

    async def one_run() -> None:
        session = await agent.open_session()
        outcome = await session.send(PROMPT)
        await session.close()
        if outcome.text != FINAL_TEXT:
            raise AssertionError(f"unexpected outcome: {outcome!r}")

    await one_run()
    return one_run


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


SETUPS: dict[Variant, Callable[[str, AsyncExitStack], Awaitable[OneRun]]] = {
    "sdk": setup_sdk,
    "floor": setup_floor,
    "xai": setup_xai,
    "session_once": setup_session_once,
    "agent": setup_agent,
    "agent_unsynced": functools.partial(setup_agent, synced=False),
    "agent_moodless": functools.partial(setup_agent, mood=False),
}


# -- the worker: a child process that runs blocks of exchanges on request --------------------


class Block(msgspec.Struct, frozen=True, kw_only=True):
    """What a worker reports for one block: ``runs`` exchanges of one variant."""

    variant: str
    runs: int
    cpu_s: float
    wall_s: float
    system_s: float = 0.0
    """The part of ``cpu_s`` spent in the kernel (``getrusage``): an fsync's, a file's creation."""


async def serve(base_url: str, variants: Sequence[Variant], warmup: int) -> None:
    """Set every variant up (each checks its first exchange), warm each up, say ``ready``,
    then answer every ``run VARIANT N`` line on stdin with one ``Block`` line; ``stop``
    ends it, once it has checked the tool ran once per exchange."""
    async with AsyncExitStack() as stack:
        runs: dict[Variant, OneRun] = {}
        for variant in variants:
            runs[variant] = await SETUPS[variant](base_url, stack)
            for _ in range(warmup):
                await runs[variant]()
        gc.collect()
        calls0, measured = lookup_calls(), 0
        print("ready", flush=True)
        while True:
            words = (await anyio.to_thread.run_sync(sys.stdin.readline)).split()
            if len(words) != 3 or words[0] != "run":
                break
            one_run, count = runs[words[1]], int(words[2])
            cpu0, wall0, system0 = time.process_time(), time.perf_counter(), _system_s()
            for _ in range(count):
                await one_run()
            cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
            system = _system_s() - system0
            measured += count
            block = Block(variant=words[1], runs=count, cpu_s=cpu, wall_s=wall, system_s=system)
            print(msgspec.json.encode(block).decode(), flush=True)
        if lookup_calls() - calls0 != measured:
            raise AssertionError(
                f"the tool ran {lookup_calls() - calls0} times in {measured} exchanges"
            )


def _system_s() -> float:
    """This process's CPU seconds in the kernel so far (every thread's)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_stime


WORKER_TIMEOUT = 300.0
"""Longest a worker may take to set up and warm up, or to run one block."""


class Worker(LineChild):
    """A child process serving blocks of exchanges (``serve``), from this checkout or another."""

    def __init__(
        self, label: str, base_url: str, variants: Sequence[Variant], warmup: int, tree: str | None
    ) -> None:
        self.label = label
        env = None
        if tree is not None:
            # The other checkout's xai first on the path; this file and _common stay ours.
            env = {
                **os.environ,
                "PYTHONPATH": os.pathsep.join([tree, os.environ.get("PYTHONPATH", "")]),
            }
        args = ["--worker", ",".join(variants), "--base-url", base_url, "--warmup", str(warmup)]
        argv = [str(Path(__file__).resolve()), *args]
        super().__init__(f"{label} worker", argv, timeout=WORKER_TIMEOUT, env=env)

    def run(self, variant: Variant, runs: int) -> Block:
        return self.ask(f"run {variant} {runs}", Block)

    def stop(self) -> None:
        super().stop()
        self.close()


# -- orchestrating, in the parent ------------------------------------------------------------

Unit = tuple[str, Variant]
"""A worker's label (``new``, or a baseline's) and one of its variants."""

RATIOS: tuple[tuple[str, Unit, Unit], ...] = (
    ("xai_vs_sdk", ("new", "xai"), ("new", "sdk")),
    ("xai_vs_floor", ("new", "xai"), ("new", "floor")),
    ("floor_vs_sdk", ("new", "floor"), ("new", "sdk")),
    ("session_once_vs_xai", ("new", "session_once"), ("new", "xai")),
    ("agent_vs_sdk", ("new", "agent"), ("new", "sdk")),
    ("agent_vs_xai", ("new", "agent"), ("new", "xai")),
    ("agent_unsynced_vs_xai", ("new", "agent_unsynced"), ("new", "xai")),
    ("agent_moodless_vs_xai", ("new", "agent_moodless"), ("new", "xai")),
)
"""The ratios of units in the same worker (``new``), each against its baseline unit."""


def blocks_per_round(plan: Plan) -> int:
    return max(1, -(-plan.runs // BLOCK_RUNS))


def parent(
    plan: Plan,
    repeats: int,
    check_goal: bool,
    baselines: Sequence[tuple[str, str]] = (),
    variants: Sequence[Variant] = VARIANTS,
) -> int:
    """Rounds of fresh workers; in each, blocks of ``BLOCK_RUNS`` exchanges of every unit in
    turn (the order alternating), so load that comes and goes weighs on every unit alike.
    A ratio is taken per block (the two units ran within the same second or so) and the
    figure is the median of those: a garbage collection or a burst of other work that hits
    one block moves one ratio of many, not the figure."""
    signal.signal(signal.SIGTERM, exit_on_sigterm)
    server = Server(build_script())
    old_variants = [v for v in variants if v in BASELINE_VARIANTS]
    units: list[Unit] = [("new", v) for v in variants]
    units += [(label, v) for label, _ in baselines for v in old_variants]
    cpu: dict[Unit, list[float]] = {u: [] for u in units}  # ms per exchange, per block
    system: dict[Unit, list[float]] = {u: [] for u in units}  # the kernel's part of it
    rounds: list[dict[Unit, list[float]]] = []
    blocks = blocks_per_round(plan)
    try:
        base_url = server.start()
        print(f"server: {base_url} (a separate process; only client CPU is measured)")
        print(
            f"exchange: 1 tool call in {ARGUMENT_CHUNK_CHARS}-char argument deltas, then "
            f"{TEXT_CHUNKS} text chunks, over 2 streamed requests; {repeats} rounds of fresh "
            f"workers, each {plan.warmup} warm-up exchanges per variant, then {blocks} blocks "
            f"of {BLOCK_RUNS} exchanges per unit, interleaved"
        )
        for label, tree in baselines:
            print(f"baseline {label}: xai from {tree} ({', '.join(old_variants)})")
        for round_ in range(repeats):
            workers = {"new": Worker("new", base_url, variants, plan.warmup, None)}
            for label, tree in baselines:
                workers[label] = Worker(label, base_url, old_variants, plan.warmup, tree)
            this_round: dict[Unit, list[float]] = {u: [] for u in units}
            try:
                for worker in workers.values():
                    worker.ready()
                started = time.perf_counter()
                for block in range(blocks):
                    order = units if block % 2 == 0 else units[::-1]
                    for unit in order:
                        figures = workers[unit[0]].run(unit[1], BLOCK_RUNS)
                        this_round[unit].append(figures.cpu_s * 1000 / figures.runs)
                        system[unit].append(figures.system_s * 1000 / figures.runs)
                    if block >= 1 and time.perf_counter() - started > plan.max_seconds * len(units):
                        break
                for worker in workers.values():
                    worker.stop()
            finally:
                for worker in workers.values():
                    worker.close()
            rounds.append(this_round)
            for unit in units:
                cpu[unit].extend(this_round[unit])
            print(
                f"  round {round_ + 1}: "
                + ", ".join(
                    f"{label}:{v} {statistics.median(this_round[(label, v)]):.3f}"
                    for label, v in units
                )
                + f" ms CPU/exchange (median of {len(this_round[units[0]])} blocks)"
            )
    finally:
        server.stop()

    pairs = [(name, a, b) for name, a, b in RATIOS if a in cpu and b in cpu]
    pairs += [
        (f"{v}_vs_{label}", ("new", v), (label, v)) for label, _ in baselines for v in old_variants
    ]
    summary: dict[str, object] = {}
    for label, v in units:
        key = v if label == "new" else f"{label}_{v}"
        summary[f"{key}_cpu_ms_per_run"] = round(statistics.median(cpu[(label, v)]), 4)
        summary[f"{key}_system_ms_per_run"] = round(statistics.median(system[(label, v)]), 4)
    met = True
    for name, a, b in pairs:
        ratio, per_round = paired_ratio(cpu[a], cpu[b]), [paired_ratio(r[a], r[b]) for r in rounds]
        goal = GOALS.get(name)
        verdict = ""
        if goal is not None:
            met = met and ratio <= goal
            verdict = f"; goal <= {goal}: {'met' if ratio <= goal else 'NOT met'}"
        spread = max(per_round) - min(per_round)
        low, high = median_ci([x / y for x, y in zip(cpu[a], cpu[b], strict=True)])
        print(
            f"{name}: {ratio:.3f} (per round: {', '.join(f'{r:.3f}' for r in per_round)}; "
            f"spread {spread:.3f}; 95% interval of the median {low:.3f}-{high:.3f}{verdict})"
        )
        summary[f"{name}_cpu_ratio"] = round(ratio, 4)
        summary[f"{name}_cpu_ratio_spread"] = round(spread, 4)
        summary[f"{name}_cpu_ratio_ci95"] = [round(low, 4), round(high, 4)]
    if baselines:  # the name earlier runs of this bench used, for the first baseline
        first = baselines[0][0]
        if f"xai_vs_{first}_cpu_ratio" in summary:
            summary["xai_vs_baseline_cpu_ratio"] = summary[f"xai_vs_{first}_cpu_ratio"]
    summary |= {
        "goal_max_cpu_ratio": GOAL_RATIO,
        "goal_max_floor_ratio": GOAL_FLOOR_RATIO,
        "goal_met": met,
        "block_runs": BLOCK_RUNS,
        "blocks": len(cpu[units[0]]),
        "warmup": plan.warmup,
        "repeats": repeats,
    }
    print(json.dumps(summary))
    return 1 if check_goal and not met else 0


def paired_ratio(a: Sequence[float], b: Sequence[float]) -> float:
    """The median over blocks of ``a``'s block against ``b``'s block of the same turn."""
    return statistics.median(x / y for x, y in zip(a, b, strict=True))


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
        repeats_help="rounds of fresh worker processes",
    )
    parser.add_argument(
        "--baseline",
        metavar="DIR",
        action="append",
        default=[],
        help="also run xai from the checkout in DIR, interleaved (repeatable)",
    )
    parser.add_argument(
        "--variants",
        default=",".join(VARIANTS),
        help=f"variants of this checkout to run (default {','.join(VARIANTS)})",
    )
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    plan = plan_from(parser, args)
    if args.worker is not None:
        if not args.base_url:
            parser.error("--worker needs --base-url")
        chosen = [v for v in args.worker.split(",") if v]
        anyio.run(serve, args.base_url, chosen, plan.warmup, backend="asyncio")
        return 0
    variants = [v for v in args.variants.split(",") if v]
    unknown = sorted(set(variants) - set(SETUPS))
    if unknown or "xai" not in variants:
        parser.error(f"--variants: unknown {unknown} (and xai is always run)")
    baselines: list[tuple[str, str]] = []
    for given in args.baseline:
        tree = Path(given).resolve()
        if not (tree / "xai" / "__init__.py").is_file():
            parser.error(f"--baseline {given}: no xai package there")
        label = "".join(c if c.isalnum() else "_" for c in tree.name) or "baseline"
        baselines.append((label, str(tree)))
    return parent(plan, args.repeats, args.check, baselines, variants)


if __name__ == "__main__":
    raise SystemExit(main())
