"""How long a large memory takes to open, with its index snapshot and without it.

``LongTermMemory.open()`` (the indexes opened at once, as ``lazy_index=False``; an
Agent's lazy memory does the same work on its first search) replays the ledger, reads
the episodes and opens both indexes: without a snapshot it reads every fact's version
and vector and every episode's vector from chromadb and builds the episodes' corpus;
with one (``index.snapshot``, ``xai/memory/_snapshot.py``) it reads them from there and
asks chromadb only for its count and what changed since. Each open runs in a fresh
child process (a process opens a store once), the two variants alternating, round
after round, on the same store:

- ``full``: the snapshot is moved aside first (the child writes a new one when it
  closes, as the memory does after a full read);
- ``snapshot``: the snapshot the previous child left.

Each child also times the first search after the open (its BM25 index of the facts is
built then) and checks that search finds the same hits either way.

    python bench/open_memory.py --store DIR               # a store built before
    python bench/open_memory.py --store DIR --build 100000  # fill it first (see bench/search.py)

Ends with one JSON line: each variant's median open time, ``snapshot_vs_full_open_ratio``
(goal: the snapshot's open at most 2 s at 100,000 facts + 100,000 episodes).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

import anyio

GOAL_S = 2.0
QUESTION = "what does Ana like to cook on weekends?"


async def child(store: Path) -> dict[str, object]:
    from xai.memory import LocalMiniLM, LongTermMemory, ScoredFact

    model = LocalMiniLM(cache_size=0)
    await model.embed(["warm-up"])  # the model's load is not the memory's open
    await model.embed_query(QUESTION)
    memory = LongTermMemory(store, sync=False, embedder=model)
    cpu = time.process_time()
    start = time.perf_counter()
    await memory.open()
    open_s = time.perf_counter() - start
    open_cpu_s = time.process_time() - cpu
    start = time.perf_counter()
    hits = await memory.search(QUESTION, k=5)
    search_s = time.perf_counter() - start
    figures: dict[str, object] = {
        "open_s": round(open_s, 3),
        "open_cpu_s": round(open_cpu_s, 3),
        "first_search_s": round(search_s, 3),
        "facts": len(memory.facts()),
        "episodes": len(memory.episodes),
        "hits": [h.fact.id if isinstance(h, ScoredFact) else h.episode.id for h in hits],
    }
    start = time.perf_counter()
    await memory.close()
    figures["close_s"] = round(time.perf_counter() - start, 3)
    return figures


def run_child(store: Path) -> dict[str, object]:
    done = subprocess.run(
        [sys.executable, __file__, "--child", str(store)],
        check=True,
        capture_output=True,
        text=True,
    )
    figures: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", type=Path, help="the memory's directory")
    parser.add_argument("--build", type=int, default=0, help="fill it to N facts + N episodes")
    parser.add_argument("--rounds", type=int, default=3, help="opens of each variant")
    parser.add_argument("--child", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child is not None:
        print(json.dumps(anyio.run(child, args.child)))
        return
    if args.store is None:
        parser.error("--store DIR is needed")
    if args.build:
        sys.path.insert(0, str(Path(__file__).parent))
        from search import build

        anyio.run(build, args.store, args.build, 0)
    snapshot = args.store / "index.snapshot"
    aside = args.store / "index.snapshot.aside"
    runs: dict[str, list[dict[str, object]]] = {"full": [], "snapshot": []}
    if not snapshot.exists():  # the first full open writes it
        runs["full"].append(run_child(args.store))
    for round_ in range(args.rounds):
        order = ["full", "snapshot"] if round_ % 2 else ["snapshot", "full"]
        for name in order:
            if name == "full":
                shutil.move(snapshot, aside)
            figures = run_child(args.store)
            if name == "full":
                if not snapshot.exists():  # (it was not written: put the old one back)
                    shutil.move(aside, snapshot)
                aside.unlink(missing_ok=True)
            runs[name].append(figures)
            print(
                f"round {round_ + 1} {name:8}: open {figures['open_s']:.2f} s "
                f"(CPU {figures['open_cpu_s']:.2f} s), first search "
                f"{figures['first_search_s']:.2f} s, close {figures['close_s']:.2f} s",
                flush=True,
            )
    hits = {json.dumps(r["hits"]) for rs in runs.values() for r in rs}
    if len(hits) != 1:
        raise AssertionError(f"the opens found different hits: {hits}")

    def median(name: str, key: str) -> float:
        return round(statistics.median(float(str(r[key])) for r in runs[name]), 3)

    full, fast = median("full", "open_s"), median("snapshot", "open_s")
    last = runs["snapshot"][-1]
    result = {
        "facts": last["facts"],
        "episodes": last["episodes"],
        "rounds": args.rounds,
        "full_open_s": full,
        "snapshot_open_s": fast,
        "full_open_cpu_s": median("full", "open_cpu_s"),
        "snapshot_open_cpu_s": median("snapshot", "open_cpu_s"),
        "full_first_search_s": median("full", "first_search_s"),
        "snapshot_first_search_s": median("snapshot", "first_search_s"),
        "snapshot_vs_full_open_ratio": round(fast / full, 3),
        "snapshot_bytes": snapshot.stat().st_size if snapshot.exists() else 0,
        "goal_max_open_s": GOAL_S,
        "goal_met": fast <= GOAL_S,
        "load_average": round(os.getloadavg()[0], 2),
    }
    print(json.dumps(result))


if __name__ == "__main__":
    main()
