"""A bounded soak of a real ``xai serve``: does its memory grow with every closed Session?

Three processes: the model (``python -m xai.testing serve --demo``, or ``--script FILE``),
the gateway (``python -m xai serve --root TMP --port 0``, pointed at the model by
``LLM_*``), and this client. The client runs ``--sessions`` Sessions of one Agent one after
the other, each over HTTP as an application would: open it (``POST …/sessions``), read its
event stream (``GET …/events``, Server-Sent Events), send ``--turns-per-session`` inputs
(``POST …/messages``, each with its own ``Idempotency-Key``), each read to its
``turn_done``, then close it (``DELETE``) and read the stream to its ``session_closed``.
Every ``--sample-every`` closed Sessions it reads the gateway's ``VmRSS``
(``/proc/PID/status``).

The figure: the slope of RSS against closed Sessions after warm-up (a least-squares line
through the samples past the first ``--warmup`` fraction of Sessions), in KiB per closed
Session. Goal: at most 4 KiB (``slope_vs_goal_ratio`` <= 1).

What a closed Session legitimately leaves behind: what was said in it is kept as episodes
in the Agent's long-term memory (each input and each answer: an ``Episode`` in the
episodes' store, queued for the search index: they are embedded, written to chromadb and
added to the in-RAM corpus by the next search, and nothing in this workload searches),
and its facts are reinforced (a ledger record each, and a metadata update of the fact in
chromadb). ``--memory-part`` (on by default) measures that part alone: a child
process does just the memory's work of the same Sessions (``record_episodes`` of the same
episodes, ``adjudicate`` of the same candidates, on a real ``LongTermMemory`` with the
gateway's embedder and an embedded chromadb; a full collection and ``malloc_trim`` every
32 Sessions, as the host does) and reports its own RSS slope; the key
``host_slope_kib_per_session`` is the gateway's slope less that part (what the host,
its Agent and Sessions keep per closed Session). The model's turns are chosen so that
the memory adds few facts: a name and a habit, reinforced by every Session after the
first (``demo_model``'s extraction and judge).

Usage: ``python bench/soak.py [--sessions 300] [--turns-per-session 3]``; a default run
takes a few minutes. Ends with one JSON line.
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator, Sequence
from pathlib import Path

import httpx
from _common import exit_on_sigterm

GOAL_KIB_PER_SESSION = 4.0
AGENT = "soak"
TURNS = ("Hi, I'm Ada.", "I grow tomatoes on my balcony.", "What is my name?")
"""The inputs of a Session's turns, in turn (the demo model answers each; extraction gives
two facts, which every later Session reinforces)."""


def rss_kib(pid: int) -> int:
    """The process's resident set size (``VmRSS``), KiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError(f"no VmRSS for process {pid}")


def slope(points: Sequence[tuple[float, float]]) -> float:
    """The least-squares slope of ``y`` against ``x``."""
    n = len(points)
    if n < 2:
        return float("nan")
    mean_x = sum(x for x, _ in points) / n
    mean_y = sum(y for _, y in points) / n
    sxx = sum((x - mean_x) ** 2 for x, _ in points)
    sxy = sum((x - mean_x) * (y - mean_y) for x, y in points)
    return sxy / sxx if sxx else float("nan")


def after_warmup(
    samples: Sequence[tuple[int, int]], sessions: int, warmup: float
) -> list[tuple[float, float]]:
    start = sessions * warmup
    return [(float(x), float(y)) for x, y in samples if x >= start]


