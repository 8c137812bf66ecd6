"""An evaluation run's figures, folded from its records: per backend, overall and by category.

Records hold fractions (recall, F1 and EM in 0 to 1); figures are percentages (0 to 100),
so results.json and the report read like the published tables. A mean is taken
over the questions that have the value: recall@k over questions with evidence and
a ranking, F1 and EM over scored answers, the judge's share over its verdicts.

Retrieval-time percentiles interpolate linearly between the closest ranks (numpy's
default, ``method="linear"``): the p50 of 10, 20, 30 and 40 ms is 25 ms and their
p95 is 38.5 ms.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from statistics import fmean

import msgspec
import numpy as np

from xai.eval._records import QuestionRecord, RunInfo, SampleRecord

__all__ = ["BackendSummary", "Figures", "Summary", "encode_summary", "summarise"]


class Figures(msgspec.Struct, frozen=True, kw_only=True):
    """Figures over a set of questions (a backend's, or one category's)."""

    count: int
    """Questions."""
    recall: dict[int, float]
    """Mean turn-level evidence recall@k in percent, by k; empty when no question has one."""
    session_recall: dict[int, float]
    """Mean share of evidence sessions hit by the top k turns, in percent, by k."""
    f1: float | None
    """Mean token F1 in percent over scored answers; None without any."""
    exact: float | None
    """Mean exact match in percent over scored answers; None without any."""
    judge: float | None
    """Share of the judge's verdicts that were True, in percent; None without a verdict."""
    context_tokens: float
    """Mean tokens of context given to the answering model."""
    retrieval_ms_p50: float
    retrieval_ms_p95: float
    answered: int
    """Questions with a prediction."""
    errors: int
    """Questions whose record carries an error."""


class BackendSummary(msgspec.Struct, frozen=True, kw_only=True):
    backend: str
    overall: Figures
    by_category: dict[str, Figures]
    """Figures by category, in sorted category order."""
    samples: int
    questions: int
    ingest_s: float
    """Total time spent ingesting the samples' conversations."""


class Summary(msgspec.Struct, frozen=True, kw_only=True):
    info: RunInfo
    backends: tuple[BackendSummary, ...]


def summarise(info: RunInfo, records: Mapping[str, Sequence[SampleRecord]]) -> Summary:
    """Fold the records (keyed by backend name) into figures, backends in ``info.backends`` order.

    A backend named in ``info`` without records gets empty figures (so the report shows
    that it produced nothing); records of a backend not named in ``info`` come last.
    """
    names = [*info.backends, *(name for name in records if name not in info.backends)]
    return Summary(
        info=info, backends=tuple(_summarise_backend(name, records.get(name, ())) for name in names)
    )


def encode_summary(summary: Summary) -> bytes:
    """Pretty JSON for results.json (decode with ``msgspec.json.decode(data, type=Summary)``)."""
    return msgspec.json.format(msgspec.json.encode(summary), indent=2) + b"\n"


def _summarise_backend(name: str, samples: Sequence[SampleRecord]) -> BackendSummary:
    questions = [question for sample in samples for question in sample.questions]
    categories = sorted({question.category for question in questions})
    return BackendSummary(
        backend=name,
        overall=_figures(questions),
        by_category={
            category: _figures([q for q in questions if q.category == category])
            for category in categories
        },
        samples=len(samples),
        questions=len(questions),
        ingest_s=sum(sample.ingest_s for sample in samples),
    )


def _figures(questions: Sequence[QuestionRecord]) -> Figures:
    if questions:
        times = np.asarray([q.retrieval_ms for q in questions], dtype=np.float64)
        p50, p95 = (float(p) for p in np.percentile(times, [50.0, 95.0]))
    else:
        p50 = p95 = 0.0
    verdicts = [q.judge for q in questions if q.judge is not None]
    return Figures(
        count=len(questions),
        recall=_percent_by_k(q.recall for q in questions),
        session_recall=_percent_by_k(q.session_recall for q in questions),
        f1=_percent([q.f1 for q in questions if q.f1 is not None]),
        exact=_percent([q.exact for q in questions if q.exact is not None]),
        judge=_percent([1.0 if verdict else 0.0 for verdict in verdicts]),
        context_tokens=fmean(q.context_tokens for q in questions) if questions else 0.0,
        retrieval_ms_p50=p50,
        retrieval_ms_p95=p95,
        answered=sum(1 for q in questions if q.prediction is not None),
        errors=sum(1 for q in questions if q.error is not None),
    )


def _percent(values: Sequence[float]) -> float | None:
    return 100.0 * fmean(values) if values else None


def _percent_by_k(values: Iterable[Mapping[int, float]]) -> dict[int, float]:
    by_k: dict[int, list[float]] = {}
    for by_question in values:
        for k, value in by_question.items():
            by_k.setdefault(k, []).append(value)
    return {k: 100.0 * fmean(found) for k, found in sorted(by_k.items())}
