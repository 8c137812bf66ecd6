"""The Session's own cost: CPU per turn against a bare Query, memory per Session, event fan-out.

Four parts, each run in child processes of its own:

1. CPU per turn over HTTP: the goal's figure. The exchange of
   ``bench/overhead.py``: xai's ``OpenAIProvider`` (the ``openai`` client)
   talks to the project's OpenAI-wire test server (``python -m xai.testing
   serve --script FILE``), run as a separate process, so the CPU measured in a
   variant's process is the client's alone. The model answers the input with
   one call of an async tool whose arguments arrive in 8-character deltas, the
   client runs it, and the model then answers with text in exactly 20 chunks:
   two streamed requests per turn. Variant ``query`` runs it with a bare
   ``Query(provider, tools=[tool]).run(history, input)``; variant ``session``
   with ``await session.send(input)`` on a ``Session`` (no directory, no memory
   extraction) watched by three observers: an ``events()`` iterator consumed by
   a task, a sync ``on()`` callback and an async ``on()`` callback; variant
   ``bare_session`` is ``session`` without observers; variant ``session_once``
   opens a Session (``async with Session(...)``, no observers, no directory) for
   every turn and closes it after, start and close timed with the turn, as an
   application that opens a Session per request pays (goal: session_once/query
   <= 1.10, key ``session_once_vs_query_cpu_ratio``). The others keep a history the
   same way and start a fresh one every ``--http-turns-per-session`` turns
   (the Session variants by starting a new Session). That is 1 by default:
   every turn is then exactly overhead.py's exchange, from an empty history,
   and a Query costs what it costs there. With longer histories the openai
   SDK's request transform, which walks every message of every request,
   dominates both variants (a Query with 9 prior turns costs some 4x one
   without) and the figures get slower to measure and noisier;
   ``--http-turns-per-session 10`` runs that case. Only the turns are timed
   (``time.process_time()``, until every observer has seen the last
   ``turn_done``); the Session's start and close are reported on their own.

   Each variant runs in a child process of its own, and the children of a
   round run in lockstep: they start and warm up together, then take turns,
   each running a slice of turns while the others wait (``--slices``, in
   alternating order), so whatever else the machine is doing weighs on every
   variant alike. A round gives each variant's CPU per turn and its ratio to
   the ``query`` child of the same round; the figures are the medians over
   ``--http-repeats`` rounds, each of fresh processes. Goal: session/query <=
   1.15 (key ``session_vs_query_cpu_ratio``). ``--http-variants`` can add
   ``journal_off`` and ``journal_turn`` (see part 2); by default they run
   in-process only, to keep the run short. Over HTTP the split between the
   Session and its observers (``bare_session``) is close to the noise of a
   4 ms turn; part 2 measures it better.
2. CPU per turn in-process: the same comparison with the same script played
   by the in-process ``ScriptedProvider`` (no HTTP, no server), so what is
   measured is xai's work alone; keys ``inproc_*``. The histories grow for
   ``--turns-per-session`` turns (10). Five variants, in lockstep as above for
   ``--repeats`` rounds: ``query``, ``bare_session``, ``session``, and
   ``journal_off`` and ``journal_turn``, ``session`` with a journal in a
   temporary directory (``SessionConfig(fsync="off")`` / ``"turn"``).

   Why both: over HTTP most of a turn's CPU is the HTTP client's (the openai
   SDK building each request, httpx, decoding the streamed chunks), as it is
   against a real model endpoint; the Session's extra work is diluted by it,
   and session/query there is what a Session costs an application: the goal's
   figure. In-process a bare Query costs some 0.16 ms a turn, so the Session's
   extra work (its bookkeeping, the fan-out of each event to three observers)
   weighs an order of magnitude more: session/query there is the Session's
   own overhead in isolation, an upper bound on its relative cost (no
   transport makes a Query cheaper than none), and the figure to watch when
   optimising the Session. The absolute extras (``session_extra_cpu_ms_per_turn``,
   ``inproc_session_extra_cpu_ms_per_turn``) differ somewhat: over HTTP a
   turn's events arrive one at a time, so each observer task wakes for each
   event rather than once for a turn's worth, and with one turn per Session
   every turn is a Session's first.
3. Memory. ``--idle`` Sessions are started in one task group and left idle;
   tracemalloc's difference over them, divided by their number, is the cost of
   one idle Session, its tasks included (goal <= 16 KiB). Then ``--crowd``
   Sessions share one provider, each sends one input, and all the turns run
   concurrently: wall time, turns per second and peak RSS (a child without
   tracemalloc), and tracemalloc's peak (a second child, with it).
4. Event fan-out. One Session with the three observers streams replies of
   2,000 one-character chunks; events per second each observer received, with
   buffers big enough that none is dropped; then again with a fourth, slow
   observer (buffer 100, 1 ms per event): how much it missed, and whether the
   Session slowed down for it. (The scripted provider never yields inside a
   stream, so a whole turn's events arrive before any observer runs: the
   buffers of the fast observers must hold one turn.)

    python bench/sessions.py            # the default run (about 80 s on 2 cores)
    python bench/sessions.py --quick    # fewer turns and Sessions (about 35 s)
    python bench/sessions.py --only cpu # just the CPU parts (http,inproc)
    python bench/sessions.py --check    # exit 1 if a goal (CPU ratio, idle bytes) is not met

The last line of output is one JSON object with the figures.
"""

