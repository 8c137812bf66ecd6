"""The Session's own cost: CPU per turn against a bare Query, memory per Session, event fan-out.

Everything runs against the in-process ``ScriptedProvider`` (no HTTP, no
server), so what is measured is xai's work alone. Three parts:

1. CPU per turn. The exchange: the model answers the input with one call of an
   async tool, the client runs it, and the model then answers with text in
   exactly 20 chunks. Variant ``query`` runs it with a bare
   ``Query(provider, tools=[tool]).run(history, input)``; variant ``session``
   with ``await session.send(input)`` on a ``Session`` (no directory, no memory
   extraction) watched by three observers: an ``events()`` iterator consumed by
   a task, a sync ``on()`` callback and an async ``on()`` callback. Both keep a
   growing history the same way, and both start a fresh history every
   ``--turns-per-session`` turns (the ``session`` variant by starting a new
   Session), so history growth is equal and bounded. Only the turns are timed
   (``time.process_time()``, until every observer has seen the last
   ``turn_done``); the Session's start and close are reported on their own.
   Variant ``bare_session`` is ``session`` without observers (to split the
   Session's cost from its observers'); ``journal_off`` and ``journal_turn``
   are ``session`` with a journal in a temporary directory
   (``SessionConfig(fsync="off")`` / ``"turn"``). Each variant runs in a child process of its own; the variants alternate
   for ``--repeats`` rounds and the medians are compared with the ``query``
   baseline of the same invocation. Goal: session/query <= 1.15.
2. Memory. ``--idle`` Sessions are started in one task group and left idle;
   tracemalloc's difference over them, divided by their number, is the cost of
   one idle Session, its tasks included (goal <= 16 KiB). Then ``--crowd``
   Sessions share one provider, each sends one input, and all the turns run
   concurrently: wall time, turns per second and peak RSS (a child without
   tracemalloc), and tracemalloc's peak (a second child, with it).
3. Event fan-out. One Session with the three observers streams replies of
   2,000 one-character chunks; events per second each observer received, with
   buffers big enough that none is dropped; then again with a fourth, slow
   observer (buffer 100, 1 ms per event): how much it missed, and whether the
   Session slowed down for it. (The scripted provider never yields inside a
   stream, so a whole turn's events arrive before any observer runs: the
   buffers of the fast observers must hold one turn.)

    python bench/sessions.py            # the default run (about 50 s on 2 cores)
    python bench/sessions.py --quick    # fewer turns and Sessions
    python bench/sessions.py --check    # exit 1 if a goal (CPU ratio, idle bytes) is not met

The last line of output is one JSON object with the figures.
"""

from __future__ import annotations

import argparse
import gc
import json
import resource
import shutil
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time
import tracemalloc
from collections.abc import Sequence
from pathlib import Path
from typing import Literal, TypeVar

import anyio
import anyio.abc
import anyio.lowlevel
import msgspec

import xai
from xai.events import EventsDropped, SessionEvent, TurnDone
from xai.messages import Message, TurnOutcome, TurnStatus, UserMessage
from xai.providers import ProviderRequest
from xai.session import Session, SessionConfig
from xai.testing import Reply, Rule, Script, ScriptedCall, ScriptedProvider

CpuVariant = Literal["query", "bare_session", "session", "journal_off", "journal_turn"]
CPU_VARIANTS: tuple[CpuVariant, ...] = (
    "query",
    "bare_session",
    "session",
    "journal_off",
    "journal_turn",
)
Child = Literal[CpuVariant, "idle", "crowd", "events"]
CHILDREN: tuple[Child, ...] = (*CPU_VARIANTS, "idle", "crowd", "events")
Section = Literal["cpu", "memory", "crowd", "events"]
SECTIONS: tuple[Section, ...] = ("cpu", "memory", "crowd", "events")

PROMPT = "What will the weather be in Reykjavik over the next three days?"
TOOL_NAME = "lookup"
TOOL_ARGUMENTS = {"city": "Reykjavik", "unit": "celsius", "days": 3, "detail": True}
TEXT_CHUNKS = 20
_SENTENCE = "Reykjavik stays cool and breezy: light rain on day one, clearing skies after. "
FINAL_TEXT = (_SENTENCE * 4)[: TEXT_CHUNKS * 12]
"""240 characters, so ``text_chunks=20`` cuts it into exactly 20 pieces of 12."""
STREAM_CHUNKS = 2_000
"""Text chunks of one reply in the fan-out part (one character each)."""

GOAL_CPU_RATIO = 1.15
GOAL_IDLE_BYTES = 16 * 1024
OBSERVER_BUFFER = 10 * STREAM_CHUNKS
"""Big enough for a whole turn: the scripted provider never yields inside a stream."""
SLOW_BUFFER = 100
SLOW_DELAY = 0.001
CATCH_UP_SECONDS = 30.0

