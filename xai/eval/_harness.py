"""The evaluation run: every sample through every backend, scored, written as it goes.

For each backend and sample: reset the memory, ingest the sample, retrieve for
every question one at a time (so retrieval latency is measured alone), then ask
the model for the answers (``concurrency`` at a time) and score them. The
sample's record is written atomically under ``out/samples/<backend>/`` only when
complete, so an interrupted run loses at most the sample in progress, and a
rerun skips every sample already written. ``out/run.json`` pins what the run
measures; a rerun that would measure something else is refused.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from pathlib import Path

import anyio
import msgspec

from xai._files import write_atomic
from xai.eval._agent import NOT_MENTIONED, Answer, EvalAgent
from xai.eval._backends import MemoryBackend, Retrieved
from xai.eval._datasets import EvalQuestion, EvalSample
from xai.eval._records import QuestionRecord, RunInfo, SampleRecord
from xai.eval._report import write_report
from xai.eval._retrieval import recall_at, session_recall_at
from xai.eval._scoring import exact_match, judge_answer, score_answer
from xai.eval._summary import Summary, summarise
from xai.exceptions import UsageError
from xai.logs import get_logger
from xai.providers import Provider

__all__ = ["Progress", "load_records", "run_eval"]

_log = get_logger("xai.eval")

_SAFE = re.compile(r"[^A-Za-z0-9_.-]+")
_PINNED = (
    "dataset",
    "data",
    "ks",
    "context_k",
    "answer_model",
    "judge_model",
    "memory_model",
    "embedder",
)


class Progress(msgspec.Struct, frozen=True, kw_only=True):
    backend: str
    samples_done: int
    samples_total: int
    questions_done: int
    questions_total: int
    skipped: int = 0
    """Samples found already finished (a resumed run)."""


def _record_path(out: Path, backend: str, sample: str) -> Path:
    return out / "samples" / _SAFE.sub("_", backend) / f"{_SAFE.sub('_', sample)}.json"


def _load(path: Path, sample: str | None = None) -> SampleRecord | None:
    try:
        record = msgspec.json.decode(path.read_bytes(), type=SampleRecord)
    except FileNotFoundError:
        return None
    except (OSError, msgspec.DecodeError, msgspec.ValidationError, RecursionError) as exc:
        _log.warning("eval.record_unreadable", path=str(path), error=str(exc))
        return None  # torn or foreign: measure the sample again
    if sample is not None and record.sample != sample:
        return None  # another sample whose id maps to the same file name
    return record


def _pin(out: Path, info: RunInfo) -> RunInfo:
    """Check ``info`` against the run already in ``out``; the backends measured there
    before stay in the report."""
    out.mkdir(parents=True, exist_ok=True)
    path = out / "run.json"
    if path.is_file():
        try:
            before = msgspec.json.decode(path.read_bytes(), type=RunInfo)
        except (msgspec.DecodeError, msgspec.ValidationError, RecursionError) as exc:
            raise UsageError(f"{path} is not a run description ({exc}); use a new --out") from None
        changed = [f for f in _PINNED if getattr(before, f) != getattr(info, f)]
        if changed:
            raise UsageError(
                f"{out} holds a run made with other settings ({', '.join(changed)} differ); "
                "use a new --out directory to measure these"
            )
        earlier = tuple(b for b in before.backends if b not in info.backends)
        info = msgspec.structs.replace(info, backends=(*earlier, *info.backends))
    write_atomic(path, msgspec.json.format(msgspec.json.encode(info)))
    return info


async def run_eval(
    samples: Sequence[EvalSample],
    backends: Sequence[MemoryBackend],
    *,
    info: RunInfo,
    out: Path,
    llm: Provider | None = None,
    judge: Provider | None = None,
    count_tokens: Callable[[str], int] = lambda text: len(text) // 4 + 1,
    concurrency: int = 4,
    progress: Callable[[Progress], None] | None = None,
) -> Summary:
    """Measure ``backends`` on ``samples``; write records, results.json and report.md to ``out``."""
    info = _pin(out, info)
    total_questions = sum(len(s.questions) for s in samples)
    measuring = {b.name for b in backends}
    wanted = {s.id for s in samples}
    # Backends measured before stay in the report, on this run's samples only.
    records: dict[str, list[SampleRecord]] = {
        name: [r for r in load_records(out, name) if r.sample in wanted]
        for name in info.backends
        if name not in measuring
    }
    for backend in backends:
        done_questions = skipped = 0
        kept = records.setdefault(backend.name, [])
        for index, sample in enumerate(samples):
            path = _record_path(out, backend.name, sample.id)
            record = _load(path, sample.id)
            if record is None:
                record = await _measure(
                    sample,
                    EvalAgent(backend, llm),
                    ks=info.ks,
                    judge=judge,
                    count_tokens=count_tokens,
                    concurrency=concurrency,
                )
                write_atomic(path, msgspec.json.encode(record))
            else:
                skipped += 1
            kept.append(record)
            done_questions += len(sample.questions)
            if progress is not None:
                progress(
                    Progress(
                        backend=backend.name,
                        samples_done=index + 1,
                        samples_total=len(samples),
                        questions_done=done_questions,
                        questions_total=total_questions,
                        skipped=skipped,
                    )
                )
        await backend.reset()
    summary = summarise(info, records)
    write_report(summary, out)
    return summary


async def _measure(
    sample: EvalSample,
    agent: EvalAgent,
    *,
    ks: Sequence[int],
    judge: Provider | None,
    count_tokens: Callable[[str], int],
    concurrency: int,
) -> SampleRecord:
    await agent.memory.reset()
    started = anyio.current_time()
    messages = await agent.ingest_sample(sample)
    ingest_s = anyio.current_time() - started
    # Retrieval alone, one question at a time: its latency is not disturbed by answering.
    retrieved = [await agent.retrieve(q.question) for q in sample.questions]
    answers: list[Answer | None] = [None] * len(sample.questions)
    verdicts: list[bool | None] = [None] * len(sample.questions)
    if agent.llm is not None:
        limiter = anyio.CapacityLimiter(max(1, concurrency))

        async def ask(i: int, question: EvalQuestion) -> None:
            async with limiter:
                context, elapsed = retrieved[i]
                answer = await agent.answer_from(
                    question.question, context, elapsed, asked_on=question.date
                )
                answers[i] = answer
                if judge is None:
                    return
                if answer.error is not None:
                    verdicts[i] = False  # no answer is not a right answer
                    return
                # An abstention's gold is that nothing was said (LoCoMo's adversarial_answer
                # is the trap, not the truth).
                gold = NOT_MENTIONED if question.abstention else question.answer
                verdicts[i] = await judge_answer(judge, question.question, gold, answer.text)

        async with anyio.create_task_group() as group:
            for i, question in enumerate(sample.questions):
                group.start_soon(ask, i, question)
    questions = tuple(
        _score(q, context, elapsed, answers[i], verdicts[i], ks, count_tokens)
        for i, (q, (context, elapsed)) in enumerate(zip(sample.questions, retrieved, strict=True))
    )
    return SampleRecord(
        sample=sample.id,
        backend=agent.memory.name,
        questions=questions,
        ingest_s=round(ingest_s, 3),
        messages=messages,
    )


def _score(
    question: EvalQuestion,
    retrieved: Retrieved,
    elapsed: float,
    answer: Answer | None,
    verdict: bool | None,
    ks: Sequence[int],
    count_tokens: Callable[[str], int],
) -> QuestionRecord:
    ranked = retrieved.ranked
    recall: dict[int, float] = {}
    sessions: dict[int, float] = {}
    if ranked is not None:
        for k in ks:
            if (value := recall_at(ranked[:k], question)) is not None:
                recall[k] = value
            if (value := session_recall_at(ranked[:k], question)) is not None:
                sessions[k] = value
    prediction = error = None
    f1 = exact = None
    if answer is not None:
        prediction, error = answer.text, answer.error
        # An answer the model failed to give scores 0: a failure is not left out.
        f1 = score_answer(
            prediction, question.answer, question.category, abstention=question.abstention
        )
        exact = exact_match(prediction, question.answer, abstention=question.abstention)
    return QuestionRecord(
        id=question.id,
        category=question.category,
        question=question.question,
        answer=question.answer,
        abstention=question.abstention,
        evidence=question.evidence,
        evidence_sessions=question.evidence_sessions,
        retrieved=tuple(ranked[: max(ks)]) if ranked is not None and ks else ranked,
        recall=recall,
        session_recall=sessions,
        context_tokens=count_tokens(retrieved.context) if retrieved.context else 0,
        retrieval_ms=round(elapsed, 3),
        prediction=prediction,
        f1=f1,
        exact=exact,
        judge=verdict,
        error=error,
    )


def load_records(out: Path, backend: str) -> list[SampleRecord]:
    """Every finished sample record of ``backend`` under ``out`` (for reports and tests)."""
    folder = out / "samples" / _SAFE.sub("_", backend)
    found = (_load(p) for p in sorted(folder.glob("*.json")))
    return [r for r in found if r is not None]