from __future__ import annotations

import argparse
import gc
import json
import resource
import shutil
import signal
import statistics
import sys
import sysconfig
import tempfile
import time
import tracemalloc
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Literal, TypeVar

import _common
import anyio
import anyio.abc
import anyio.lowlevel
import anyio.to_thread
import msgspec
from _common import LineChild, Server, exit_on_sigterm, lookup, lookup_calls

import xai
from xai.events import EventsDropped, SessionEvent, TurnDone
from xai.messages import Message, TurnOutcome, TurnStatus, UserMessage
from xai.mood import MoodSeed, MoodState, MoodStyles
from xai.providers import Provider, ProviderRequest
from xai.session import Session, SessionConfig, SystemPrompt
from xai.testing import Reply, Rule, Script, ScriptedCall, ScriptedProvider

CpuVariant = Literal[
    "query", "bare_session", "session", "session_once", "journal_off", "journal_turn", "mood"
]
CPU_VARIANTS: tuple[CpuVariant, ...] = (
    "query",
    "bare_session",
    "session",
    "session_once",
    "journal_off",
    "journal_turn",
    "mood",
)
HTTP_VARIANTS: tuple[CpuVariant, ...] = (
    "query",
    "bare_session",
    "session",
    "session_once",
    "mood",
)
"""The variants run over HTTP unless ``--http-variants`` says otherwise."""
Child = Literal[CpuVariant, "idle", "crowd", "events"]
CHILDREN: tuple[Child, ...] = (*CPU_VARIANTS, "idle", "crowd", "events")
Section = Literal["http", "inproc", "memory", "crowd", "events"]
SECTIONS: tuple[Section, ...] = ("http", "inproc", "memory", "crowd", "events")
Transport = Literal["http", "inproc"]

MODEL = "bench-model"

PROMPT = "What will the weather be in Reykjavik over the next three days?"
MOOD_PROMPT = "Great news, thanks! What's the weather in Reykjavik for 3 days?"
"""The ``mood`` variant's input: as long as ``PROMPT``, and glad, so every turn moves the
user's mood (a delta recorded, ``MoodChanged`` fanned out, the style line changed once)."""
MOOD_SYSTEM = SystemPrompt(mood=MoodSeed(state=MoodState(), styles=MoodStyles()))
"""What an Agent with mood on hands its Sessions (docs/mood.md), with no style lines: the
variants here have no system prompt, and a style line would add one to every request (under
an Agent it is a line more in the persona's). Extraction stays off, so the offline estimator
(VADER) reads every input."""
GOAL_MOOD_RATIO = 1.03
"""A Session with mood on against the same Session with it off (issue 30)."""
TOOL_NAME = "lookup"
TOOL_ARGUMENTS = {"city": "Reykjavik", "unit": "celsius", "days": 3, "detail": True}
ARGUMENT_CHUNK_CHARS = 8
"""As in ``bench/overhead.py``: the tool call's arguments arrive in several deltas."""
TEXT_CHUNKS = 20
_SENTENCE = "Reykjavik stays cool and breezy: light rain on day one, clearing skies after. "
FINAL_TEXT = (_SENTENCE * 4)[: TEXT_CHUNKS * 12]
"""240 characters, so ``text_chunks=20`` cuts it into exactly 20 pieces of 12."""
STREAM_CHUNKS = 2_000
"""Text chunks of one reply in the fan-out part (one character each)."""

