"""The offline mood estimator's direction on labelled exchanges (issue 30).

``tests/data/mood_exchanges.jsonl``: short exchanges written for this (an assistant line and
the user's reply), each labelled with which way the reply shows the user's mood going:
``better``, ``worse`` or ``same``. Half are marked ``tune``: the estimator's dead zone (below
it a turn moves nothing) is chosen on them alone, by accuracy (the middle of the best
range). The other half (``report``) is only ever scored: with the dead zone the library
ships (``xai.mood.DEAD_ZONE``), and with the one this run chose, which must agree.

Only the user's reply is read, as the Session does (the origin rule: what the assistant
said never moves the user's mood). Ends with one JSON line. Run::

    python bench/mood.py
"""

from __future__ import annotations

import json
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

from xai.mood import DEAD_ZONE, direction, estimate_deltas

DATA = Path(__file__).resolve().parent.parent / "tests" / "data" / "mood_exchanges.jsonl"
GRID = [round(0.05 * i, 2) for i in range(13)]  # 0.00 .. 0.60


def load(path: Path = DATA) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def predict(text: str, dead_zone: float) -> str:
    return direction(estimate_deltas([("u", text)], turn=1, at=0.0, dead_zone=dead_zone))


def accuracy(rows: list[dict[str, Any]], dead_zone: float) -> float:
    right: int = sum(predict(str(r["user"]), dead_zone) == r["label"] for r in rows)
    return right / len(rows)


def choose(rows: list[dict[str, Any]]) -> float:
    """The dead zone in the middle of the best-scoring range on ``rows``."""
    scores = {z: accuracy(rows, z) for z in GRID}
    best = max(scores.values())
    top = [z for z in GRID if scores[z] == best]
    return top[len(top) // 2]


def main() -> dict[str, Any]:
    rows = load()
    tune = [r for r in rows if r["split"] == "tune"]
    report = [r for r in rows if r["split"] == "report"]
    started = time.perf_counter()
    chosen = choose(tune)
    confusion = Counter((r["label"], predict(r["user"], DEAD_ZONE)) for r in report)
    wrong = [r["id"] for r in report if predict(r["user"], DEAD_ZONE) != r["label"]]
    return {
        "exchanges": len(rows),
        "tune": len(tune),
        "report": len(report),
        "dead_zone_shipped": DEAD_ZONE,
        "dead_zone_chosen_on_tune": chosen,
        "tune_accuracy": round(accuracy(tune, chosen), 3),
        "report_accuracy": round(accuracy(report, DEAD_ZONE), 3),
        "report_confusion": {f"{a}->{b}": n for (a, b), n in sorted(confusion.items())},
        "report_wrong": wrong,
        "ms": round((time.perf_counter() - started) * 1000, 1),
    }


if __name__ == "__main__":
    print(json.dumps(main()), flush=True)
    sys.exit(0)