class Child:
    """A subprocess whose first line saying ``marker`` gives its URL (on ``stream``)."""

    def __init__(
        self, command: list[str], marker: str, *, env: dict[str, str], on_stderr: bool
    ) -> None:
        self.process = subprocess.Popen(
            command,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        pipe = self.process.stderr if on_stderr else self.process.stdout
        other = self.process.stdout if on_stderr else self.process.stderr
        assert pipe is not None and other is not None
        self.lines: queue.Queue[str] = queue.Queue()
        self.tail: list[str] = []
        self._marker = marker
        threading.Thread(target=self._read, args=(pipe,), daemon=True).start()
        threading.Thread(target=self._drain, args=(other,), daemon=True).start()

    def _read(self, pipe: object) -> None:
        for line in pipe:  # type: ignore[attr-defined]
            self.tail = [*self.tail[-40:], line]
            if self._marker in line:
                self.lines.put(line)

    def _drain(self, pipe: object) -> None:
        for line in pipe:  # type: ignore[attr-defined]
            self.tail = [*self.tail[-40:], line]

    def url(self, timeout: float = 120.0) -> str:
        try:
            line = self.lines.get(timeout=timeout)
        except queue.Empty:
            sys.stderr.write("".join(self.tail))
            raise RuntimeError(f"{self.process.args!r} did not start in {timeout}s") from None
        return line.split(self._marker, 1)[1].split()[0].strip()

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
            try:
                self.process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


PROBE = """
import gc, os, pickle, runpy, signal, sys, tracemalloc
from collections import Counter

_count = [0]


def _probe(signum, frame):
    try:
        _dump()
    except BaseException as error:  # never into the gateway's event loop
        sys.stderr.write(f"probe failed: {error!r}\\n")


def _dump():
    _count[0] += 1
    stem = os.environ["XAI_SOAK_PROBE"] + str(_count[0])
    gc.collect()
    types = Counter(f"{type(o).__module__}.{type(o).__qualname__}" for o in gc.get_objects())
    with open(stem + ".types", "wb") as f:
        pickle.dump(dict(types), f)
    frames = int(os.environ["XAI_SOAK_FRAMES"])
    if tracemalloc.is_tracing():
        tracemalloc.take_snapshot().dump(stem + ".tm")
    elif frames:
        tracemalloc.start(frames)
    with open(stem + ".smaps", "w") as f:
        f.write(open("/proc/self/smaps_rollup").read())
    with open(stem + ".done", "w") as f:
        f.write("1")


signal.signal(signal.SIGUSR1, _probe)
sys.argv = ["xai", *sys.argv[1:]]
runpy.run_module("xai", run_name="__main__", alter_sys=True)
"""
"""The gateway's launcher under ``--tracemalloc``: on ``SIGUSR1`` it collects, then writes
the live objects' type counts and ``/proc/self/smaps_rollup``; the first signal starts
tracemalloc (so the warm-up runs at full speed), the second writes its snapshot: what it
holds is what was allocated after the first probe and is still alive."""


def probe(pid: int, stem: str, number: int) -> None:
    """Signal the probed gateway and wait for its ``number``th dump."""
    os.kill(pid, signal.SIGUSR1)
    done = Path(f"{stem}{number}.done")
    deadline = time.monotonic() + 600
    while not done.exists():
        if time.monotonic() > deadline:
            raise RuntimeError("the gateway did not write its probe")
        time.sleep(0.2)


def smaps(path: Path) -> dict[str, int]:
    out: dict[str, int] = {}
    for line in path.read_text().splitlines()[1:]:
        key, _, rest = line.partition(":")
        parts = rest.split()
        if parts and parts[0].isdigit():
            out[key.strip()] = int(parts[0])
    return out


def report_probes(stem: str, first: int, second: int, top: int) -> None:
    """Print what grew in the gateway between its two probes (at ``first`` and ``second``
    closed Sessions): Python allocations by traceback, live objects by type, smaps."""
    import pickle
    import tracemalloc

    sessions = second - first
    drop = (
        tracemalloc.Filter(False, tracemalloc.__file__),
        tracemalloc.Filter(False, "<frozen importlib._bootstrap>"),
    )
    traced = Path(f"{stem}2.tm")
    b = tracemalloc.Snapshot.load(str(traced)).filter_traces(drop) if traced.exists() else None
    stats = [] if b is None else b.statistics("traceback")
    total = sum(stat.size for stat in stats)
    print(
        f"probe: Python allocations made after the first probe and alive at the second "
        f"(tracemalloc): {total / 1024:.0f} KiB over {sessions} Sessions = "
        f"{total / 1024 / sessions:.2f} KiB/Session",
        file=sys.stderr,
    )
    for stat in stats[:top]:
        print(
            f"  {stat.size / 1024 / sessions:+7.3f} KiB/Session "
            f"{stat.count / sessions:+7.2f} blocks/Session",
            file=sys.stderr,
        )
        for line in stat.traceback.format(limit=8, most_recent_first=True):
            print("      " + line.strip(), file=sys.stderr)
    with open(f"{stem}1.types", "rb") as f:
        ta: dict[str, int] = pickle.load(f)
    with open(f"{stem}2.types", "rb") as f:
        tb: dict[str, int] = pickle.load(f)
    grown = sorted(((tb.get(k, 0) - ta.get(k, 0), k) for k in tb.keys() | ta.keys()), reverse=True)
    print("probe: live gc-tracked objects, growth per Session by type:", file=sys.stderr)
    for diff, name in grown[:top]:
        print(f"  {diff / sessions:+8.2f} {name}", file=sys.stderr)
    sa, sb = smaps(Path(f"{stem}1.smaps")), smaps(Path(f"{stem}2.smaps"))
    print("probe: /proc/PID/smaps_rollup, KiB/Session:", file=sys.stderr)
    for key in ("Rss", "Anonymous", "Private_Dirty", "Private_Clean", "Shared_Clean"):
        if key in sa and key in sb:
            print(f"  {key:14s} {(sb[key] - sa[key]) / sessions:+8.2f}", file=sys.stderr)


def sse(lines: Iterator[str]) -> Iterator[tuple[str, str]]:
    """``(event, data)`` of each Server-Sent Event."""
    event, data = "message", ""
    for line in lines:
        if not line:
            yield event, data
            event, data = "message", ""
        elif line.startswith("event:"):
            event = line[6:].strip()
        elif line.startswith("data:"):
            data = line[5:].strip()


def run_session(client: httpx.Client, turns: int) -> int:
    """One Session over HTTP, opened, ``turns`` turns, closed; returns the events read."""
    opened = client.post(f"/agents/{AGENT}/sessions", json={"purpose": "soak"})
    opened.raise_for_status()
    path = f"/agents/{AGENT}/sessions/{opened.json()['session_id']}"
    read = 0
    with client.stream("GET", path + "/events") as response:
        response.raise_for_status()
        events = sse(response.iter_lines())
        for turn in range(turns):
            sent = client.post(
                path + "/messages",
                json={"text": TURNS[turn % len(TURNS)]},
                headers={"Idempotency-Key": str(uuid.uuid4())},
            )
            sent.raise_for_status()
            for kind, data in events:
                read += 1
                if kind == "error":
                    raise RuntimeError(f"the event stream failed: {data}")
                if kind == "turn_done":
                    break
        closed = client.delete(path)
        closed.raise_for_status()
        for kind, _ in events:
            read += 1
            if kind == "session_closed":
                break
    return read


def soak(args: argparse.Namespace) -> dict[str, object]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LLM_", "EMBEDDING_"))}
    env["PYTHONUNBUFFERED"] = "1"
    model_command = [sys.executable, "-m", "xai.testing", "serve"]
    model_command += ["--script", str(args.script)] if args.script else ["--demo"]
    with tempfile.TemporaryDirectory(prefix="xai-soak-") as tmp:
        model = Child(model_command, "listening on ", env=env, on_stderr=False)
        gateway: Child | None = None
        try:
            base = model.url()
            env_gateway = {
                **env,
                "LLM_BASE_URL": base,
                "LLM_API_KEY": "test-key",
                "LLM_MODEL": "xai-scripted",
                "XAI_HOME": str(Path(tmp) / "home"),
            }
            root = str(Path(tmp) / "agents")
            launch = [sys.executable, "-m", "xai"]
            stem = str(Path(tmp) / "probe")
            if args.tracemalloc:
                launch = [sys.executable, "-c", PROBE]
                env_gateway["XAI_SOAK_PROBE"] = stem
                env_gateway["XAI_SOAK_FRAMES"] = str(args.frames)
            points = (args.sessions // 3, args.sessions * 5 // 6)
            gateway = Child(
                [*launch, "serve", "--root", root, "--port", "0"],
                "listening at ",
                env=env_gateway,
                on_stderr=True,
            )
            url = gateway.url()
            pid = gateway.process.pid
            samples: list[tuple[int, int]] = []
            events = 0
            started = time.monotonic()
            with httpx.Client(base_url=url, timeout=120) as client:
                samples.append((0, rss_kib(pid)))
                for done in range(1, args.sessions + 1):
                    events += run_session(client, args.turns_per_session)
                    if args.tracemalloc and done in points:
                        probe(pid, stem, points.index(done) + 1)
                    if done % args.sample_every == 0 or done == args.sessions:
                        samples.append((done, rss_kib(pid)))
                        print(
                            f"  {done:5d} sessions closed  rss {samples[-1][1] / 1024:7.1f} MiB",
                            file=sys.stderr,
                        )
                facts = client.get(f"/agents/{AGENT}/facts").json()
            seconds = time.monotonic() - started
            fds = len(os.listdir(f"/proc/{pid}/fd"))
            if args.tracemalloc:
                report_probes(stem, *points, top=args.top)
        finally:
            if gateway is not None:
                gateway.stop()
            model.stop()
    later = after_warmup(samples, args.sessions, args.warmup)
    return {
        "samples": samples,
        "slope": slope(later),
        "seconds": seconds,
        "events": events,
        "facts": len(facts),
        "fds": fds,
    }


# -- the memory part: what the same Sessions add to a long-term memory, alone ---------------


def memory_child(args: argparse.Namespace) -> None:
    """Do the memory's work of ``--sessions`` Sessions and print its RSS samples (JSON)."""
    import ctypes
    import gc

    import anyio

    from xai.agent._give_back import EVERY
    from xai.memory import IndexStore, LongTermMemory, default_embedder
    from xai.messages import Episode, EpisodeOrigin, MemoryCandidate, new_id

    answers = ("Nice to meet you, Ada!", "(scripted model) I know about weather.", "Ada.")
    facts = ("The user's name is Ada.", "The user grows tomatoes on their balcony.")

    async def main() -> None:
        with tempfile.TemporaryDirectory(prefix="xai-soak-memory-") as tmp:
            store = IndexStore.local(Path(tmp) / ".index")
            embedder = default_embedder()
            memory = LongTermMemory(
                Path(tmp) / "memory", embedder=embedder, store=store, namespace=AGENT
            )
            samples: list[tuple[int, int]] = []
            async with memory:
                pid = os.getpid()
                samples.append((0, rss_kib(pid)))
                for done in range(1, args.sessions + 1):
                    session_id = new_id()
                    episodes: list[Episode] = []
                    now = time.time()
                    for turn in range(args.turns_per_session):
                        said: tuple[tuple[EpisodeOrigin, str], ...] = (
                            ("user", TURNS[turn % len(TURNS)]),
                            ("assistant", answers[turn % len(answers)]),
                        )
                        for speaker, text in said:
                            episodes.append(
                                Episode(
                                    id=new_id(),
                                    session_id=session_id,
                                    turn=turn + 1,
                                    seq=len(episodes),
                                    origin=speaker,
                                    speaker=speaker,
                                    text=text,
                                    at=now,
                                )
                            )
                    await memory.record_episodes(episodes)
                    candidates = tuple(
                        MemoryCandidate(
                            text=fact,
                            kind="fact",
                            confidence=0.9,
                            evidence=(episodes[0].id,),
                            session_id=session_id,
                        )
                        for fact in facts[: args.turns_per_session]
                    )
                    await memory.adjudicate(candidates, session_id=session_id)
                    if done % EVERY == 0:  # what the host does as Sessions close
                        gc.collect()
                        trim = ctypes.CDLL(None).malloc_trim if sys.platform == "linux" else None
                        if trim is not None:
                            trim(0)
                    if done % args.sample_every == 0 or done == args.sessions:
                        samples.append((done, rss_kib(pid)))
            store.close()
        print(json.dumps(samples))

    anyio.run(main)


def memory_part(args: argparse.Namespace) -> dict[str, object]:
    command = [sys.executable, str(Path(__file__).resolve()), "--memory-child"]
    command += [
        "--sessions",
        str(args.sessions),
        "--turns-per-session",
        str(args.turns_per_session),
    ]
    command += ["--sample-every", str(args.sample_every)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=1800, check=False)
    lines = done.stdout.strip().splitlines()
    if done.returncode != 0 or not lines:
        sys.stderr.write(done.stderr)
        raise RuntimeError(f"the memory child failed (exit code {done.returncode})")
    samples = [(int(x), int(y)) for x, y in json.loads(lines[-1])]
    later = after_warmup(samples, args.sessions, args.warmup)
    return {"samples": samples, "slope": slope(later)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--sessions", type=int, default=300)
    parser.add_argument("--turns-per-session", type=int, default=3)
    parser.add_argument("--sample-every", type=int, default=10, help="closed Sessions per sample")
    parser.add_argument(
        "--warmup", type=float, default=1 / 3, help="fraction of Sessions before the fit"
    )
    parser.add_argument("--script", type=Path, help="the model's Script (default: --demo)")
    parser.add_argument(
        "--no-memory-part", action="store_true", help="skip the memory-alone measurement"
    )
    parser.add_argument(
        "--tracemalloc",
        action="store_true",
        help="probe the gateway at 1/3 and 5/6 of the Sessions and print what grew "
        "(tracemalloc by traceback, live objects by type, smaps); slows the gateway",
    )
    parser.add_argument(
        "--frames", type=int, default=25, help="tracemalloc's frames (0: objects and smaps only)"
    )
    parser.add_argument("--top", type=int, default=15, help="growers to print")
    parser.add_argument("--memory-child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.sessions < 3 or args.turns_per_session < 1 or args.sample_every < 1:
        parser.error("--sessions >= 3, --turns-per-session >= 1, --sample-every >= 1")
    signal.signal(signal.SIGTERM, exit_on_sigterm)
    if args.memory_child:
        memory_child(args)
        return 0

    result = soak(args)
    served = float(result["slope"])  # type: ignore[arg-type]
    samples = result["samples"]
    assert isinstance(samples, list)
    print(
        f"xai serve: {args.sessions} Sessions x {args.turns_per_session} turns "
        f"in {result['seconds']:.0f} s ({result['events']} events read, {result['facts']} "
        f"facts, {result['fds']} fds at the end); RSS {samples[0][1] / 1024:.1f} -> "
        f"{samples[-1][1] / 1024:.1f} MiB; slope after warm-up {served:.2f} KiB/Session",
        file=sys.stderr,
    )
    memory_slope: float | None = None
    if not args.no_memory_part:
        memory = memory_part(args)
        memory_slope = float(memory["slope"])  # type: ignore[arg-type]
        print(
            f"the memory alone, same Sessions: slope {memory_slope:.2f} KiB/Session",
            file=sys.stderr,
        )
    report: dict[str, object] = {
        "sessions": args.sessions,
        "turns_per_session": args.turns_per_session,
        "seconds": round(float(result["seconds"]), 1),  # type: ignore[arg-type]
        "rss_start_mib": round(samples[0][1] / 1024, 1),
        "rss_end_mib": round(samples[-1][1] / 1024, 1),
        "rss_slope_kib_per_session": round(served, 2),
        "slope_vs_goal_ratio": round(served / GOAL_KIB_PER_SESSION, 3),
    }
    if memory_slope is not None:
        host = served - memory_slope
        report["memory_slope_kib_per_session"] = round(memory_slope, 2)
        report["host_slope_kib_per_session"] = round(host, 2)
        report["host_slope_vs_goal_ratio"] = round(host / GOAL_KIB_PER_SESSION, 3)
    print(json.dumps(report))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