GOAL_CPU_RATIO = 1.15
GOAL_ONCE_RATIO = 1.10
"""A Session opened, used for one turn and closed, against a bare Query (issue 35)."""
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
    """In-process CPU: measured turns per variant and round, in ``slices`` slices."""
    warmup: int = 100
    turns_per_session: int = 10
    slices: int = 10
    repeats: int = 3
    idle: int = 1_000
    crowd: int = 10_000
    traced: bool = False
    """The crowd child: run under tracemalloc (peak traced memory) instead of timing."""
    event_turns: int = 20
    base_url: str = ""
    """A CPU child's transport: the wire server's URL, or empty for the in-process provider."""
    http_turns: int = 300
    """The same for the CPU over HTTP (the parent passes them on as ``turns`` etc.)."""
    http_warmup: int = 30
    http_turns_per_session: int = 1
    http_slices: int = 10
    http_repeats: int = 4


class CpuSlice(msgspec.Struct, frozen=True, kw_only=True):
    """What a CPU child reports for one slice of turns (one JSON line on stdout)."""

    turns: int
    cpu_s: float
    wall_s: float
    sessions: int
    lifecycle_s: float
    events: int


class CpuFigures(msgspec.Struct, frozen=True, kw_only=True):
    """One variant in one round: the sum of its slices."""

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

TOOLS = xai.ToolSet([lookup])
"""Built once and shared, as an application would."""


class _Forgetful(list[ProviderRequest]):
    """Drops what ``ScriptedProvider.requests`` would keep for a test to inspect.

    Every request of thousands of turns, kept: memory and garbage-collector work
    that is the test double's, not the Session's.
    """

    def append(self, item: ProviderRequest, /) -> None:
        return None


def exchange_script() -> Script:
    """One tool call, then the text in 20 chunks; rules, so it never runs out.

    The script of ``bench/overhead.py``: the wire server plays it over HTTP, the
    ``ScriptedProvider`` in-process.
    """
    return Script(
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


def exchange_provider() -> ScriptedProvider:
    provider = ScriptedProvider(exchange_script())
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


async def _consume(subscription: xai.session.Subscription[SessionEvent], tally: Tally) -> None:
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
    provider: Provider,
    turns: int,
    totals: _Totals,
    config: SessionConfig,
    directory: Path | None,
    observed: bool,
    mood: bool = False,
) -> None:
    cpu0 = time.process_time()
    system, prompt = (MOOD_SYSTEM, MOOD_PROMPT) if mood else (None, PROMPT)
    async with anyio.create_task_group() as group:
        session = Session(provider, tools=TOOLS, config=config, directory=directory, system=system)
        await group.start(session.run)
        tallies = watch(session, group, config.event_buffer) if observed else []
        cpu1, wall1 = time.process_time(), time.perf_counter()
        for _ in range(turns):
            outcome = await session.send(prompt)
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


async def once_block(provider: Provider, totals: _Totals, config: SessionConfig) -> None:
    """One turn on a Session of its own, the way an application that opens a Session per
    request uses it: ``async with Session(...)``, ``send``, close; all of it timed."""
    cpu0, wall0 = time.process_time(), time.perf_counter()
    async with Session(provider, tools=TOOLS, config=config) as session:
        outcome = await session.send(PROMPT)
    cpu1, wall1 = time.process_time(), time.perf_counter()
    if outcome.status is not TurnStatus.COMPLETED or outcome.text != FINAL_TEXT:
        check_outcome(outcome)
    if session.state != "closed":
        raise AssertionError(f"the Session did not close: {session.state}")
    totals.cpu += cpu1 - cpu0
    totals.wall += wall1 - wall0
    totals.turns += 1
    totals.sessions += 1


async def first_turn(query: xai.Query) -> None:
    """A warm-up turn, watched: proves the exchange is the one described above."""
    deltas = 0

    def observe(event: xai.QueryEvent) -> None:
        nonlocal deltas
        if isinstance(event, xai.TextDelta):
            deltas += 1

    result = await query.run((), PROMPT, observers=[observe])
    check_result(result)
    if deltas != TEXT_CHUNKS or result.usage.requests != 2:
        raise AssertionError(
            f"expected {TEXT_CHUNKS} text chunks over 2 requests, "
            f"got {deltas} over {result.usage.requests}"
        )
    if len(result.tool_results) != 1 or result.tool_results[0].is_error:
        raise AssertionError(f"the tool call did not succeed: {result.tool_results!r}")


