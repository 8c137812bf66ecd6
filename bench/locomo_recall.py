"""Evidence recall@k over LoCoMo dialog turns with the offline MiniLM embeddings.

Every retrieval configuration of ``xai.eval`` is measured on all questions
that have evidence, so the gain over the plain-vector baseline is honest, and
on each half of the conversations apart: the library's weights (``recall``,
``xai.memory.RecallWeights``) were chosen on conversations 0-4 only, so 5-9
is the held-out figure. Turn recall@10 and session recall@10 for both.
Published anchors (LoCoMo paper, Table 3, DRAGON): 56.7 @5, 66.2 @10; plain
all-MiniLM-L6-v2: 48.0 @10. Goal for the library's retrieval: >= 80 @10 on 5-9.

    python bench/locomo_recall.py [--data PATH] [--samples 0-4]   # the choice half
    python bench/locomo_recall.py --final                         # the held-out report

By default only the choice half (conversations 0-4) runs: every tuning run reads it and
nothing else. ``--final`` runs conversations 5-9 alone, the held-out figure, to be run
once, after every value is fixed on 0-4 (``--samples`` beyond 4 is refused without it).
(default data: ../shared/data/locomo10.json)

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

from xai.eval import BEST, CONFIGS, ConversationIndex, load_locomo, recall_at, session_recall_at
from xai.memory import local_minilm

KS = (5, 10, 25, 50)
CHOICE = range(0, 5)
"""The conversations every retrieval value is chosen on."""
HELD_OUT = range(5, 10)
"""Read only by ``--final``."""
DEFAULT = Path(__file__).resolve().parents[2] / "shared" / "data" / "locomo10.json"


def _halves(count: int) -> dict[str, range]:
    cut = (count + 1) // 2
    return {f"{0}-{cut - 1}": range(0, cut), f"{cut}-{count - 1}": range(cut, count)}


async def main(path: Path, only: set[int] | None) -> None:
    started = time.perf_counter()
    samples = load_locomo(path)
    embedder = local_minilm()
    sums: dict[str, dict[int, list[float]]] = {c: {k: [] for k in KS} for c in CONFIGS}
    by_category: dict[str, dict[str, list[float]]] = {c: defaultdict(list) for c in CONFIGS}
    turn: dict[str, dict[int, list[float]]] = {c: defaultdict(list) for c in CONFIGS}
    session: dict[str, dict[int, list[float]]] = {c: defaultdict(list) for c in CONFIGS}
    questions = 0
    for number, sample in enumerate(samples):
        if only is not None and number not in only:
            continue
        index = await ConversationIndex.build(sample, embedder)
        asked = [q for q in sample.questions if q.evidence]
        # Questions are embedded as the library's search embeds them (its query encoder).
        vectors = np.asarray([await embedder.embed_query(q.question) for q in asked])
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
                        turn[config][number].append(value)
                        found = session_recall_at(ranked[:k], question)
                        if found is not None:
                            session[config][number].append(found)
    figures: dict[str, float | int | str] = {"questions": questions}
    print(f"LoCoMo evidence recall over dialog turns, {questions} questions with evidence")
    print(f"{'config':<20}" + "".join(f"{'@' + str(k):>8}" for k in KS))
    for config in CONFIGS:
        row = [100 * sum(v) / len(v) for v in (sums[config][k] for k in KS)]
        print(f"{config:<20}" + "".join(f"{r:8.1f}" for r in row))
        for k, r in zip(KS, row, strict=True):
            figures[f"{config}_recall_at_{k}"] = round(r, 1)
    print(f"\n@10 by category ({BEST}):")
    for category, values in sorted(by_category[BEST].items()):
        print(f"  {category:<12} {100 * sum(values) / len(values):5.1f}  ({len(values)} questions)")
    print("\n@10 on each half (recall's weights were chosen on conversations 0-4 only):")
    print(
        f"  {'config':<16}"
        + "".join(f"{'turn ' + h:>14}{'session ' + h:>14}" for h in _halves(len(samples)))
    )
    for config in CONFIGS:
        cells: list[str] = []
        for name, numbers in _halves(len(samples)).items():
            for kind, table in (("turn", turn), ("session", session)):
                values = [v for n in numbers for v in table[config].get(n, [])]
                if values:
                    figure = round(100 * sum(values) / len(values), 1)
                    figures[f"{config}_{kind}_recall_at_10_{name}"] = figure
                    cells.append(f"{figure:14.1f}")
                else:
                    cells.append(f"{'-':>14}")
        print(f"  {config:<16}" + "".join(cells))
    base = float(figures["vector_recall_at_10"]) or 1.0
    figures["best_vs_vector_recall_at_10_ratio"] = round(
        float(figures[f"{BEST}_recall_at_10"]) / base, 3
    )
    figures["wall_s"] = round(time.perf_counter() - started, 1)
    print(json.dumps(figures))


def _samples(text: str | None) -> set[int] | None:
    if not text:
        return None
    out: set[int] = set()
    for part in text.split(","):
        low, _, high = part.partition("-")
        out.update(range(int(low), int(high or low) + 1))
    return out


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT)
    parser.add_argument(
        "--samples", help="conversations of the choice half to run, e.g. 0-2 (default: 0-4)"
    )
    parser.add_argument(
        "--final",
        action="store_true",
        help="the held-out report: conversations 5-9 (run once, with every value fixed)",
    )
    args = parser.parse_args()
    chosen = _samples(args.samples) or set(CHOICE)
    if args.final:
        chosen = set(HELD_OUT) if args.samples is None else chosen
    elif not chosen <= set(CHOICE):
        parser.error("conversations 5-9 are the held-out report: pass --final")
    anyio.run(main, args.data, chosen)
