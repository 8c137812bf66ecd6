"""Measure your own memory backend next to xai's, on a conversation of your own.

A backend is four coroutines: ``ingest(message, session)``, ``flush()``,
``retrieve(question) -> Retrieved`` and ``reset()`` (plus ``aclose()``). This one
remembers only the last few turns, a common short-term memory, and is measured
with xai's hybrid retrieval on a small made-up conversation in the LoCoMo format.
Runs offline; ``xai eval`` does the same on the real datasets (docs/eval.md).

    python examples/memory_eval.py [OUT_DIR]

The report is written to OUT_DIR; without it, to a temporary folder removed at the end.
"""

from __future__ import annotations

import json
import sys
import tempfile
from collections import deque
from pathlib import Path

import anyio

from xai.eval import (
    EvalMessage,
    EvalSession,
    HybridRetrieval,
    MemoryBackend,
    Retrieved,
    RunInfo,
    load_locomo,
    run_eval,
)
from xai.memory import local_minilm

CONVERSATION = {
    "sample_id": "garden",
    "conversation": {
        "speaker_a": "Ana",
        "speaker_b": "Ben",
        "session_1_date_time": "9:00 am on 4 March, 2024",
        "session_1": [
            {"speaker": "Ana", "dia_id": "D1:1", "text": "I planted tomatoes on my balcony."},
            {"speaker": "Ben", "dia_id": "D1:2", "text": "Nice! I adopted a cat called Miso."},
            {"speaker": "Ana", "dia_id": "D1:3", "text": "Lovely name. Is Miso shy?"},
        ],
        "session_2_date_time": "6:30 pm on 20 April, 2024",
        "session_2": [
            {"speaker": "Ben", "dia_id": "D2:1", "text": "Miso knocked my basil plant over."},
            {"speaker": "Ana", "dia_id": "D2:2", "text": "My tomatoes are finally red!"},
            {"speaker": "Ben", "dia_id": "D2:3", "text": "I start a pottery class next week."},
            {"speaker": "Ana", "dia_id": "D2:4", "text": "Send me a photo of your first bowl."},
        ],
    },
    "qa": [
        {
            "question": "What is Ben's cat called?",
            "answer": "Miso",
            "evidence": ["D1:2"],
            "category": 4,
        },
        {
            "question": "What did Ana plant in March 2024?",
            "answer": "tomatoes",
            "evidence": ["D1:1"],
            "category": 2,
        },
        {
            "question": "What class will Ben take?",
            "answer": "pottery",
            "evidence": ["D2:3"],
            "category": 4,
        },
    ],
}


class LastTurns:
    """Short-term memory: the last ``keep`` turns, newest first."""

    name = "last-turns"

    def __init__(self, keep: int = 3) -> None:
        self.turns: deque[tuple[EvalMessage, EvalSession]] = deque(maxlen=keep)

    async def ingest(self, message: EvalMessage, session: EvalSession) -> None:
        self.turns.append((message, session))

    async def flush(self) -> None:
        return None

    async def retrieve(self, question: str) -> Retrieved:
        newest = list(reversed(self.turns))
        context = "\n".join(f"[{s.date}] {m.speaker}: {m.text}" for m, s in newest)
        return Retrieved(context=context, ranked=tuple(m.id for m, _ in newest))

    async def reset(self) -> None:
        self.turns.clear()

    async def aclose(self) -> None:
        return None


def write_sample(out: Path) -> Path:
    out.mkdir(parents=True, exist_ok=True)
    data = out / "garden.json"
    data.write_text(json.dumps([CONVERSATION]))
    return data


async def main(out: Path) -> None:
    data = write_sample(out)
    samples = load_locomo(data)
    backends: list[MemoryBackend] = [
        LastTurns(),
        HybridRetrieval(local_minilm(), depth=3, context_k=3),
    ]
    info = RunInfo(
        dataset="locomo",
        data=str(data),
        backends=tuple(b.name for b in backends),
        ks=(1, 3),
        context_k=3,
    )
    summary = await run_eval(samples, backends, info=info, out=out / "results")
    for backend in summary.backends:
        recall = ", ".join(f"@{k} {v:.0f}" for k, v in backend.overall.recall.items())
        print(f"{backend.backend:<11} evidence recall {recall}")
    print(f"report: {out / 'results' / 'report.md'}")


if __name__ == "__main__":
    if len(sys.argv) > 1:  # the report stays there
        anyio.run(main, Path(sys.argv[1]))
    else:
        with tempfile.TemporaryDirectory(prefix="xai-eval-") as tmp:
            anyio.run(main, Path(tmp))
        print("(removed with its temporary folder; give a folder, e.g. out/eval, to keep it)")
