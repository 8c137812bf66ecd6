"""What one evaluation run writes down: a record per question, one file per sample.

A sample's record is written (atomically) once all its questions are scored, so
a rerun can skip it; ``summarise`` (in ``_summary``) folds records into figures.
"""

from __future__ import annotations

import msgspec

__all__ = ["QuestionRecord", "RunInfo", "SampleRecord"]


class QuestionRecord(msgspec.Struct, frozen=True, kw_only=True):
    """One question, its retrieval and (when answers were asked for) its answer and scores."""

    id: str
    category: str
    question: str
    answer: str
    """The gold answer (for abstentions, the dataset's adversarial answer)."""
    abstention: bool = False
    evidence: tuple[str, ...] = ()
    evidence_sessions: tuple[str, ...] = ()
    retrieved: tuple[str, ...] | None = None
    """Message ids in rank order, as many as the largest k; None when the backend does not
    rank (full context holds everything, the null memory nothing to rank)."""
    recall: dict[int, float] = msgspec.field(default_factory=dict)
    """Turn-level evidence recall by k (empty without evidence or ranking)."""
    session_recall: dict[int, float] = msgspec.field(default_factory=dict)
    """Share of the evidence sessions that hold at least one of the top-k turns, by k."""
    context_tokens: int = 0
    """Tokens of context given to the answering model (``xai eval`` counts them with
    MiniLM's tokenizer)."""
    retrieval_ms: float = 0.0
    prediction: str | None = None
    """The model's answer; None when answers were not asked for."""
    f1: float | None = None
    """Token F1 under LoCoMo's rules."""
    exact: float | None = None
    judge: bool | None = None
    """The LLM judge's verdict, when a judge was configured and answered."""
    error: str | None = None
    """Why the answer is missing (a provider error, say); the record still counts."""


class SampleRecord(msgspec.Struct, frozen=True, kw_only=True):
    sample: str
    backend: str
    questions: tuple[QuestionRecord, ...]
    ingest_s: float = 0.0
    messages: int = 0


class RunInfo(msgspec.Struct, frozen=True, kw_only=True):
    """How the run was made: enough to read its figures honestly."""

    dataset: str
    data: str
    backends: tuple[str, ...]
    ks: tuple[int, ...]
    context_k: int
    answer_model: str | None = None
    """None: retrieval only (no answers, no QA scores)."""
    judge_model: str | None = None
    memory_model: str | None = None
    """The model the ``xai`` backend's Sessions talked to and extracted with (None: no
    ``xai`` backend)."""
    embedder: str = ""
    started: str = ""
    xai_version: str = ""
