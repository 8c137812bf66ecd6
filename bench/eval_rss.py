"""Does an eval backend keep per-question state? RSS after each question (issue 29).

Runs one backend (``rag``, ``hybrid`` or ``xai``) over the synthetic LongMemEval-shaped
questions (``longmem_synth.py``, seeded) the way ``run_eval`` does: each question's
sessions ingested, flushed, the question retrieved, the backend reset. After each
question the process's ``VmRSS`` is read; the figure is the least-squares slope of RSS
against questions after ``--warmup`` questions (the embedder's caches, the stemmer's,
chromadb's first client fill up in those), in MiB per question. The baseline, measured
in the same run, is the ``null`` backend (reads the same data, keeps nothing).

    python bench/eval_rss.py [--backend hybrid] [--questions 16] [--warmup 4] [--seed 0]
                             [--assistant-words N]

Run it with ``PYTHONPATH`` at another tree to measure that tree's library with this bench.

Ends with one JSON line.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import tempfile
import time
from pathlib import Path

import anyio
from longmem_synth import write

from xai.eval import HybridRetrieval, NullMemory, TurnVectorRAG, XaiAgentMemory, load_longmemeval
from xai.eval._scripted import EvalModel
from xai.memory import LocalMiniLM
from xai.providers import OpenAIProvider
from xai.testing import OpenAIWireServer


def rss_mib() -> float:
    with open(f"/proc/{os.getpid()}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS")


def slope(values: list[float]) -> float:
    n = len(values)
    if n < 2:
        return 0.0
    mean_x, mean_y = (n - 1) / 2, sum(values) / n
    num = sum((x - mean_x) * (y - mean_y) for x, y in enumerate(values))
    return num / sum((x - mean_x) ** 2 for x in range(n))


async def run(name: str, data: Path, folder: Path, warmup: int) -> dict[str, float]:
    samples = load_longmemeval(data)
    embedder = LocalMiniLM()
    with OpenAIWireServer() as server:
        # As `xai eval` runs it: no request kept. Set as an attribute, which code from
        # before the setting ignores: the same bench measures both (PYTHONPATH=old tree).
        server.keep_requests = False
        offline = EvalModel()
        server.script.add_responder(offline)
        async with OpenAIProvider(server.llm_config()) as scripted:
            if name == "rag":
                backend: object = TurnVectorRAG(folder / "rag", embedder)
            elif name == "hybrid":
                backend = HybridRetrieval(embedder)
            elif name == "xai":
                backend = XaiAgentMemory(folder / "xai", scripted, embedder, replies=offline)
            else:
                backend = NullMemory()
            rss: list[float] = []
            started = time.perf_counter()
            for sample in samples:
                for session in sample.sessions:
                    for message in session.messages:
                        await backend.ingest(message, session)  # type: ignore[attr-defined]
                await backend.flush()  # type: ignore[attr-defined]
                for question in sample.questions:
                    await backend.retrieve(question.question)  # type: ignore[attr-defined]
                await backend.reset()  # type: ignore[attr-defined]
                gc.collect()
                rss.append(rss_mib())
                print(f"  {name} question {len(rss):3d}: rss {rss[-1]:7.1f} MiB", flush=True)
            await backend.aclose()  # type: ignore[attr-defined]
    after = rss[warmup:]
    return {
        "slope_mib_per_question": round(slope(after), 3),
        "rss_after_warmup_mib": round(after[0], 1) if after else 0.0,
        "rss_end_mib": round(rss[-1], 1),
        "wall_s": round(time.perf_counter() - started, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", default="hybrid")
    parser.add_argument("--questions", type=int, default=16)
    parser.add_argument("--warmup", type=int, default=4)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--assistant-words",
        type=int,
        default=0,
        help="pad assistant turns to about N words, as LongMemEval's run (longmem_synth.py)",
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="xai-eval-rss-") as tmp:
        folder = Path(tmp)
        data = write(
            folder / "data.json", args.seed, args.questions, assistant_words=args.assistant_words
        )
        base = anyio.run(run, "null", data, folder, args.warmup)
        measured = anyio.run(run, args.backend, data, folder, args.warmup)
    print(
        json.dumps(
            {
                "backend": args.backend,
                "questions": args.questions,
                "warmup": args.warmup,
                "assistant_words": args.assistant_words,
                **measured,
                "null_slope_mib_per_question": base["slope_mib_per_question"],
            }
        )
    )


if __name__ == "__main__":
    main()