T = TypeVar("T", bound=msgspec.Struct)


class Plan(msgspec.Struct, frozen=True, kw_only=True):
    """What one child runs (passed as JSON on its command line)."""

    turns: int = 2_000
    warmup: int = 100
    turns_per_session: int = 10
    max_seconds: float = 12.0
    """Wall-time cap of a CPU variant's measured turns (at least ``min_turns`` run anyway)."""
    min_turns: int = 100
    idle: int = 1_000
    crowd: int = 10_000
    traced: bool = False
    """The crowd child: run under tracemalloc (peak traced memory) instead of timing."""
    event_turns: int = 20


class CpuFigures(msgspec.Struct, frozen=True, kw_only=True):
    variant: str
    turns: int
    cpu_ms_per_turn: float
    wall_ms_per_turn: float
    sessions: int = 0
    lifecycle_cpu_ms: float = 0.0
    """CPU of starting a Session with its observers, and closing it (per Session)."""
    events_per_turn: float = 0.0
    """Events each observer received per turn (every observer gets the same)."""


class Allocation(msgspec.Struct, frozen=True):
    where: str
    bytes_per_session: float
    blocks_per_session: float


class IdleFigures(msgspec.Struct, frozen=True, kw_only=True):
    sessions: int
    object_bytes: float
    """Per Session constructed but not started."""
    idle_bytes: float
    """Per Session started and idle (tasks included)."""
    gc_objects: float
    """Objects the garbage collector tracks, per idle Session (what each collection walks)."""
    top: list[Allocation]


class CrowdFigures(msgspec.Struct, frozen=True, kw_only=True):
    sessions: int
    traced: bool
    start_s: float
    turns_s: float
    close_s: float
    cpu_s: float
    baseline_rss_kib: int
    peak_rss_kib: int
    traced_peak_bytes: int = 0


class ObserverCount(msgspec.Struct, frozen=True, kw_only=True):
    name: str
    events: int
    """Events received, gap markers (``EventsDropped``) not counted."""
    dropped: int
    """Events reported lost by ``EventsDropped``."""
    gaps: int
    """``EventsDropped`` notices received."""


class EventRun(msgspec.Struct, frozen=True, kw_only=True):
    turns: int
    wall_s: float
    """From the first input until every fast observer had the last ``turn_done``."""
    cpu_s: float
    published: int
    """Events the Session published during the turns."""
    observers: list[ObserverCount]


class EventFigures(msgspec.Struct, frozen=True, kw_only=True):
    fast: EventRun
    with_slow: EventRun
    slow_total_published: int
    """Everything the Session published, its close included (what the slow observer could get)."""
    slow_during_turns: int
    """Events the slow observer had received when the fast ones had the last ``turn_done``."""


# -- the exchange ---------------------------------------------------------------------------

_tool_calls = 0


async def lookup(city: str, unit: str, days: int, detail: bool) -> str:
    """Look up the weather forecast for a city.

    Args:
        city: Name of the city.
        unit: Temperature unit, "celsius" or "fahrenheit".
        days: How many days ahead.
        detail: Whether to include hourly detail.
    """
    global _tool_calls
    _tool_calls += 1
    level = "hourly" if detail else "daily"
    return f"{city}: {days} days, {level} forecast in {unit}: 6, 8, 7"


TOOLS = xai.ToolSet([lookup])
"""Built once and shared, as an application would."""


class _Forgetful(list[ProviderRequest]):
    """Drops what ``ScriptedProvider.requests`` would keep for a test to inspect.

    Every request of thousands of turns, kept: memory and garbage-collector work
    that is the test double's, not the Session's.
    """

    def append(self, item: ProviderRequest, /) -> None:
        return None


def exchange_provider() -> ScriptedProvider:
    """One tool call, then the text in 20 chunks; rules, so it never runs out."""
    provider = ScriptedProvider(
        Script(
            rules=[
                Rule(
                    last_role="user",
                    reply=Reply(
                        tool_calls=(ScriptedCall(name=TOOL_NAME, arguments=TOOL_ARGUMENTS),)
                    ),
                ),
                Rule(last_role="tool", reply=Reply(text=FINAL_TEXT, text_chunks=TEXT_CHUNKS)),
            ]
        )
    )
    provider.requests = _Forgetful()
    return provider


def stream_provider() -> ScriptedProvider:
    provider = ScriptedProvider(Script(default=Reply(text="x" * STREAM_CHUNKS, chunk_chars=1)))
    provider.requests = _Forgetful()
    return provider


