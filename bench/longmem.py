"""Recall on the synthetic LongMemEval-shaped benchmark: ``rag``, ``hybrid`` and ``xai``
in the same run, per question type, with each backend's ratio to plain turn RAG.

The data is generated here (``longmem_synth.py``, seeded) into a temporary folder and
run through ``xai.eval.run_eval`` with the offline MiniLM embedder; the ``xai`` backend's
Sessions talk to the offline scripted model (verbatim extraction), so no LLM is needed.
It is a held-out check: nothing in xai was tuned on it.

    python bench/longmem.py [--seed 0] [--questions 40] [--backend rag,hybrid,xai] [--keep DIR]
                            [--assistant-words N]

``--assistant-words N`` pads every assistant turn to about N words (see
``longmem_synth.py``): LongMemEval's assistant turns run to hundreds of words.

Figures: recall@10 and recall@50 (share of evidence turns in the top k), session
recall@10, per type and overall; evidence turns not in the top 50 ("unreachable").
Abstentions have no evidence and are left out of recall. The last line is one JSON
object (snake_case keys).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import shutil
import tempfile
import time
from collections import defaultdict
from collections.abc import Sequence
from contextlib import AsyncExitStack
from pathlib import Path

import anyio
from longmem_synth import QUESTION_TYPES, write

from xai import __version__
from xai.eval import (
    EvalModel,
    HybridRetrieval,
    MemoryBackend,
    RunInfo,
    TurnVectorRAG,
    XaiAgentMemory,
    load_longmemeval,
    load_records,
    run_eval,
)
from xai.memory import LocalMiniLM
from xai.providers import OpenAIProvider
from xai.testing import OpenAIWireServer

KS = (10, 50)


def _mean(values: Sequence[float]) -> float:
    return round(100 * sum(values) / len(values), 1) if values else 0.0


async def measure(
    data: Path, out: Path, names: Sequence[str], limit: int | None = None
) -> dict[str, float | int | str]:
    """Run ``names`` on ``data`` into ``out``; the figures, flat, snake_case."""
    samples = load_longmemeval(data)[:limit]
    # Filler sessions repeat across samples (a shared pool): keep their vectors.
    embedder = LocalMiniLM(cache_size=200_000)
    timings: dict[str, float] = {}
    async with AsyncExitStack() as stack:
        server = await stack.enter_async_context(OpenAIWireServer())
        # The offline model answers each input with the reply the dataset recorded for it,
        # so the assistant's turns become the Sessions' answers (and episodes), as in `xai eval`.
        offline = EvalModel()
        server.script.add_responder(offline)
        scripted = await stack.enter_async_context(OpenAIProvider(server.llm_config()))
        for name in names:
            backend: MemoryBackend
            if name == "rag":
                backend = TurnVectorRAG(out / name / "stores", embedder, depth=max(KS))
            elif name == "hybrid":
                backend = HybridRetrieval(embedder, depth=max(KS))
            elif name == "xai":
                backend = XaiAgentMemory(
                    out / name / "stores", scripted, embedder, depth=max(KS), replies=offline
                )
            else:
                raise SystemExit(f"unknown backend {name!r}: choose from rag, hybrid, xai")
            stack.push_async_callback(backend.aclose)
            info = RunInfo(
                dataset="longmemeval",
                data=str(data),
                backends=(name,),
                ks=KS,
                context_k=10,
                memory_model="scripted (offline, verbatim extraction)" if name == "xai" else None,
                embedder=embedder.name,
                started=dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
                xai_version=__version__,
            )
            started = time.perf_counter()
            await run_eval(samples, [backend], info=info, out=out / name)
            timings[name] = time.perf_counter() - started
    return figures(out, names, timings)


def figures(
    out: Path, names: Sequence[str], timings: dict[str, float]
) -> dict[str, float | int | str]:
    result: dict[str, float | int | str] = {}
    for name in names:
        by_type: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
        unreachable = evidence = 0
        for record in load_records(out / name, name):
            for q in record.questions:
                if not q.evidence:
                    continue
                top = set((q.retrieved or ())[: max(KS)])
                evidence += len(q.evidence)
                unreachable += sum(1 for e in q.evidence if e not in top)
                for kind in (q.category, "all"):
                    for k in KS:
                        by_type[kind][f"recall{k}"].append(q.recall.get(k, 0.0))
                    by_type[kind]["session_recall10"].append(q.session_recall.get(10, 0.0))
        for kind, metrics in by_type.items():
            key = kind.replace("-", "_")
            for metric, values in metrics.items():
                result[f"{name}_{key}_{metric}"] = _mean(values)
        result[f"{name}_questions_with_evidence"] = len(by_type["all"]["recall10"])
        result[f"{name}_evidence_turns"] = evidence
        result[f"{name}_unreachable_at_50"] = unreachable
        result[f"{name}_wall_s"] = round(timings.get(name, 0.0), 1)
    if "rag" in names:
        for name in names:
            if name == "rag":
                continue
            for kind in ("all", *QUESTION_TYPES):
                key = kind.replace("-", "_")
                for metric in ("recall10", "recall50", "session_recall10"):
                    base = float(result.get(f"rag_{key}_{metric}", 0.0))
                    mine = float(result.get(f"{name}_{key}_{metric}", 0.0))
                    if base:
                        suffix = "" if kind == "all" else f"_{key}"
                        result[f"{name}_vs_rag{suffix}_{metric}_ratio"] = round(mine / base, 3)
    return result


def show(result: dict[str, float | int | str], names: Sequence[str]) -> None:
    header = f"{'type':<27}" + "".join(f"{n + ' @10/@50/s@10':>24}" for n in names)
    print(header)
    for kind in (*QUESTION_TYPES, "all"):
        key = kind.replace("-", "_")
        row = f"{kind:<27}"
        for name in names:
            cells = [
                result.get(f"{name}_{key}_{m}")
                for m in ("recall10", "recall50", "session_recall10")
            ]
            row += f"{' / '.join('-' if c is None else f'{c:5.1f}' for c in cells):>24}"
        print(row)
    for name in names:
        print(
            f"{name}: {result[f'{name}_unreachable_at_50']} of {result[f'{name}_evidence_turns']} "
            f"evidence turns not in the top 50; {result[f'{name}_wall_s']} s"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--questions", type=int, default=40, help="questions generated")
    parser.add_argument("--backend", default="rag,hybrid,xai")
    parser.add_argument("--keep", type=Path, help="keep data and records here (else a temp dir)")
    parser.add_argument(
        "--assistant-words",
        type=int,
        default=0,
        help="pad assistant turns to about N words (LongMemEval's run to hundreds)",
    )
    args = parser.parse_args()
    names = tuple(n.strip() for n in args.backend.split(",") if n.strip())
    folder = args.keep or Path(tempfile.mkdtemp(prefix="xai-longmem-bench-"))
    started = time.perf_counter()
    try:
        data = write(
            folder / f"longmem_synth_seed{args.seed}.json",
            args.seed,
            args.questions,
            assistant_words=args.assistant_words,
        )
        result = anyio.run(measure, data, folder / "run", names)
        result = {
            "seed": args.seed,
            "questions": args.questions,
            "assistant_words": args.assistant_words,
            **result,
        }
        result["wall_s"] = round(time.perf_counter() - started, 1)
        show(result, names)
        print(json.dumps(result))
    finally:
        if args.keep is None:
            shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
