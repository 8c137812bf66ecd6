"""Re-choose the inherited retrieval values on LoCoMo conversations 0-4 only (issue 29).

Several values of the library's retrieval came from the eval-only ``fusion_cues``, tuned on
all ten conversations: the speaker cue (0.5), the time-words cue (0.6), the date weights
(a named day 2.0, a month 1.0, a year 0.3), the top-sessions boost's cap (1.5), BM25's
``k1`` (0.9) and ``b`` (0.4) and the lexical share (0.5). Each is chosen again here, one at
a time in that order (coordinate ascent from the inherited values), by turn recall@10 on
conversations 0-4 with every turn an episode, as ``bench/locomo_recall.py`` measures the
library; a tie keeps the inherited value. Conversations 5-9 are never read.

    python bench/locomo_choose.py [--data PATH]

Prints each value's grid (turn / session recall@10) and ends with one JSON line: the
values chosen and the recall before and after on 0-4.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import anyio
import msgspec
import numpy as np

from xai.eval import ConversationIndex, EvalQuestion, load_locomo, recall_at, session_recall_at
from xai.memory import RecallWeights, local_minilm
from xai.memory import _cues as cues

DEFAULT = Path(__file__).resolve().parents[2] / "shared" / "data" / "locomo10.json"
CHOICE = range(0, 5)

State = dict[str, float]
INHERITED: State = {
    "speaker": 0.5,
    "time_words": 0.6,
    "date_day": 2.0,
    "date_month": 1.0,
    "date_year": 0.3,
    "session_max": 1.5,
    "k1": 0.9,
    "b": 0.4,
    "lexical": 0.5,
}
GRID: dict[str, list[float]] = {
    "speaker": [0.0, 0.25, 0.5, 0.75, 1.0],
    "time_words": [0.0, 0.3, 0.6, 0.9, 1.2],
    "date_day": [1.0, 1.5, 2.0, 2.5, 3.0],
    "date_month": [0.5, 0.75, 1.0, 1.25, 1.5],
    "date_year": [0.0, 0.15, 0.3, 0.5, 0.75],
    "session_max": [0.5, 1.0, 1.5, 2.0],
    "k1": [0.6, 0.9, 1.2, 1.5],
    "b": [0.2, 0.4, 0.6, 0.75],
    "lexical": [0.3, 0.4, 0.5, 0.6, 0.7],
}


async def main(path: Path) -> None:
    started = time.perf_counter()
    samples = load_locomo(path)
    embedder = local_minilm()
    indexes: list[tuple[ConversationIndex, list[EvalQuestion], np.ndarray]] = []
    for number in CHOICE:
        sample = samples[number]
        index = await ConversationIndex.build(sample, embedder, baselines=False)
        asked = [q for q in sample.questions if q.evidence]
        vectors = np.asarray([await embedder.embed_query(q.question) for q in asked])
        indexes.append((index, asked, vectors))

    def measure(state: State) -> tuple[float, float]:
        cues._DATE_WEIGHT.update(
            day=state["date_day"], month=state["date_month"], year=state["date_year"]
        )
        weights = msgspec.structs.replace(
            RecallWeights(),
            speaker=state["speaker"],
            time_words=state["time_words"],
            session_max=state["session_max"],
            lexical=state["lexical"],
        )
        turn: list[float] = []
        session: list[float] = []
        for index, asked, vectors in indexes:
            index.weights = weights
            index.corpus.lexical.k1, index.corpus.lexical.b = state["k1"], state["b"]
            for question, vector in zip(asked, vectors, strict=True):
                ranked = index.top("recall", question.question, vector, 10)
                turn.append(recall_at(ranked, question) or 0.0)
                found = session_recall_at(ranked, question)
                if found is not None:
                    session.append(found)
        return 100 * sum(turn) / len(turn), 100 * sum(session) / len(session)

    state = dict(INHERITED)
    before = measure(state)
    print(f"inherited values on 0-4: turn {before[0]:.1f} / session {before[1]:.1f}")
    grids: dict[str, dict[str, list[float]]] = {}
    for name, values in GRID.items():
        results: dict[float, tuple[float, float]] = {}
        for value in values:
            results[value] = measure({**state, name: value})
        best = max(results, key=lambda v: (round(results[v][0], 1), v == state[name]))
        if round(results[best][0], 1) <= round(results[state[name]][0], 1):
            best = state[name]  # a tie keeps the inherited value
        cells = "  ".join(f"{v:g}: {t:.1f}/{s:.1f}" for v, (t, s) in results.items())
        print(f"{name:<12} {cells}  -> {best:g}", flush=True)
        grids[name] = {f"{v:g}": [round(t, 1), round(s, 1)] for v, (t, s) in results.items()}
        state[name] = best
    after = measure(state)
    print(f"chosen values on 0-4: turn {after[0]:.1f} / session {after[1]:.1f}")
    print(
        json.dumps(
            {
                "chosen": state,
                "inherited": INHERITED,
                "turn_recall_at_10_0_4_before": round(before[0], 1),
                "session_recall_at_10_0_4_before": round(before[1], 1),
                "turn_recall_at_10_0_4_after": round(after[0], 1),
                "session_recall_at_10_0_4_after": round(after[1], 1),
                "turn_recall_ratio": round(after[0] / before[0], 4),
                "grids": grids,
                "wall_s": round(time.perf_counter() - started, 1),
            }
        )
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT)
    anyio.run(main, parser.parse_args().data)