def check_outcome(outcome: TurnOutcome, text: str = FINAL_TEXT) -> None:
    if outcome.status is not TurnStatus.COMPLETED or outcome.text != text:
        raise AssertionError(f"unexpected turn outcome: {outcome!r}")


def check_result(result: xai.QueryResult) -> None:
    if result.error is not None or result.stop_reason != "end_turn" or result.rounds != 2:
        raise AssertionError(f"unexpected query result: {result!r}")
    if result.text != FINAL_TEXT:
        raise AssertionError(f"unexpected final text: {result.text!r}")


# -- observers -------------------------------------------------------------------------------


class Tally:
    """One observer's count of what it received."""

    __slots__ = ("delay", "dropped", "events", "gaps", "name", "turns_done")

    def __init__(self, name: str, delay: float = 0.0) -> None:
        self.name = name
        self.delay = delay
        self.events = 0
        self.dropped = 0
        self.gaps = 0
        self.turns_done = 0

    def see(self, item: SessionEvent) -> None:
        body = item.event
        if type(body) is EventsDropped:
            self.dropped += body.count
            self.gaps += 1
            return
        self.events += 1
        if type(body) is TurnDone:
            self.turns_done += 1

    async def see_async(self, item: SessionEvent) -> None:
        self.see(item)
        if self.delay:
            await anyio.sleep(self.delay)

    def figures(self) -> ObserverCount:
        return ObserverCount(
            name=self.name, events=self.events, dropped=self.dropped, gaps=self.gaps
        )


async def _consume(subscription: xai.session.Subscription, tally: Tally) -> None:
    async for item in subscription:
        tally.see(item)


def watch(session: Session, group: anyio.abc.TaskGroup, buffer: int) -> list[Tally]:
    """The three observers: an ``events()`` iterator, a sync and an async callback."""
    tallies = [Tally("events_iterator"), Tally("sync_callback"), Tally("async_callback")]
    group.start_soon(_consume, session.events(buffer=buffer), tallies[0])
    session.on(tallies[1].see, buffer=buffer)
    session.on(tallies[2].see_async, buffer=buffer)
    return tallies


async def caught_up(tallies: Sequence[Tally], turns: int) -> None:
    """Until every observer has seen the ``turn_done`` of turn ``turns``."""
    deadline = time.perf_counter() + CATCH_UP_SECONDS
    while any(t.turns_done < turns for t in tallies):
        if time.perf_counter() > deadline:
            counts = {t.name: t.turns_done for t in tallies}
            raise AssertionError(f"observers did not catch up with {turns} turns: {counts}")
        await anyio.lowlevel.checkpoint()


# -- part 1: CPU per turn, in a child ----------------------------------------------------------


class _Totals:
    __slots__ = ("cpu", "events", "lifecycle", "sessions", "turns", "wall")

    def __init__(self) -> None:
        self.cpu = self.wall = self.lifecycle = 0.0
        self.turns = self.sessions = self.events = 0


async def query_block(query: xai.Query, turns: int, totals: _Totals) -> None:
    history: list[Message] = []
    cpu0, wall0 = time.process_time(), time.perf_counter()
    for _ in range(turns):
        message = UserMessage(content=PROMPT)
        result = await query.run(history, message)
        if result.text != FINAL_TEXT or result.rounds != 2:
            check_result(result)
        history.append(message)
        history.extend(result.messages)
    totals.cpu += time.process_time() - cpu0
    totals.wall += time.perf_counter() - wall0
    totals.turns += turns


async def session_block(
    provider: ScriptedProvider,
    turns: int,
    totals: _Totals,
    config: SessionConfig,
    directory: Path | None,
    observed: bool,
) -> None:
    cpu0 = time.process_time()
    async with anyio.create_task_group() as group:
        session = Session(provider, tools=TOOLS, config=config, directory=directory)
        await group.start(session.run)
        tallies = watch(session, group, config.event_buffer) if observed else []
        cpu1, wall1 = time.process_time(), time.perf_counter()
        for _ in range(turns):
            outcome = await session.send(PROMPT)
            if outcome.status is not TurnStatus.COMPLETED or outcome.text != FINAL_TEXT:
                check_outcome(outcome)
        await caught_up(tallies, turns)
        cpu2, wall2 = time.process_time(), time.perf_counter()
        await session.close()
    cpu3 = time.process_time()
    counts = {(t.events, t.dropped) for t in tallies}
    if len(counts) > 1 or any(t.dropped for t in tallies):
        raise AssertionError(f"the observers disagree: {[t.figures() for t in tallies]}")
    totals.cpu += cpu2 - cpu1
    totals.wall += wall2 - wall1
    totals.lifecycle += (cpu1 - cpu0) + (cpu3 - cpu2)
    totals.turns += turns
    totals.sessions += 1
    if tallies:  # ``finalizing`` and ``closed`` are no turn's events
        totals.events += tallies[0].events - 2


