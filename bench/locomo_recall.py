"""Evidence recall@k over LoCoMo dialog turns with the offline MiniLM embeddings.

Every retrieval configuration of ``xai.eval`` is measured on all questions
that have evidence, so the gain over the plain-vector baseline is honest.
Published anchors (LoCoMo paper, Table 3, DRAGON): 56.7 @5, 66.2 @10; plain
all-MiniLM-L6-v2: 48.0 @10. Goal for xai's best configuration: >= 80 @10.

    python bench/locomo_recall.py [--data PATH]   (default: ../shared/data/locomo10.json)

The last line is one JSON object with the figures.
"""

from __future__ import annotations

import argparse
import json
import time
from collections import defaultdict
from pathlib import Path

import anyio
import numpy as np

from xai.eval import CONFIGS, ConversationIndex, load_locomo, recall_at
from xai.memory import local_minilm

KS = (5, 10, 25, 50)
DEFAULT = Path(__file__).resolve().parents[2] / "shared" / "data" / "locomo10.json"


async def main(path: Path) -> None:
    started = time.perf_counter()
    samples = load_locomo(path)
    embedder = local_minilm()
    sums: dict[str, dict[int, list[float]]] = {c: {k: [] for k in KS} for c in CONFIGS}
    by_category: dict[str, dict[str, list[float]]] = {c: defaultdict(list) for c in CONFIGS}
    by_half: dict[str, dict[int, list[float]]] = {c: defaultdict(list) for c in CONFIGS}
    questions = 0
    for number, sample in enumerate(samples):
        index = await ConversationIndex.build(sample, embedder)
        asked = [q for q in sample.questions if q.evidence]
        vectors = np.asarray(await embedder.embed([q.question for q in asked]), dtype=np.float32)
        for question, vector in zip(asked, vectors, strict=True):
            questions += 1
            for config in CONFIGS:
                ranked = index.top(config, question.question, vector, max(KS))
                for k in KS:
                    value = recall_at(ranked[:k], question)
                    assert value is not None
                    sums[config][k].append(value)
                    if k == 10:
                        by_category[config][question.category].append(value)
                        by_half[config][2 * number // len(samples)].append(value)
    figures: dict[str, float | int] = {"questions": questions}
    print(f"LoCoMo evidence recall over dialog turns, {questions} questions with evidence")
    print(f"{'config':<20}" + "".join(f"{'@' + str(k):>8}" for k in KS))
    for config in CONFIGS:
        row = [100 * sum(v) / len(v) for v in (sums[config][k] for k in KS)]
        print(f"{config:<20}" + "".join(f"{r:8.1f}" for r in row))
        for k, r in zip(KS, row, strict=True):
            figures[f"{config}_recall_at_{k}"] = round(r, 1)
    best = max(CONFIGS, key=lambda c: figures[f"{c}_recall_at_10"])
    print(f"\n@10 by category ({best}):")
    for category, values in sorted(by_category[best].items()):
        print(f"  {category:<12} {100 * sum(values) / len(values):5.1f}  ({len(values)} questions)")
    print("\n@10 on each half of the conversations (the weights were chosen on all of LoCoMo):")
    for config in ("fusion", best):
        halves = [100 * sum(v) / len(v) for _, v in sorted(by_half[config].items())]
        print(f"  {config:<12} " + "  ".join(f"{h:5.1f}" for h in halves))
        for n, h in enumerate(halves):
            figures[f"{config}_half{n + 1}_recall_at_10"] = round(h, 1)
    base = float(figures["vector_recall_at_10"]) or 1.0
    figures["best_config_at_10"] = best  # type: ignore[assignment]
    figures["best_vs_vector_recall_at_10_ratio"] = round(
        float(figures[f"{best}_recall_at_10"]) / base, 3
    )
    figures["wall_s"] = round(time.perf_counter() - started, 1)
    print(json.dumps(figures))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT)
    anyio.run(main, parser.parse_args().data)
