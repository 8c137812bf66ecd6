"""What a standalone Agent's first memory search leaves behind: N Agents, S of them searched.

Every Agent is a plain ``xai.agent.Agent`` (no ``AgentHost``) on a directory of its own,
with the offline defaults (the local MiniLM, ``default_embedder()``) and one in-process
``ScriptedProvider``; each runs, idle. Then S of them search their memory once
(``agent.memory.search``: the first search opens the memory's indexes).

Measured in this process (Linux ``/proc/self``): resident memory (``VmRSS``), threads and
open file descriptors after the N Agents started (``idle``) and after the S searches
(``searched``). The searches' cost is the difference, given per searched Agent
(``*_per_searched_agent``) and over all N (``*_per_agent``). A first Agent, started and
searched before anything is measured, pays for the imports, the model and what is made
once per process. ``second_search_*_ms``: a second search, by the last Agent searched
(its chromadb client still open) and by the first (its client closed since: see
``xai/memory/_clients.py``).

``--baseline-tree DIR`` runs this same bench in a child process with ``DIR`` first on the
path (e.g. the code before a change) right after this one, and adds ``baseline`` and the
``*_ratio`` of each figure (this tree over the baseline; 0 over 0 is 1).

Ends with one JSON line (snake_case; ratios named ``*_ratio``). Run::

    python bench/agents_footprint.py [--agents 1000] [--searched 50] [--baseline-tree DIR]
"""

from __future__ import annotations

import argparse
import ctypes
import gc
import json
import os
import subprocess
import sys
import tempfile
import time
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import anyio

from xai.agent import Agent, AgentConfig
from xai.testing import Reply, ScriptedProvider


def status() -> tuple[int, int, int]:
    """RSS in KiB, threads and open file descriptors, from /proc/self."""
    rss = threads = 0
    for line in Path("/proc/self/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key == "VmRSS":
            rss = int(value.split()[0])
        elif key == "Threads":
            threads = int(value.split()[0])
    return rss, threads, len(os.listdir("/proc/self/fd"))


def sample() -> tuple[int, int, int]:
    """After a garbage collection and, with glibc, ``malloc_trim``: the figures are of
    memory in use, not of free heap the allocator keeps (which the memory's own trim,
    when it parks a client, would otherwise turn into a negative cost)."""
    gc.collect()
    trim = _trim()
    if trim is not None:
        trim(0)
    return status()


def _trim() -> Any:
    try:
        return ctypes.CDLL(None).malloc_trim
    except (OSError, AttributeError):
        return None


async def measure(agents: int, searched: int) -> dict[str, Any]:
    provider = ScriptedProvider()
    provider.script.add_responder(lambda body: Reply(text="Noted."))
    config = AgentConfig()
    with tempfile.TemporaryDirectory(prefix="xai-bench-footprint-") as tmp:
        root = Path(tmp)
        async with AsyncExitStack() as stack:
            warm = await stack.enter_async_context(Agent(root / "warm", provider, config=config))
            await warm.memory.search("hello")  # the imports, the model, a first client
            before = sample()
            started = time.perf_counter()
            running = [
                await stack.enter_async_context(Agent(root / f"a{i}", provider, config=config))
                for i in range(agents)
            ]
            start_s = time.perf_counter() - started
            idle = sample()
            searches = []
            for agent in running[:searched]:
                begun = time.perf_counter()
                await agent.memory.search("what did I say?")
                searches.append((time.perf_counter() - begun) * 1000)
            after = sample()
            again: dict[str, float] = {}
            if searched >= 2:  # the last one's client is open; the first one's was parked
                for label, agent in (("open", running[searched - 1]), ("parked", running[0])):
                    begun = time.perf_counter()
                    await agent.memory.search("and what else?")
                    again[label] = round((time.perf_counter() - begun) * 1000, 1)
    n, s = agents, max(searched, 1)
    searches.sort()
    return {
        "agents": agents,
        "searched": searched,
        "idle_rss_kib_per_agent": round((idle[0] - before[0]) / n, 1),
        "idle_threads_per_agent": round((idle[1] - before[1]) / n, 3),
        "search_rss_kib_per_searched_agent": round((after[0] - idle[0]) / s, 1),
        "search_threads_per_searched_agent": round((after[1] - idle[1]) / s, 3),
        "search_fds_per_searched_agent": round((after[2] - idle[2]) / s, 3),
        "search_rss_kib_per_agent": round((after[0] - idle[0]) / n, 2),
        "search_threads_per_agent": round((after[1] - idle[1]) / n, 4),
        "first_search_ms_p50": round(searches[len(searches) // 2], 1) if searches else None,
        "first_search_ms_max": round(searches[-1], 1) if searches else None,
        "second_search_open_client_ms": again.get("open"),
        "second_search_parked_client_ms": again.get("parked"),
        "start_ms_per_agent": round(start_s * 1000 / n, 2),
        "threads_total": after[1],
        "fds_total": after[2],
        "rss_total_mib": round(after[0] / 1024, 1),
    }


_COMPARED = (
    "search_rss_kib_per_searched_agent",
    "search_threads_per_searched_agent",
    "search_fds_per_searched_agent",
    "first_search_ms_p50",
    "idle_rss_kib_per_agent",
)


def baseline(tree: str, agents: int, searched: int) -> dict[str, Any]:
    env = {**os.environ, "PYTHONPATH": tree}
    done = subprocess.run(
        [sys.executable, __file__, "--agents", str(agents), "--searched", str(searched)],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    )
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def ratio(new: float | None, old: float | None) -> float | None:
    if new is None or old is None:
        return None
    if old == 0:
        return 1.0 if new == 0 else None
    return round(new / old, 3)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--agents", type=int, default=1000)
    parser.add_argument("--searched", type=int, default=50)
    parser.add_argument("--baseline-tree", default=None, help="run the bench there too")
    args = parser.parse_args()
    result = anyio.run(measure, args.agents, args.searched)
    if args.baseline_tree is not None:
        old = baseline(args.baseline_tree, args.agents, args.searched)
        result["baseline"] = {k: old[k] for k in _COMPARED}
        for key in _COMPARED:
            result[f"{key.removesuffix('_p50')}_ratio"] = ratio(result[key], old[key])
        print(
            "searched Agent, this tree vs baseline: "
            f"{result['search_rss_kib_per_searched_agent']} vs "
            f"{old['search_rss_kib_per_searched_agent']} KiB, "
            f"{result['search_threads_per_searched_agent']} vs "
            f"{old['search_threads_per_searched_agent']} threads",
            file=sys.stderr,
        )
    print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