async def run_cpu(variant: CpuVariant, plan: Plan) -> None:
    if not plan.base_url:
        await serve_cpu(variant, plan, exchange_provider())
        return
    provider = xai.OpenAIProvider(
        xai.LLMConfig(model=MODEL, base_url=plan.base_url, api_key="bench", max_retries=0)
    )
    async with provider:
        await serve_cpu(variant, plan, provider)


async def serve_cpu(variant: CpuVariant, plan: Plan, provider: Provider) -> None:
    """Warm up, say ``ready``, then run each ``run N`` the parent sends: N turns, one slice.

    Each slice is answered with one ``CpuSlice`` line; ``stop`` (or the end of
    stdin) ends the child, once it has checked the tool ran once per turn.
    """
    query = xai.Query(provider, tools=TOOLS)
    await first_turn(query)
    workdir = Path(tempfile.mkdtemp(prefix="xai-bench-sessions-"))
    fsync: Literal["off", "turn"] = "turn" if variant == "journal_turn" else "off"
    config = SessionConfig(fsync=fsync, event_buffer=1_000)
    blocks = 0

    async def block(turns: int, totals: _Totals) -> None:
        nonlocal blocks
        blocks += 1
        if variant == "query":
            await query_block(query, turns, totals)
        elif variant == "session_once":
            for _ in range(turns):
                await once_block(provider, totals, config)
        else:
            directory = workdir / f"s{blocks}" if variant.startswith("journal") else None
            observed = variant != "bare_session"
            mood = variant == "mood"
            await session_block(provider, turns, totals, config, directory, observed, mood)

    async def turns(count: int, totals: _Totals) -> None:
        while totals.turns < count:
            await block(min(plan.turns_per_session, count - totals.turns), totals)

    try:
        await turns(plan.warmup, _Totals())
        gc.collect()
        calls0, measured = lookup_calls(), 0
        print("ready", flush=True)
        while True:
            words = (await anyio.to_thread.run_sync(sys.stdin.readline)).split()
            if len(words) != 2 or words[0] != "run":
                break
            totals = _Totals()
            await turns(int(words[1]), totals)
            measured += totals.turns
            report = CpuSlice(
                turns=totals.turns,
                cpu_s=totals.cpu,
                wall_s=totals.wall,
                sessions=totals.sessions,
                lifecycle_s=totals.lifecycle,
                events=totals.events,
            )
            print(msgspec.json.encode(report).decode(), flush=True)
        if lookup_calls() - calls0 != measured:
            raise AssertionError(
                f"the tool ran {lookup_calls() - calls0} times in {measured} turns"
            )
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


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
    calls0 = lookup_calls()
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
    if lookup_calls() - calls0 != plan.crowd or any(s.state != "closed" for s in sessions):
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
        # Its stdout is a protocol: xai's warnings (a failed request, say) go to stderr.
        xai.configure_logging(level="warning", stream=sys.stderr)
        anyio.run(run_cpu, kind, plan, backend="asyncio")
        return 0
    print(msgspec.json.encode(figures).decode(), flush=True)
    return 0


# -- orchestrating, in the parent ---------------------------------------------------------------


def _child_args(kind: Child, plan: Plan) -> list[str]:
    return ["--child", kind, "--plan", msgspec.json.encode(plan).decode()]


def run_child(kind: Child, plan: Plan, type_: type[T]) -> T:
    return _common.run_child(__file__, _child_args(kind, plan), type_, what=f"{kind} child")


def _median(values: Sequence[float]) -> float:
    return statistics.median(values)


CHILD_TIMEOUT = 300.0
"""Longest a CPU child may take to warm up or to run one slice."""


class CpuChild(LineChild):
    """A CPU variant's child process, fed one slice of turns at a time."""

    def __init__(self, variant: CpuVariant, plan: Plan) -> None:
        self.variant = variant
        argv = [str(Path(__file__).resolve()), *_child_args(variant, plan)]
        super().__init__(f"{variant} child", argv, timeout=CHILD_TIMEOUT)

    def run(self, turns: int) -> CpuSlice:
        return self.ask(f"run {turns}", CpuSlice)