async def run_cpu(variant: CpuVariant, plan: Plan) -> CpuFigures:
    provider = exchange_provider()
    query = xai.Query(provider, tools=TOOLS)
    workdir = Path(tempfile.mkdtemp(prefix="xai-bench-sessions-"))
    fsync: Literal["off", "turn"] = "turn" if variant == "journal_turn" else "off"
    config = SessionConfig(fsync=fsync, event_buffer=1_000)
    blocks = 0

    async def block(turns: int, totals: _Totals) -> None:
        nonlocal blocks
        blocks += 1
        if variant == "query":
            await query_block(query, turns, totals)
        else:
            directory = workdir / f"s{blocks}" if variant.startswith("journal") else None
            observed = variant != "bare_session"
            await session_block(provider, turns, totals, config, directory, observed)

    try:
        warm = _Totals()
        while warm.turns < plan.warmup:
            await block(min(plan.turns_per_session, plan.warmup - warm.turns), warm)
        gc.collect()
        totals = _Totals()
        calls0 = _tool_calls
        deadline = time.perf_counter() + plan.max_seconds
        while totals.turns < plan.turns:
            await block(min(plan.turns_per_session, plan.turns - totals.turns), totals)
            if totals.turns >= plan.min_turns and time.perf_counter() > deadline:
                break
        if _tool_calls - calls0 != totals.turns:
            raise AssertionError(f"the tool ran {_tool_calls - calls0} times in {totals.turns}")
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    return CpuFigures(
        variant=variant,
        turns=totals.turns,
        cpu_ms_per_turn=totals.cpu * 1000 / totals.turns,
        wall_ms_per_turn=totals.wall * 1000 / totals.turns,
        sessions=totals.sessions,
        lifecycle_cpu_ms=totals.lifecycle * 1000 / totals.sessions if totals.sessions else 0.0,
        events_per_turn=totals.events / totals.turns if totals.sessions else 0.0,
    )


# -- part 2: memory, in a child ----------------------------------------------------------------


_ROOTS = (
    *(sysconfig.get_paths()[key] + "/" for key in ("purelib", "platlib", "stdlib")),
    str(Path(__file__).resolve().parents[1]) + "/",
)


def _where(trace: tracemalloc.StatisticDiff) -> str:
    """``file:line`` of an allocation, relative to the repository, site-packages or stdlib."""
    frame = trace.traceback[0]
    filename = frame.filename
    for root in _ROOTS:
        if filename.startswith(root):
            filename = filename[len(root) :]
            break
    return f"{filename}:{frame.lineno}"


async def run_idle(plan: Plan) -> IdleFigures:
    provider = exchange_provider()
    # Warm up: the first Sessions pay for lazy imports and caches.
    async with anyio.create_task_group() as group:
        for _ in range(10):
            session = Session(provider, tools=TOOLS)
            await group.start(session.run)
            check_outcome(await session.send(PROMPT))
            await session.close()
    gc.collect()
    objects = len(gc.get_objects())
    tracemalloc.start()
    before = tracemalloc.take_snapshot()
    base = tracemalloc.get_traced_memory()[0]
    sessions = [Session(provider, tools=TOOLS) for _ in range(plan.idle)]
    gc.collect()
    constructed = tracemalloc.get_traced_memory()[0]
    async with anyio.create_task_group() as group:
        for session in sessions:
            await group.start(session.run)
        for _ in range(5):  # let every Session's task settle into its mailbox wait
            await anyio.lowlevel.checkpoint()
        gc.collect()
        idle = tracemalloc.get_traced_memory()[0]
        after = tracemalloc.take_snapshot()
        objects = len(gc.get_objects()) - objects
        if any(s.state != "running" or s.busy for s in sessions):
            raise AssertionError("a Session is not idle")
        for session in sessions:
            group.start_soon(session.close)
    tracemalloc.stop()
    n = plan.idle
    filters = [tracemalloc.Filter(False, tracemalloc.__file__)]
    diffs = after.filter_traces(filters).compare_to(before.filter_traces(filters), "lineno")
    top = [
        Allocation(_where(d), d.size_diff / n, d.count_diff / n)
        for d in sorted(diffs, key=lambda d: d.size_diff, reverse=True)[:15]
        if d.size_diff > 0
    ]
    return IdleFigures(
        sessions=n,
        object_bytes=(constructed - base) / n,
        idle_bytes=(idle - base) / n,
        gc_objects=objects / n,
        top=top,
    )


