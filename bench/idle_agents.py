"""What an idle Agent costs: N Agents, each with one open Session, hosted by one AgentHost.

Every Agent runs under ``AgentHost(root, ...)`` in a temporary directory, all sharing one
embedder (the offline MiniLM, ``default_embedder()``) and one in-process ``ScriptedProvider``
(no HTTP: what is measured is xai's and its dependencies' work alone). Each Agent gets one
Session through the host (``open_session``) and one turn in it (``send``: its journal is then
open, its history non-empty, its memory extraction done), and is then left idle.

Measured in this process (Linux ``/proc/self``): resident memory (``VmRSS``), threads
(``Threads``) and open file descriptors (``/proc/self/fd``, sorted into kinds by where they
point) before and after the N Agents; each figure per additional Agent is the difference over
N. A first Agent started before the baseline pays for the imports, the embedder's model and
whatever is made once per process. ``start_ms_p50/p95``: the time each ``host.agent(id)`` took
to start an Agent on a new directory (the lock, the files, the memory, the scheduler, the
journals found). The in-run baseline: ``--sessions`` bare Sessions (same provider, a journal
each, one turn, left open) measured the same way first, giving ``session_rss_kib``;
``agent_vs_session_rss_ratio`` is an idle Agent's RSS over an idle Session's.
``extrapolated_10k_agents_gib``: the baseline RSS plus 10,000 times the per-Agent RSS.
``first_search_ms_p50/p95``: then the first ``host.search_memory`` of up to 50 of the idle
Agents (their memory's collections opened in the host's shared index store and its
episodes embedded: what a lazy open costs the first caller).
``threads_per_agent_by_name`` names the new threads; ``--tracemalloc`` adds
``python_kib_per_agent_by_package``: the Python allocations (not native ones: chromadb's
Rust core is invisible to it) per Agent, by the package that made them.

``--max-agents K`` passes the cap to the host (an xai with eviction): the Agents past it are
suspended as the run goes, so the figures are those of K running Agents and N - K suspended.

``--mood-ab K`` adds what mood (issue 30) costs an idle Agent, measured in the same run: K
idle Agents (one Session, one turn each) with mood off, then K with mood on, their Python
allocations per Agent (tracemalloc, for this part only) and RSS per Agent:
``mood_python_kib_per_agent_on/off`` and ``mood_python_kib_per_agent_diff``.

Ends with one JSON line (snake_case; ratios named ``*_ratio``). Run::

    python bench/idle_agents.py [--agents 200] [--sessions 200] [--max-agents K] [--mood-ab K]

Not for tests (it starts hundreds of Agents); ``--agents 20`` is a quick look.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import sys
import tempfile
import time
import tracemalloc
from collections import Counter
from pathlib import Path
from typing import Any

import anyio

from xai.agent import AgentConfig, AgentHost, OpenSession
from xai.memory import default_embedder
from xai.mood import MoodConfig
from xai.session import EXTRACTION_MARKER, Session
from xai.testing import Reply, ScriptedProvider


def model(body: Any) -> Reply:
    text = body["messages"][-1]["content"]
    if isinstance(text, str) and text.startswith(EXTRACTION_MARKER):
        return Reply(text='{"candidates": []}')
    return Reply(text="Noted.")


def status() -> dict[str, int]:
    """RSS in KiB and threads, from /proc/self/status."""
    out: dict[str, int] = {}
    for line in Path("/proc/self/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "Threads"):
            out[key] = int(value.split()[0])
    return out


def fds() -> dict[int, str]:
    out: dict[int, str] = {}
    for name in os.listdir("/proc/self/fd"):
        try:
            out[int(name)] = os.readlink(f"/proc/self/fd/{name}")
        except OSError:
            continue
    return out


def kind(target: str) -> str:
    if target.endswith("journal.jsonl"):
        return "journal"
    if target.endswith("agent.lock"):
        return "agent_lock"
    if target.endswith("ledger.jsonl"):
        return "ledger"
    if "episodes" in target:
        return "episodes"
    if "/index/" in target or target.endswith(".sqlite3") or "chroma" in target:
        return "chroma_files"
    if target.startswith("anon_inode:"):
        return target.split(":", 1)[1].strip("[]")
    if target.startswith(("pipe:", "socket:")):
        return target.split(":", 1)[0]
    return "other"


def thread_names() -> Counter[str]:
    """Threads by name (``/proc/self/task/*/comm``, digits dropped: pools count as one)."""
    names: Counter[str] = Counter()
    for task in os.listdir("/proc/self/task"):
        try:
            name = Path(f"/proc/self/task/{task}/comm").read_text().strip()
        except OSError:
            continue
        names[name.rstrip("0123456789-_") or name] += 1
    return names


def python_kib_by_package(snapshot: tracemalloc.Snapshot) -> Counter[str]:
    """Python allocations (not the Rust or C ones) by the package that made them."""
    out: Counter[str] = Counter()
    for stat in snapshot.statistics("filename"):
        path = stat.traceback[0].filename
        if "/xai/" in path:
            part = path.split("/xai/", 1)[1].split("/")[0].removesuffix(".py")
            key = f"xai.{part}"
        elif "site-packages/" in path:
            key = path.split("site-packages/", 1)[1].split("/")[0].removesuffix(".py")
        else:
            key = "stdlib"
        out[key] += stat.size
    return out


class Sample:
    def __init__(self) -> None:
        gc.collect()
        s = status()
        self.rss_kib = s["VmRSS"]
        self.threads = s["Threads"]
        self.thread_names = thread_names()
        self.fds = fds()
        self.python = (
            python_kib_by_package(tracemalloc.take_snapshot())
            if tracemalloc.is_tracing()
            else Counter()
        )


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


async def idle_sessions(provider: ScriptedProvider, root: Path, count: int) -> float:
    """KiB of RSS per idle Session (a journal, one turn, left open)."""
    if count <= 0:
        return 0.0
    async with anyio.create_task_group() as group:
        sessions: list[Session] = []
        warm = Session(provider, directory=root / "warm")
        await group.start(warm.run)
        await warm.send("hello")
        before = Sample()
        for i in range(count):
            session = Session(provider, directory=root / f"s{i}")
            await group.start(session.run)
            await session.send("hello")
            sessions.append(session)
        after = Sample()
        for session in [warm, *sessions]:
            await session.close()
    return (after.rss_kib - before.rss_kib) / count


async def main(args: argparse.Namespace) -> dict[str, Any]:
    provider = ScriptedProvider()
    provider.script.add_responder(model)
    embedder = default_embedder()
    await embedder.embed(["warm up"])
    options: dict[str, Any] = {}
    if args.max_agents is not None:
        options["max_agents"] = args.max_agents
    with tempfile.TemporaryDirectory(prefix="xai-bench-agents-") as tmp:
        root = Path(tmp)
        session_kib = await idle_sessions(provider, root / "bare", args.sessions)
        mood = (
            await mood_footprint(provider, embedder, root / "mood", args.mood_ab)
            if args.mood_ab
            else {}
        )
        host = AgentHost(
            root / "agents",
            lambda _: provider,
            embedder=embedder,
            config=AgentConfig(),
            **options,
        )
        async with host:

            async def one(agent_id: str) -> float:
                started = time.perf_counter()
                await host.agent(agent_id)
                took = time.perf_counter() - started
                info = await host.open_session(agent_id, OpenSession())
                await host.send(agent_id, info.session_id, "hello")
                return took * 1000

            await one("warm")  # what is made once per process is paid here
            await host.search_memory("warm", "hello")  # and the shared index store's start
            before = Sample()
            starts = [await one(f"a{i}") for i in range(args.agents)]
            after = Sample()
            running = len(host.agent_ids)
            searches = []  # each Agent's first: its collections opened, its episodes indexed
            for i in range(min(args.agents, 50)):
                started = time.perf_counter()
                await host.search_memory(f"a{i}", "what did I say?")
                searches.append((time.perf_counter() - started) * 1000)
        n = args.agents
        new_fds = Counter(kind(t) for fd, t in after.fds.items() if before.fds.get(fd) != t)
        rss_kib = (after.rss_kib - before.rss_kib) / n
        return {
            "agents": n,
            "agents_running": running,
            "max_agents": args.max_agents,
            "rss_kib_per_agent": round(rss_kib, 1),
            "threads_per_agent": round((after.threads - before.threads) / n, 2),
            "fds_per_agent": round((len(after.fds) - len(before.fds)) / n, 2),
            "fds_per_agent_by_kind": {k: round(v / n, 2) for k, v in sorted(new_fds.items())},
            "threads_per_agent_by_name": {
                k: round(v / n, 2)
                for k, v in sorted((after.thread_names - before.thread_names).items())
            },
            "python_kib_per_agent_by_package": {
                k: round(v / n / 1024, 1) for k, v in (after.python - before.python).most_common(12)
            },
            "start_ms_p50": round(statistics.median(starts), 2),
            "start_ms_p95": round(percentile(starts, 0.95), 2),
            "first_search_ms_p50": round(statistics.median(searches), 2),
            "first_search_ms_p95": round(percentile(searches, 0.95), 2),
            "session_rss_kib": round(session_kib, 1),
            "agent_vs_session_rss_ratio": round(rss_kib / session_kib, 1) if session_kib else None,
            "baseline_rss_mib": round(before.rss_kib / 1024, 1),
            "total_rss_mib": round(after.rss_kib / 1024, 1),
            "threads_total": after.threads,
            "extrapolated_10k_agents_gib": round(
                (before.rss_kib + 10_000 * rss_kib) / (1024 * 1024), 2
            ),
            **mood,
        }


async def mood_footprint(
    provider: ScriptedProvider, embedder: Any, root: Path, count: int
) -> dict[str, float]:
    """Python KiB (and RSS KiB) per idle Agent with mood off, then on: hosts of their own."""
    out: dict[str, float] = {}
    tracing = tracemalloc.is_tracing()
    for name, mood in (("off", MoodConfig(enabled=False)), ("on", MoodConfig())):
        config = AgentConfig(mood=mood)
        async with AgentHost(
            root / name, lambda _: provider, embedder=embedder, config=config
        ) as host:

            async def one(agent_id: str) -> None:
                await host.agent(agent_id)
                info = await host.open_session(agent_id, OpenSession())
                await host.send(agent_id, info.session_id, "Thanks, that is great news!")
                agent = await host.agent(agent_id)
                while not all(s.idle for s in agent.sessions.values()):  # extraction, mood done
                    await anyio.wait_all_tasks_blocked()

            await one("warm")
            if not tracing:
                tracemalloc.start()
            gc.collect()
            before_rss, before = status()["VmRSS"], tracemalloc.get_traced_memory()[0]
            for i in range(count):
                await one(f"{name}{i}")
            gc.collect()
            after_rss, after = status()["VmRSS"], tracemalloc.get_traced_memory()[0]
            if not tracing:
                tracemalloc.stop()
        out[f"mood_python_kib_per_agent_{name}"] = round((after - before) / count / 1024, 2)
        out[f"mood_rss_kib_per_agent_{name}"] = round((after_rss - before_rss) / count, 1)
    out["mood_python_kib_per_agent_diff"] = round(
        out["mood_python_kib_per_agent_on"] - out["mood_python_kib_per_agent_off"], 2
    )
    return out


def parse() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--agents", type=int, default=200)
    parser.add_argument("--sessions", type=int, default=200, help="idle Sessions, the baseline")
    parser.add_argument("--max-agents", type=int, default=None, help="AgentHost's cap")
    parser.add_argument(
        "--mood-ab", type=int, default=0, help="idle Agents with mood off, then on (issue 30)"
    )
    parser.add_argument(
        "--tracemalloc",
        action="store_true",
        help="also break the Python allocations down by package (slower; RSS inflated)",
    )
    return parser.parse_args()


if __name__ == "__main__":
    arguments = parse()
    if arguments.tracemalloc:
        tracemalloc.start()
    result = anyio.run(main, arguments)
    print(json.dumps(result), flush=True)
    sys.exit(0)