def _figures(variant: CpuVariant, slices: Sequence[CpuSlice]) -> CpuFigures:
    turns = sum(s.turns for s in slices)
    sessions = sum(s.sessions for s in slices)
    return CpuFigures(
        variant=variant,
        turns=turns,
        cpu_ms_per_turn=sum(s.cpu_s for s in slices) * 1000 / turns,
        wall_ms_per_turn=sum(s.wall_s for s in slices) * 1000 / turns,
        sessions=sessions,
        lifecycle_cpu_ms=sum(s.lifecycle_s for s in slices) * 1000 / sessions if sessions else 0.0,
        events_per_turn=sum(s.events for s in slices) / turns,
    )


def slice_turns(plan: Plan) -> int:
    """Turns of one slice: ``turns / slices``, rounded up to whole Sessions."""
    sessions = -(-plan.turns // (plan.slices * plan.turns_per_session))
    return sessions * plan.turns_per_session


def cpu_rounds(
    transport: Transport, variants: Sequence[CpuVariant], plan: Plan
) -> dict[CpuVariant, list[CpuFigures]]:
    """``plan.repeats`` rounds; in each, one child per variant, all run in lockstep.

    The children start and warm up together, then take turns: each runs a
    slice while the others wait, in alternating order, until each has run
    ``plan.slices`` slices. So whatever else the machine does at the time
    weighs on every variant alike, and the variants of a round compare well.
    """
    per_slice = slice_turns(plan)
    results: dict[CpuVariant, list[CpuFigures]] = {v: [] for v in variants}
    for round_ in range(plan.repeats):
        children = [CpuChild(variant, plan) for variant in variants]
        slices: dict[CpuVariant, list[CpuSlice]] = {v: [] for v in variants}
        try:
            for c in children:
                c.ready()
            for i in range(plan.slices):
                for c in children if (round_ + i) % 2 == 0 else children[::-1]:
                    slices[c.variant].append(c.run(per_slice))
            for c in children:
                c.stop()
        finally:
            for c in children:
                c.close()
        figures = {v: _figures(v, slices[v]) for v in variants}
        for variant in variants:
            results[variant].append(figures[variant])
        query = figures["query"].cpu_ms_per_turn
        print(
            f"  round {round_ + 1} {transport} ({figures['query'].turns} turns each), ms CPU/turn: "
            + ", ".join(f"{v} {f.cpu_ms_per_turn:.3f}" for v, f in figures.items())
            + f"; session/query x{figures['session'].cpu_ms_per_turn / query:.3f}"
        )
    return results


class CpuMedians(msgspec.Struct, frozen=True, kw_only=True):
    """One transport's CPU figures, medians over the rounds."""

    cpu: dict[CpuVariant, float]
    """ms per turn."""
    ratio: float
    """session/query CPU."""
    extra: float
    """session - query CPU, ms per turn."""
    once: float | None = None
    """session_once/query CPU, if it ran."""


def cpu_report(
    transport: Transport,
    results: dict[CpuVariant, list[CpuFigures]],
    plan: Plan,
    summary: dict[str, object],
) -> CpuMedians:
    """Print one transport's medians and put them in ``summary`` (``inproc_*`` in-process).

    A ratio (or a difference) is the median of the rounds' own: each round's
    variants ran side by side, in lockstep.
    """
    variants = list(results)
    repeats = len(results["query"])
    key = "" if transport == "http" else "inproc_"

    def median(variant: CpuVariant, of: Callable[[CpuFigures], float]) -> float:
        return _median([of(r) for r in results[variant]])

    def paired(variant: CpuVariant, of: Callable[[CpuFigures, CpuFigures], float]) -> float:
        return _median([of(r, q) for r, q in zip(results[variant], results["query"], strict=True)])

    def cpu_of(r: CpuFigures) -> float:
        return r.cpu_ms_per_turn

    def wall_of(r: CpuFigures) -> float:
        return r.wall_ms_per_turn

    cpu = {v: median(v, cpu_of) for v in variants}
    wall = {v: median(v, wall_of) for v in variants}
    cpu_ratio = {v: paired(v, lambda r, q: r.cpu_ms_per_turn / q.cpu_ms_per_turn) for v in variants}
    wall_ratio = {
        v: paired(v, lambda r, q: r.wall_ms_per_turn / q.wall_ms_per_turn) for v in variants
    }
    cpu_extra = {v: paired(v, lambda r, q: r.cpu_ms_per_turn - q.cpu_ms_per_turn) for v in variants}
    lifecycle = median("session", lambda r: r.lifecycle_cpu_ms)
    per_turn_events = median("session", lambda r: r.events_per_turn)
    for variant in variants:
        print(
            f"{transport:>6} {variant:>12}: {cpu[variant]:.3f} ms CPU/turn, "
            f"{wall[variant]:.3f} ms wall/turn (median of {repeats}); "
            f"x{cpu_ratio[variant]:.3f} of query's CPU"
        )
    ratio, extra = cpu_ratio["session"], cpu_extra["session"]
    per_round = [
        s.cpu_ms_per_turn / q.cpu_ms_per_turn
        for q, s in zip(results["query"], results["session"], strict=True)
    ]
    if transport == "http":
        verdict = f"goal <= {GOAL_CPU_RATIO}: {'met' if ratio <= GOAL_CPU_RATIO else 'NOT met'}"
    else:
        verdict = "no goal: an upper bound"
    print(
        f"{transport} session/query CPU ratio: {ratio:.3f} (per round: "
        f"{', '.join(f'{r:.3f}' for r in per_round)}; {verdict}); the Session with its 3 "
        f"observers adds {extra:.3f} ms CPU/turn; each observer got {per_turn_events:g} events/turn"
    )
    parts = []
    if "bare_session" in cpu:
        actor = cpu_extra["bare_session"]
        parts.append(f"{actor:.3f} the Session itself, {extra - actor:.3f} the three observers")
    if "journal_off" in cpu:
        journal = cpu_extra["journal_off"] - extra
        parts.append(f"a journal adds {journal:.3f} (fsync off)")
    if "journal_turn" in cpu:
        parts.append(f"{cpu_extra['journal_turn'] - extra:.3f} (fsync per turn)")
    if parts:
        print(f"  of the extra {extra:.3f} ms/turn: " + "; ".join(parts))
    print(f"  a Session's start (with its 3 observers) and close: {lifecycle:.3f} ms CPU")
    once = cpu_ratio.get("session_once")
    if once is not None:
        verdict = (
            f"goal <= {GOAL_ONCE_RATIO}: {'met' if once <= GOAL_ONCE_RATIO else 'NOT met'}"
            if transport == "http"
            else "no goal in-process"
        )
        print(
            f"{transport} session_once/query CPU ratio: {once:.3f} (a Session opened, used for "
            f"one turn and closed, start and close included; {verdict})"
        )
    if "mood" in results and "session" in results:
        mood_ratio = _median(
            [
                m.cpu_ms_per_turn / o.cpu_ms_per_turn
                for m, o in zip(results["mood"], results["session"], strict=True)
            ]
        )
        verdict = "goal met" if mood_ratio <= GOAL_MOOD_RATIO else "goal NOT met"
        print(
            f"{transport} mood on/off CPU ratio: {mood_ratio:.3f} (a Session with mood on "
            f"against the same without; goal <= {GOAL_MOOD_RATIO}: {verdict})"
        )
        summary[f"{key}mood_vs_session_cpu_ratio"] = round(mood_ratio, 4)
        summary[f"{key}goal_max_mood_cpu_ratio"] = GOAL_MOOD_RATIO
    others = [v for v in variants if v != "query"]
    summary.update(
        {f"{key}{v}_cpu_ms_per_turn": round(cpu[v], 4) for v in variants}
        | {f"{key}{v}_wall_ms_per_turn": round(wall[v], 4) for v in variants}
        | {f"{key}{v}_vs_query_cpu_ratio": round(cpu_ratio[v], 4) for v in others}
        | {f"{key}{v}_vs_query_wall_ratio": round(wall_ratio[v], 4) for v in others}
        | {f"{key}{v}_extra_cpu_ms_per_turn": round(cpu_extra[v], 4) for v in others}
        | {
            f"{key}session_vs_query_cpu_ratio_per_round": [round(r, 4) for r in per_round],
            f"{key}session_lifecycle_cpu_ms": round(lifecycle, 4),
            f"{key}observer_events_per_turn": per_turn_events,
            f"{key}turns": results["query"][0].turns,
            f"{key}turns_per_session": plan.turns_per_session,
            f"{key}slices": plan.slices,
            f"{key}repeats": repeats,
        }
    )
    if transport == "http":
        # The unprefixed CPU keys (``session_vs_query_cpu_ratio``) are the HTTP figures.
        summary |= {
            "cpu_exchange": "http",
            "goal_max_cpu_ratio": GOAL_CPU_RATIO,
            "cpu_goal_met": ratio <= GOAL_CPU_RATIO,
        }
        if once is not None:
            summary |= {
                "goal_max_session_once_cpu_ratio": GOAL_ONCE_RATIO,
                "session_once_goal_met": once <= GOAL_ONCE_RATIO,
            }
    return CpuMedians(cpu=cpu, ratio=ratio, extra=extra, once=once)


def http_plan(plan: Plan, base_url: str) -> Plan:
    return msgspec.structs.replace(
        plan,
        turns=plan.http_turns,
        warmup=plan.http_warmup,
        turns_per_session=plan.http_turns_per_session,
        slices=plan.http_slices,
        repeats=plan.http_repeats,
        base_url=base_url,
    )


def http_part(plan: Plan, variants: Sequence[CpuVariant], summary: dict[str, object]) -> CpuMedians:
    server = Server(msgspec.json.encode(exchange_script()))
    try:
        base_url = server.start()
        child_plan = http_plan(plan, base_url)
        print(
            f"cpu over HTTP (the goal's figure: the exchange of bench/overhead.py): "
            f"OpenAIProvider against the wire server at {base_url}, a separate process (only "
            f"client CPU is measured); 1 async tool call in {ARGUMENT_CHUNK_CHARS}-char argument "
            f"deltas, then {TEXT_CHUNKS} text chunks, over 2 streamed requests per turn; "
            f"{child_plan.repeats} rounds, each one process per variant, run in lockstep: "
            f"{child_plan.warmup} warm-up turns, then {child_plan.slices} slices of "
            f"{slice_turns(child_plan)} turns each; a fresh history/Session every "
            f"{child_plan.turns_per_session} turn(s)"
        )
        results = cpu_rounds("http", variants, child_plan)
    finally:
        server.stop()
    return cpu_report("http", results, child_plan, summary)


def inproc_part(plan: Plan, summary: dict[str, object]) -> CpuMedians:
    print(
        f"cpu in-process (the Session's own overhead in isolation, an upper bound on its "
        f"relative cost): the same script played by ScriptedProvider, no HTTP; {plan.repeats} "
        f"rounds, each one process per variant, run in lockstep: {plan.warmup} warm-up turns, "
        f"then {plan.slices} slices of {slice_turns(plan)} turns each; a fresh history/Session "
        f"every {plan.turns_per_session} turns"
    )
    results = cpu_rounds("inproc", CPU_VARIANTS, plan)
    return cpu_report("inproc", results, plan, summary)


def compare_transports(http: CpuMedians, inproc: CpuMedians) -> None:
    print(
        f"why two ratios: a bare Query costs {http.cpu['query']:.3f} ms CPU/turn over HTTP and "
        f"{inproc.cpu['query']:.3f} in-process; the Session with its 3 observers adds "
        f"{http.extra:.3f} and {inproc.extra:.3f} ms to it. Over HTTP, the real exchange, that "
        f"is x{http.ratio:.3f}: the goal's figure. In-process, where nothing dilutes it, "
        f"x{inproc.ratio:.3f}: the Session's own overhead, an upper bound on its relative cost"
    )


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


def parent(
    plan: Plan,
    sections: Sequence[Section],
    http_variants: Sequence[CpuVariant],
    check_goal: bool,
) -> int:
    signal.signal(signal.SIGTERM, exit_on_sigterm)
    summary: dict[str, object] = {}
    met = True
    http = inproc = None
    if "http" in sections:
        http = http_part(plan, http_variants, summary)
        met = http.ratio <= GOAL_CPU_RATIO and met
        if http.once is not None:
            met = http.once <= GOAL_ONCE_RATIO and met
    if "inproc" in sections:
        inproc = inproc_part(plan, summary)
    if http is not None and inproc is not None:
        compare_transports(http, inproc)
    if "memory" in sections:
        met = memory_part(plan, summary) and met
    if "crowd" in sections:
        crowd_part(plan, summary)
    if "events" in sections:
        events_part(plan, summary)
    summary["goal_met"] = met
    print(json.dumps(summary))
    return 1 if check_goal and not met else 0


QUICK = Plan(
    turns=300,
    warmup=50,
    slices=6,
    idle=500,
    crowd=2_000,
    event_turns=5,
    http_turns=120,
    http_warmup=20,
    http_slices=6,
    http_repeats=3,
)


def _variants(text: str) -> list[CpuVariant] | None:
    chosen = {name.strip() for name in ("query", "session", *text.split(","))}
    if not chosen <= set(CPU_VARIANTS):
        return None
    return [v for v in CPU_VARIANTS if v in chosen]


def main(argv: Sequence[str] | None = None) -> int:
    default = Plan()
    parser = argparse.ArgumentParser(
        description="A Session's CPU per turn against a bare Query, its memory, its event fan-out."
    )
    parser.add_argument("--quick", action="store_true", help="fewer turns and Sessions")
    parser.add_argument(
        "--http-turns",
        type=int,
        help=f"measured turns per HTTP variant and round ({default.http_turns})",
    )
    parser.add_argument(
        "--http-turns-per-session",
        type=int,
        help="turns over HTTP before a fresh Session and history "
        f"({default.http_turns_per_session}: every turn is bench/overhead.py's exchange)",
    )
    parser.add_argument(
        "--http-repeats", type=int, help=f"rounds of the HTTP variants ({default.http_repeats})"
    )
    parser.add_argument(
        "--http-variants",
        default=",".join(HTTP_VARIANTS),
        help=f"CPU variants run over HTTP (of {', '.join(CPU_VARIANTS)}; query and session "
        "always run; default: %(default)s)",
    )
    parser.add_argument(
        "--turns",
        type=int,
        help=f"measured turns per in-process variant and round ({default.turns})",
    )
    parser.add_argument(
        "--warmup", type=int, help=f"warm-up turns per in-process child ({default.warmup})"
    )
    parser.add_argument(
        "--turns-per-session",
        type=int,
        default=default.turns_per_session,
        help="in-process turns before a fresh Session (and a fresh history for the Query) "
        "(%(default)s)",
    )
    parser.add_argument(
        "--repeats", type=int, help=f"rounds of the in-process variants ({default.repeats})"
    )
    parser.add_argument(
        "--slices",
        type=int,
        help=f"slices a round's turns are run in, on each transport ({default.slices})",
    )
    parser.add_argument("--idle", type=int, help=f"idle Sessions measured ({default.idle})")
    parser.add_argument("--crowd", type=int, help=f"concurrent Sessions ({default.crowd})")
    parser.add_argument(
        "--event-turns", type=int, help=f"turns of the fan-out part ({default.event_turns})"
    )
    parser.add_argument(
        "--only",
        help=f"comma-separated parts to run (of {', '.join(SECTIONS)}, or cpu for http,inproc; "
        "default: all)",
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

    def given(value: int | None, fallback: int) -> int:
        return fallback if value is None else value

    plan = msgspec.structs.replace(
        base,
        turns=given(args.turns, base.turns),
        warmup=given(args.warmup, base.warmup),
        turns_per_session=args.turns_per_session,
        slices=given(args.slices, base.slices),
        repeats=given(args.repeats, base.repeats),
        idle=given(args.idle, base.idle),
        crowd=given(args.crowd, base.crowd),
        event_turns=given(args.event_turns, base.event_turns),
        http_turns=given(args.http_turns, base.http_turns),
        http_turns_per_session=given(args.http_turns_per_session, base.http_turns_per_session),
        http_slices=given(args.slices, base.http_slices),
        http_repeats=given(args.http_repeats, base.http_repeats),
    )
    sections: list[Section] = []
    for name in (args.only or ",".join(SECTIONS)).split(","):
        name = name.strip()
        chosen = [s for s in SECTIONS if s == name or (name == "cpu" and s in ("http", "inproc"))]
        if not chosen:
            parser.error(f"unknown part {name!r} (choose from {', '.join(SECTIONS)}, cpu)")
        sections.extend(s for s in chosen if s not in sections)
    http_variants = _variants(args.http_variants)
    if http_variants is None:
        parser.error(f"unknown variant in --http-variants (choose from {', '.join(CPU_VARIANTS)})")
    counts = (plan.turns, plan.turns_per_session, plan.slices, plan.repeats, plan.idle, plan.crowd)
    http_counts = (plan.http_turns, plan.http_turns_per_session, plan.http_slices)
    if min(*counts, *http_counts, plan.http_repeats, plan.event_turns) < 1 or plan.warmup < 0:
        parser.error("counts must be >= 1, --warmup >= 0")
    return parent(plan, sections, http_variants, args.check)


if __name__ == "__main__":
    raise SystemExit(main())