async def run_crowd(plan: Plan) -> CrowdFigures:
    provider = exchange_provider()
    async with anyio.create_task_group() as group:  # warm up
        session = Session(provider, tools=TOOLS)
        await group.start(session.run)
        check_outcome(await session.send(PROMPT))
        await session.close()
    gc.collect()
    baseline_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    if plan.traced:
        tracemalloc.start()
    traced0 = tracemalloc.get_traced_memory()[0] if plan.traced else 0
    calls0 = _tool_calls
    cpu0 = time.process_time()
    t0 = time.perf_counter()
    async with anyio.create_task_group() as group:
        sessions = [Session(provider, tools=TOOLS) for _ in range(plan.crowd)]
        for session in sessions:
            await group.start(session.run)
        t1 = time.perf_counter()
        handles = [session.send(PROMPT) for session in sessions]
        outcomes = [await handle for handle in handles]
        t2 = time.perf_counter()
        async with anyio.create_task_group() as closing:
            for session in sessions:
                closing.start_soon(session.close)
    t3 = time.perf_counter()
    cpu = time.process_time() - cpu0
    traced_peak = tracemalloc.get_traced_memory()[1] - traced0 if plan.traced else 0
    tracemalloc.stop()
    for outcome in outcomes:
        check_outcome(outcome)
    if _tool_calls - calls0 != plan.crowd or any(s.state != "closed" for s in sessions):
        raise AssertionError("not every Session ran its tool once and closed")
    return CrowdFigures(
        sessions=plan.crowd,
        traced=plan.traced,
        start_s=t1 - t0,
        turns_s=t2 - t1,
        close_s=t3 - t2,
        cpu_s=cpu,
        baseline_rss_kib=baseline_rss,
        peak_rss_kib=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
        traced_peak_bytes=traced_peak,
    )


# -- part 3: event fan-out, in a child ------------------------------------------------------------


async def event_run(turns: int, slow: bool) -> tuple[EventRun, int, int]:
    provider = stream_provider()
    text = "x" * STREAM_CHUNKS
    async with anyio.create_task_group() as group:
        session = Session(provider, config=SessionConfig(fsync="off"))
        await group.start(session.run)
        tallies = watch(session, group, OBSERVER_BUFFER)
        slow_tally = Tally("slow_callback", delay=SLOW_DELAY)
        if slow:
            session.on(slow_tally.see_async, buffer=SLOW_BUFFER)
        seq0 = session._hub.seq
        cpu0, t0 = time.process_time(), time.perf_counter()
        for _ in range(turns):
            check_outcome(await session.send(PROMPT), text)
        await caught_up(tallies, turns)
        cpu, wall = time.process_time() - cpu0, time.perf_counter() - t0
        published = session._hub.seq - seq0
        slow_during_turns = slow_tally.events
        await session.close()
        total = session._hub.seq
    for tally in tallies:
        if tally.dropped or tally.events != total:
            raise AssertionError(f"{tally.name} got {tally.events} of {total} events")
    if slow and slow_tally.events + slow_tally.dropped != total:
        raise AssertionError(
            f"the slow observer's counts do not add up: {slow_tally.figures()} of {total}"
        )
    observers = [t.figures() for t in tallies]
    if slow:
        observers.append(slow_tally.figures())
    run = EventRun(turns=turns, wall_s=wall, cpu_s=cpu, published=published, observers=observers)
    return run, total, slow_during_turns


async def run_events(plan: Plan) -> EventFigures:
    await event_run(2, slow=False)  # warm up
    gc.collect()
    fast, _, _ = await event_run(plan.event_turns, slow=False)
    with_slow, total, during = await event_run(plan.event_turns, slow=True)
    return EventFigures(
        fast=fast, with_slow=with_slow, slow_total_published=total, slow_during_turns=during
    )


def child(kind: Child, plan: Plan) -> int:
    figures: msgspec.Struct
    if kind == "idle":
        figures = anyio.run(run_idle, plan, backend="asyncio")
    elif kind == "crowd":
        figures = anyio.run(run_crowd, plan, backend="asyncio")
    elif kind == "events":
        figures = anyio.run(run_events, plan, backend="asyncio")
    else:
        figures = anyio.run(run_cpu, kind, plan, backend="asyncio")
    print(msgspec.json.encode(figures).decode(), flush=True)
    return 0


# -- orchestrating, in the parent ---------------------------------------------------------------


