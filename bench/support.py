"""Grounded candidates (issue 29): choose the support check's two thresholds on the choice
half of ``tests/data/support.jsonl`` and report it on the other half.

Each item is a memory candidate, the user message it cites, and whether that message
supports it (labelled by hand). The check (``xai.memory._support``): supported when the
share of the candidate's content words found in the message reaches ``overlap``, or the
cosine of their MiniLM embeddings reaches ``similarity``. The grid search maximises
accuracy on the choice half, ties broken towards fewer supported candidates rejected
(a wrongly rejected fact is lost; a wrongly kept one can still be forgotten). The
baseline, measured in the same run, is the rule before it: every candidate citing a user
message is kept. Ends with one JSON line.

    python bench/support.py
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import anyio

from xai.memory import local_minilm
from xai.memory._support import Support, support

DATA = Path(__file__).resolve().parent.parent / "tests" / "data" / "support.jsonl"
OVERLAPS = [round(0.05 * i, 2) for i in range(1, 21)]
SIMILARITIES = [round(0.05 * i, 2) for i in range(4, 21)]


def accuracy(
    rows: list[tuple[Support, bool]], overlap: float, similarity: float
) -> dict[str, float]:
    kept_good = sum(1 for s, label in rows if label and s.holds(overlap, similarity))
    rejected_bad = sum(1 for s, label in rows if not label and not s.holds(overlap, similarity))
    good = sum(1 for _, label in rows if label)
    bad = len(rows) - good
    return {
        "accuracy": (kept_good + rejected_bad) / len(rows),
        "kept_supported": kept_good / good,
        "rejected_unsupported": rejected_bad / bad,
    }


async def main() -> None:
    items = [json.loads(line) for line in DATA.read_text().splitlines() if line.strip()]
    embedder = local_minilm()
    vectors = await embedder.embed([i["candidate"] for i in items])
    evidence = await embedder.embed([" ".join(i["evidence"]) for i in items])
    scored = [
        (item["split"], support(item["candidate"], item["evidence"], v, e), item["supported"])
        for item, v, e in zip(items, vectors, evidence, strict=True)
    ]
    choose = [(s, label) for split, s, label in scored if split == "choose"]
    report = [(s, label) for split, s, label in scored if split == "report"]
    best = max(
        ((o, s) for o in OVERLAPS for s in SIMILARITIES),
        key=lambda t: (
            accuracy(choose, *t)["accuracy"],
            accuracy(choose, *t)["kept_supported"],
            -t[0],
            -t[1],
        ),
    )
    chosen, held_out = accuracy(choose, *best), accuracy(report, *best)
    baseline = accuracy(report, 0.0, 0.0)  # everything kept
    for split, s, label in scored:
        if split == "report" and s.holds(*best) != label:
            print(f"  held-out miss: supported={label} {s!r}", file=sys.stderr)
    print(
        json.dumps(
            {
                "items": len(items),
                "choose_items": len(choose),
                "report_items": len(report),
                "overlap": best[0],
                "similarity": best[1],
                "choose_accuracy": round(chosen["accuracy"], 3),
                "report_accuracy": round(held_out["accuracy"], 3),
                "report_kept_supported": round(held_out["kept_supported"], 3),
                "report_rejected_unsupported": round(held_out["rejected_unsupported"], 3),
                "baseline_report_accuracy": round(baseline["accuracy"], 3),
                "accuracy_ratio": round(held_out["accuracy"] / baseline["accuracy"], 3),
            }
        )
    )


if __name__ == "__main__":
    anyio.run(main)
