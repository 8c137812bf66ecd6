"""Search and prefix at 100k + 100k as ratios that hold on any CPU, in fresh opens of one store.

Issue 35's goals, in each of ``--opens`` (10) fresh processes opening the same store:

- ``own_vs_query_embed``: a search's own work (its p50 less the query embedding's p50)
  against the query embedding's p50: at most 0.5;
- ``query_vs_document_embed``: the query encoder's p50 (``query_embedding(model)``, as
  search calls it) against the document model's for one text (``embed([text])``): at
  most 0.5;
- the same two for the memory prefix with a purpose (``prefix_own_vs_query_embed``).

Each open measures, in rounds that alternate the series, ``memory.search(q, k=5)``,
``memory.prefix(purpose, budget_tokens=600)``, ``model.embed_query(q)`` and
``model.embed([q])`` over the same 100 questions (``bench/memory.py``'s), the model's
text caches off so every call embeds. Absolute figures are reported too, with the CPU's
name and flags (``/proc/cpuinfo``): a millisecond means different things on different
CPUs, a ratio measured in one process much less so.

    python bench/search_ratios.py --store DIR [--opens 10]

The store is ``bench/search.py``'s (``--build 100000`` there, or ``bench/open_memory.py``);
with its index snapshot each open takes a few seconds. Ends with one JSON line.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import anyio

GOAL = 0.5


def cpu() -> dict[str, object]:
    name, flags = "unknown", list[str]()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            key, _, value = line.partition(":")
            if key.strip() == "model name" and name == "unknown":
                name = value.strip()
            elif key.strip() == "flags" and not flags:
                flags = value.split()
    except OSError:
        pass
    wanted = ("avx", "avx2", "avx512f", "avx512_vnni", "avx_vnni", "amx_int8", "fma", "f16c")
    return {"cpu": name, "cpu_flags": [f for f in wanted if f in flags], "cores": os.cpu_count()}


async def child(store: Path, rounds: int) -> dict[str, float]:
    sys.path.insert(0, str(Path(__file__).parent))
    from memory import PURPOSES, QUERIES, phrases

    from xai.memory import LocalMiniLM, LongTermMemory, query_embedding

    questions = phrases(QUERIES, 100, 3)
    purposes = phrases(PURPOSES, 50, 4)
    model = LocalMiniLM(cache_size=0)
    memory = LongTermMemory(store, sync=False, embedder=model)
    embed_question = query_embedding(model)  # the encoder a search calls, the same way
    await memory.open()
    try:
        series: dict[str, Callable[[int], Awaitable[object]]] = {
            "search": lambda i: memory.search(questions[i % 100], k=5),
            "prefix": lambda i: memory.prefix(purposes[i % 50], budget_tokens=600),
            "query_embed": lambda i: embed_question(questions[i % 100]),
            "document_embed": lambda i: model.embed([questions[i % 100]]),
        }
        for call in series.values():  # warm: models loaded, indexes touched
            for i in range(10):
                await call(i)
        samples: dict[str, list[float]] = {name: [] for name in series}
        for round_ in range(rounds):
            names = list(series) if round_ % 2 == 0 else list(series)[::-1]
            for name in names:
                for i in range(100):
                    start = time.perf_counter()
                    await series[name](i)
                    samples[name].append(time.perf_counter() - start)
    finally:
        await memory.close()
    return {f"{name}_p50_ms": statistics.median(v) * 1000 for name, v in samples.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", type=Path, required=True)
    parser.add_argument("--opens", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=2, help="rounds of 100 calls a series")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(anyio.run(child, args.store, args.rounds)))
        return
    opens = []
    for n in range(args.opens):
        done = subprocess.run(
            [
                sys.executable,
                __file__,
                "--child",
                "--store",
                str(args.store),
                "--rounds",
                str(args.rounds),
            ],
            check=True,
            capture_output=True,
            text=True,
        )
        p50 = json.loads(done.stdout.strip().splitlines()[-1])
        query, document = p50["query_embed_p50_ms"], p50["document_embed_p50_ms"]
        figures = {
            **{k: round(v, 3) for k, v in p50.items()},
            "own_vs_query_embed_ratio": round((p50["search_p50_ms"] - query) / query, 3),
            "prefix_own_vs_query_embed_ratio": round((p50["prefix_p50_ms"] - query) / query, 3),
            "query_vs_document_embed_ratio": round(query / document, 3),
        }
        opens.append(figures)
        print(
            f"open {n + 1}: search {p50['search_p50_ms']:.2f} ms, prefix "
            f"{p50['prefix_p50_ms']:.2f} ms, query embedding {query:.2f} ms, document "
            f"model one text {document:.2f} ms; own/query {figures['own_vs_query_embed_ratio']}, "
            f"prefix own/query {figures['prefix_own_vs_query_embed_ratio']}, "
            f"query/document {figures['query_vs_document_embed_ratio']}",
            flush=True,
        )
    keys = [k for k in opens[0] if k.endswith("_ratio")]
    worst = {f"worst_{k}": max(float(o[k]) for o in opens) for k in keys}
    result = {
        **cpu(),
        "opens": len(opens),
        **{
            f"median_{k}": round(statistics.median(float(o[k]) for o in opens), 3) for k in opens[0]
        },
        **worst,
        "goal_max_ratio": GOAL,
        "goal_met_in_every_open": all(v <= GOAL for v in worst.values()),
        "load_average": round(os.getloadavg()[0], 2),
    }
    print(json.dumps(result))


if __name__ == "__main__":
    main()