def run_child(kind: Child, plan: Plan, type_: type[T]) -> T:
    command = [
        sys.executable,
        str(Path(__file__).resolve()),
        "--child",
        kind,
        "--plan",
        msgspec.json.encode(plan).decode(),
    ]
    done = subprocess.run(command, capture_output=True, text=True, timeout=600, check=False)
    lines = done.stdout.strip().splitlines()
    if done.returncode != 0 or not lines:
        sys.stderr.write(done.stderr)
        raise RuntimeError(f"the {kind} child failed (exit code {done.returncode})")
    return msgspec.json.decode(lines[-1], type=type_)


def _median(values: Sequence[float]) -> float:
    return statistics.median(values)


def cpu_part(plan: Plan, repeats: int, summary: dict[str, object]) -> bool:
    print(
        f"cpu: 1 async tool call then {TEXT_CHUNKS} text chunks per turn; per process "
        f"{plan.warmup} warm-up + {plan.turns} measured turns (capped at {plan.max_seconds:g}s), "
        f"a fresh history/Session every {plan.turns_per_session} turns; {repeats} rounds"
    )
    results: dict[CpuVariant, list[CpuFigures]] = {v: [] for v in CPU_VARIANTS}
    for round_ in range(repeats):
        order = CPU_VARIANTS if round_ % 2 == 0 else CPU_VARIANTS[::-1]
        for variant in order:
            figures = run_child(variant, plan, CpuFigures)
            results[variant].append(figures)
            print(
                f"  round {round_ + 1} {variant:>12}: {figures.cpu_ms_per_turn:.3f} ms CPU/turn, "
                f"{figures.wall_ms_per_turn:.3f} ms wall/turn ({figures.turns} turns)"
            )
    cpu = {v: _median([r.cpu_ms_per_turn for r in results[v]]) for v in CPU_VARIANTS}
    wall = {v: _median([r.wall_ms_per_turn for r in results[v]]) for v in CPU_VARIANTS}
    lifecycle = _median([r.lifecycle_cpu_ms for r in results["session"]])
    per_turn_events = _median([r.events_per_turn for r in results["session"]])
    for variant in CPU_VARIANTS:
        print(
            f"{variant:>12}: {cpu[variant]:.3f} ms CPU/turn, {wall[variant]:.3f} ms wall/turn "
            f"(median of {repeats}); x{cpu[variant] / cpu['query']:.3f} of query's CPU"
        )
    ratio = cpu["session"] / cpu["query"]
    per_round = [
        s.cpu_ms_per_turn / q.cpu_ms_per_turn
        for q, s in zip(results["query"], results["session"], strict=True)
    ]
    met = ratio <= GOAL_CPU_RATIO
    print(
        f"session/query CPU ratio: {ratio:.3f} (per round: "
        f"{', '.join(f'{r:.3f}' for r in per_round)}; goal <= {GOAL_CPU_RATIO}: "
        f"{'met' if met else 'NOT met'}); each observer got {per_turn_events:g} events/turn"
    )
    extra = cpu["session"] - cpu["query"]
    actor = cpu["bare_session"] - cpu["query"]
    print(
        f"the Session's extra {extra:.3f} ms/turn: {actor:.3f} the Session itself (no observers), "
        f"{extra - actor:.3f} the three observers; a journal adds "
        f"{cpu['journal_off'] - cpu['session']:.3f} (fsync off), "
        f"{cpu['journal_turn'] - cpu['session']:.3f} (fsync per turn)"
    )
    print(f"a Session's start (with its 3 observers) and close: {lifecycle:.3f} ms CPU")
    others = [v for v in CPU_VARIANTS if v != "query"]
    summary.update(
        {f"{v}_cpu_ms_per_turn": round(cpu[v], 4) for v in CPU_VARIANTS}
        | {f"{v}_wall_ms_per_turn": round(wall[v], 4) for v in CPU_VARIANTS}
        | {f"{v}_vs_query_cpu_ratio": round(cpu[v] / cpu["query"], 4) for v in others}
        | {f"{v}_vs_query_wall_ratio": round(wall[v] / wall["query"], 4) for v in others}
        | {
            "journal_off_vs_session_cpu_ratio": round(cpu["journal_off"] / cpu["session"], 4),
            "session_lifecycle_cpu_ms": round(lifecycle, 4),
            "observer_events_per_turn": per_turn_events,
            "goal_max_cpu_ratio": GOAL_CPU_RATIO,
            "cpu_goal_met": met,
            "turns": plan.turns,
            "turns_measured_min": min(r.turns for rs in results.values() for r in rs),
            "turns_per_session": plan.turns_per_session,
            "repeats": repeats,
        }
    )
    return met


def memory_part(plan: Plan, summary: dict[str, object]) -> bool:
    figures = run_child("idle", plan, IdleFigures)
    met = figures.idle_bytes <= GOAL_IDLE_BYTES
    print(
        f"memory: {figures.sessions} idle Sessions (no directory, no observers): "
        f"{figures.idle_bytes / 1024:.2f} KiB each, tasks included "
        f"({figures.object_bytes / 1024:.2f} KiB before starting; "
        f"{figures.gc_objects:.0f} objects the GC tracks); goal <= "
        f"{GOAL_IDLE_BYTES // 1024} KiB: {'met' if met else 'NOT met'}"
    )
    print("  largest allocations per idle Session (tracemalloc, by line):")
    for item in figures.top[:10]:
        print(
            f"    {item.bytes_per_session:8.0f} B  {item.blocks_per_session:5.1f} blocks  "
            f"{item.where}"
        )
    summary.update(
        {
            "idle_sessions": figures.sessions,
            "idle_session_bytes": round(figures.idle_bytes),
            "idle_session_object_bytes": round(figures.object_bytes),
            "idle_session_gc_objects": round(figures.gc_objects, 1),
            "goal_max_idle_bytes": GOAL_IDLE_BYTES,
            "idle_goal_met": met,
        }
    )
    return met


def crowd_part(plan: Plan, summary: dict[str, object]) -> None:
    timed = run_child("crowd", msgspec.structs.replace(plan, traced=False), CrowdFigures)
    traced = run_child("crowd", msgspec.structs.replace(plan, traced=True), CrowdFigures)
    n = timed.sessions
    wall = timed.start_s + timed.turns_s + timed.close_s
    growth_kib = timed.peak_rss_kib - timed.baseline_rss_kib
    print(
        f"crowd: {n} concurrent Sessions on one ScriptedProvider, one turn each (all completed): "
        f"start {timed.start_s:.2f}s, turns {timed.turns_s:.2f}s "
        f"({n / timed.turns_s:.0f} turns/s), close {timed.close_s:.2f}s; "
        f"{wall:.2f}s wall, {timed.cpu_s:.2f}s CPU in all"
    )
    print(
        f"  peak RSS {timed.peak_rss_kib / 1024:.1f} MiB ({growth_kib / 1024:.1f} MiB above the "
        f"{timed.baseline_rss_kib / 1024:.1f} MiB before, {growth_kib / n:.2f} KiB/Session); "
        f"tracemalloc peak {traced.traced_peak_bytes / 2**20:.1f} MiB "
        f"({traced.traced_peak_bytes / n / 1024:.2f} KiB/Session; that run took "
        f"{traced.start_s + traced.turns_s + traced.close_s:.2f}s)"
    )
    summary.update(
        {
            "crowd_sessions": n,
            "crowd_all_completed": True,
            "crowd_wall_s": round(wall, 3),
            "crowd_start_s": round(timed.start_s, 3),
            "crowd_turns_s": round(timed.turns_s, 3),
            "crowd_close_s": round(timed.close_s, 3),
            "crowd_cpu_s": round(timed.cpu_s, 3),
            "crowd_turns_per_second": round(n / timed.turns_s, 1),
            "crowd_peak_rss_mib": round(timed.peak_rss_kib / 1024, 2),
            "crowd_rss_growth_mib": round(growth_kib / 1024, 2),
            "crowd_rss_kib_per_session": round(growth_kib / n, 3),
            "crowd_traced_peak_mib": round(traced.traced_peak_bytes / 2**20, 2),
            "crowd_traced_peak_kib_per_session": round(traced.traced_peak_bytes / n / 1024, 3),
        }
    )


def events_part(plan: Plan, summary: dict[str, object]) -> None:
    figures = run_child("events", plan, EventFigures)
    fast, with_slow = figures.fast, figures.with_slow
    # Every fast observer got every event (the child checks): one rate stands for all three.
    rate = fast.published / fast.wall_s
    print(
        f"events: {fast.turns} turns of {STREAM_CHUNKS} one-character chunks "
        f"({fast.published / fast.turns:g} events/turn), 3 observers ("
        + ", ".join(o.name for o in fast.observers)
        + f"; buffer {OBSERVER_BUFFER}): {rate:,.0f} events/s to each "
        f"({3 * rate:,.0f} deliveries/s; {fast.cpu_s * 1e6 / fast.published:.2f} us CPU/event "
        "in all), none dropped"
    )
    slow = with_slow.observers[-1]
    slowdown = with_slow.wall_s / fast.wall_s
    print(
        f"  with a 4th, slow observer (buffer {SLOW_BUFFER}, {SLOW_DELAY * 1000:g} ms/event): it "
        f"got {slow.events} of {figures.slow_total_published} events "
        f"({figures.slow_during_turns} while the turns ran, the rest after they ended) and "
        f"missed {slow.dropped}, reported in {slow.gaps} events_dropped notices; the fast three "
        f"dropped none; the turns took x{slowdown:.3f} the time they took without it"
    )
    summary.update(
        {
            "events_per_second_per_observer": round(rate),
            "event_deliveries_per_second": round(3 * rate),
            "event_cpu_us_per_event": round(fast.cpu_s * 1e6 / fast.published, 3),
            "events_per_stream_turn": fast.published / fast.turns,
            "event_turns": fast.turns,
            "events_dropped_fast_observers": 0,
            "slow_observer_published": figures.slow_total_published,
            "slow_observer_received": slow.events,
            "slow_observer_received_during_turns": figures.slow_during_turns,
            "slow_observer_missed": slow.dropped,
            "slow_observer_gap_notices": slow.gaps,
            "slow_observer_session_wall_ratio": round(slowdown, 4),
        }
    )


def parent(plan: Plan, repeats: int, sections: Sequence[Section], check_goal: bool) -> int:
    summary: dict[str, object] = {}
    met = True
    if "cpu" in sections:
        met = cpu_part(plan, repeats, summary) and met
    if "memory" in sections:
        met = memory_part(plan, summary) and met
    if "crowd" in sections:
        crowd_part(plan, summary)
    if "events" in sections:
        events_part(plan, summary)
    summary["goal_met"] = met
    print(json.dumps(summary))
    return 1 if check_goal and not met else 0


QUICK = Plan(turns=300, warmup=50, min_turns=50, idle=500, crowd=2_000, event_turns=5)


def main(argv: Sequence[str] | None = None) -> int:
    default = Plan()
    parser = argparse.ArgumentParser(
        description="A Session's CPU per turn against a bare Query, its memory, its event fan-out."
    )
    parser.add_argument("--quick", action="store_true", help="fewer turns and Sessions")
    parser.add_argument("--turns", type=int, help=f"measured turns per process ({default.turns})")
    parser.add_argument("--warmup", type=int, help=f"warm-up turns per process ({default.warmup})")
    parser.add_argument(
        "--turns-per-session",
        type=int,
        default=default.turns_per_session,
        help="turns before a fresh Session (and a fresh history for the Query)",
    )
    parser.add_argument("--repeats", type=int, default=3, help="rounds of the CPU variants")
    parser.add_argument(
        "--max-seconds",
        type=float,
        default=default.max_seconds,
        help="wall-time cap of one CPU process's measured turns",
    )
    parser.add_argument("--idle", type=int, help=f"idle Sessions measured ({default.idle})")
    parser.add_argument("--crowd", type=int, help=f"concurrent Sessions ({default.crowd})")
    parser.add_argument(
        "--event-turns", type=int, help=f"turns of the fan-out part ({default.event_turns})"
    )
    parser.add_argument(
        "--only",
        help=f"comma-separated parts to run (of {', '.join(SECTIONS)}; default: all)",
    )
    parser.add_argument("--check", action="store_true", help="exit 1 if a goal is not met")
    parser.add_argument("--child", choices=CHILDREN, help=argparse.SUPPRESS)
    parser.add_argument("--plan", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child is not None:
        if not args.plan:
            parser.error("--child needs --plan")
        return child(args.child, msgspec.json.decode(args.plan, type=Plan))
    base = QUICK if args.quick else default
    plan = msgspec.structs.replace(
        base,
        turns=args.turns if args.turns is not None else base.turns,
        warmup=args.warmup if args.warmup is not None else base.warmup,
        turns_per_session=args.turns_per_session,
        max_seconds=args.max_seconds,
        idle=args.idle if args.idle is not None else base.idle,
        crowd=args.crowd if args.crowd is not None else base.crowd,
        event_turns=args.event_turns if args.event_turns is not None else base.event_turns,
    )
    plan = msgspec.structs.replace(plan, min_turns=min(plan.min_turns, plan.turns))
    sections: list[Section] = []
    for name in (args.only or ",".join(SECTIONS)).split(","):
        section = next((s for s in SECTIONS if s == name.strip()), None)
        if section is None:
            parser.error(f"unknown part {name!r} (choose from {', '.join(SECTIONS)})")
        sections.append(section)
    if (
        min(plan.turns, plan.turns_per_session, args.repeats, plan.idle, plan.crowd) < 1
        or plan.event_turns < 1
        or plan.warmup < 0
        or plan.max_seconds <= 0
    ):
        parser.error("counts must be >= 1, --warmup >= 0, --max-seconds > 0")
    return parent(plan, args.repeats, sections, args.check)


if __name__ == "__main__":
    raise SystemExit(main())
