"""Turn-level retrieval over one conversation, in several configurations, and recall@k.

Configurations (each reported, so a gain is measured against the plain one):

- ``vector``: cosine similarity between the question and each turn's text.
- ``vector_context``: each turn embedded with its speaker and session date.
- ``bm25``: lexical scoring of stemmed words.
- ``hybrid``: vector_context and bm25 fused (reciprocal rank fusion).
- ``hybrid_neighbours``: hybrid, each turn's score lifted by its neighbours' (evidence
  sits in runs of turns), and turns by a speaker named in the question favoured.
- ``fusion``: z-normalised scores of bm25 (0.5), vector_context (0.3) and vector (0.2)
  added; each turn lifted by its neighbours within the session (±1: 0.5, ±2: 0.2); the
  two sessions holding the best turns lifted as a whole (evidence clusters by session).
  The weights were chosen on LoCoMo itself (see bench/locomo_recall.py for the halves).
- ``fusion_cues``: fusion with the conversation's own cues added. Two more dense
  scores, each turn embedded with the turn before and with the turn after (a reply
  carries its question's words); BM25 tuned for short turns (k1 0.9, b 0.4); turns
  by the one speaker the question names favoured; for "when" questions, turns that
  speak of time ("last week", "yesterday", a year); sessions held on or just after a
  date the question names lifted (``_dates``); and the boost of the two best sessions
  scaled by how clearly they lead (a broad question spread over many sessions is not
  narrowed to two).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Literal, TypeAlias

import numpy as np

from xai.eval._datasets import EvalMessage, EvalQuestion, EvalSample
from xai.eval._dates import question_windows, session_date
from xai.memory import Embedder, LexicalIndex

__all__ = ["BEST", "CONFIGS", "Config", "ConversationIndex", "recall_at", "session_recall_at"]

Config: TypeAlias = Literal[
    "vector", "vector_context", "bm25", "hybrid", "hybrid_neighbours", "fusion", "fusion_cues"
]
CONFIGS: tuple[Config, ...] = (
    "vector",
    "vector_context",
    "bm25",
    "hybrid",
    "hybrid_neighbours",
    "fusion",
    "fusion_cues",
)
BEST: Config = "fusion_cues"

_TIME_WORDS = re.compile(
    r"\b(yesterday|today|tonight|tomorrow|recently|since|ago|"
    r"(last|next|this) (week|weekend|month|year|night|morning|summer|winter|spring|fall|"
    r"monday|tuesday|wednesday|thursday|friday|saturday|sunday)|"
    r"in (january|february|march|april|may|june|july|august|september|october|november|"
    r"december)|(19|20)\d\d)\b",
    re.IGNORECASE,
)
_DATE_WEIGHT = {"day": 2.0, "month": 1.0, "year": 0.3}


def _z(scores: np.ndarray) -> np.ndarray:
    spread = float(scores.std()) or 1.0
    return np.asarray((scores - scores.mean()) / spread)


def _lift(scores: np.ndarray, sessions: np.ndarray, weights: dict[int, float]) -> np.ndarray:
    """Add a share of each neighbour's score, within the same session only."""
    out = scores.copy()
    positions = np.arange(len(scores))
    for offset, weight in weights.items():
        shifted = np.roll(scores, offset)
        same = np.roll(sessions, offset) == sessions
        inside = (positions - offset >= 0) & (positions - offset < len(scores))  # no wrap-around
        out += weight * np.where(same & inside, shifted, 0.0)
    return out


def _rank(scores: np.ndarray) -> np.ndarray:
    order = np.argsort(-scores, kind="stable")
    ranks = np.empty(len(scores), dtype=np.float32)
    ranks[order] = np.arange(1, len(scores) + 1)
    return ranks


class ConversationIndex:
    """Everything needed to score one conversation's turns against questions."""

    def __init__(
        self,
        sample: EvalSample,
        plain: np.ndarray,
        contextual: np.ndarray,
        with_previous: np.ndarray | None = None,
        with_next: np.ndarray | None = None,
    ) -> None:
        self.sample = sample
        self.messages: list[EvalMessage] = [m for s in sample.sessions for m in s.messages]
        self.session_of = np.array([s.id for s in sample.sessions for _ in s.messages])
        self.plain = plain
        self.contextual = contextual
        self.with_previous = with_previous
        self.with_next = with_next
        # Rows follow the turns' order; every term is scored, as in plain BM25.
        documents = [(str(i), f"{m.speaker} {m.text}") for i, m in enumerate(self.messages)]
        self.bm25 = LexicalIndex.of(documents, k1=1.2, b=0.75, skip_common=False)
        self.bm25_short = LexicalIndex.of(documents, skip_common=False)
        self.speakers = np.array([m.speaker for m in self.messages])
        self.speaks_of_time = np.array([bool(_TIME_WORDS.search(m.text)) for m in self.messages])
        dates = {s.id: session_date(s.date) for s in sample.sessions}
        self.dates = [dates[s] for s in self.session_of]

    @classmethod
    async def build(
        cls, sample: EvalSample, embedder: Embedder, *, windows: bool = True
    ) -> ConversationIndex:
        """Embed the turns (plain, with speaker and date, and unless ``windows=False``
        with each neighbour: only ``fusion_cues`` needs those)."""
        plain: list[str] = []
        contextual: list[str] = []
        previous: list[str] = []
        following: list[str] = []
        for session in sample.sessions:
            lines = [f"{m.speaker}: {m.text}" for m in session.messages]
            for i, message in enumerate(session.messages):
                plain.append(message.text)
                contextual.append(f"[{session.date}] {lines[i]}")
                previous.append("\n".join(lines[max(0, i - 1) : i + 1]))
                following.append("\n".join(lines[i : i + 2]))
        if not plain:
            empty = np.zeros((0, 0), dtype=np.float32)
            return cls(sample, empty, empty, empty, empty)
        texts = [*plain, *contextual, *(previous + following if windows else [])]
        matrix = np.asarray(await embedder.embed(texts), dtype=np.float32)
        n = len(plain)
        return cls(sample, *(matrix[i * n : (i + 1) * n] for i in range(len(texts) // n)))

    def scores(self, config: Config, question: str, vector: np.ndarray) -> np.ndarray:
        if config == "vector":
            return np.asarray(self.plain @ vector)
        if config == "vector_context":
            return np.asarray(self.contextual @ vector)
        lexical = self.bm25.scores(question)
        if config == "bm25":
            return lexical
        sessions = self.session_of
        if config == "fusion":
            mixed = (
                0.5 * _z(lexical)
                + 0.3 * _z(self.contextual @ vector)
                + 0.2 * _z(self.plain @ vector)
            )
            lifted = _lift(mixed, sessions, {-1: 0.5, 1: 0.5, -2: 0.2, 2: 0.2})
            return _boost_sessions(lifted, sessions, 1.0)
        if config == "fusion_cues":
            return self._with_cues(question, vector)
        dense = self.contextual @ vector
        fused = 1.0 / (60 + _rank(dense)) + 1.0 / (60 + _rank(lexical))
        if config == "hybrid":
            return fused
        lifted = _lift(fused, sessions, {-1: 0.35, 1: 0.35})
        lowered = question.lower()
        for i, message in enumerate(self.messages):
            if message.speaker and message.speaker.lower() in lowered:
                lifted[i] *= 1.1
        return lifted

    def _with_cues(self, question: str, vector: np.ndarray) -> np.ndarray:
        if self.with_previous is None or self.with_next is None:
            raise ValueError("fusion_cues needs the window embeddings (build with windows=True)")
        sessions = self.session_of
        mixed = (
            0.5 * _z(self.bm25_short.scores(question))
            + 0.3 * _z(self.contextual @ vector)
            + 0.2 * _z(self.plain @ vector)
            + 0.15 * _z(self.with_previous @ vector)
            + 0.15 * _z(self.with_next @ vector)
        )
        scores = _lift(mixed, sessions, {-1: 0.5, 1: 0.5, -2: 0.2, 2: 0.2})
        spread = float(scores.std()) or 1.0
        lowered = question.lower()
        named = [
            s
            for s in set(self.speakers.tolist())
            if s and re.search(rf"\b{re.escape(s.lower())}\b", lowered)
        ]
        if len(named) == 1:
            scores = scores + 0.5 * spread * (self.speakers == named[0])
        if lowered.lstrip().startswith("when"):
            scores = scores + 0.6 * spread * self.speaks_of_time
        windows = question_windows(question)
        if windows:
            near = np.array(
                [
                    max((_DATE_WEIGHT[w.precision] * w.weight(d) for w in windows), default=0.0)
                    if d is not None
                    else 0.0
                    for d in self.dates
                ]
            )
            scores = scores + spread * near
        best = np.sort([scores[sessions == s].max() for s in np.unique(sessions)])[::-1]
        lead = (best[0] - best[min(2, len(best) - 1)]) / (float(scores.std()) or 1.0)
        return _boost_sessions(scores, sessions, min(1.5, 0.5 * lead))

    def top(self, config: Config, question: str, vector: np.ndarray, k: int) -> list[str]:
        if not self.messages:
            return []
        scores = self.scores(config, question, vector)
        order = np.argsort(-scores, kind="stable")[:k]
        return [self.messages[i].id for i in order]


def _boost_sessions(scores: np.ndarray, sessions: np.ndarray, weight: float) -> np.ndarray:
    """Lift every turn of the two sessions holding the best turns (evidence clusters)."""
    best = {s: float(scores[sessions == s].max()) for s in np.unique(sessions)}
    top = sorted(best, key=lambda s: -best[s])[:2]
    return np.asarray(scores + weight * float(scores.std()) * np.isin(sessions, top))


def recall_at(retrieved: Sequence[str], question: EvalQuestion) -> float | None:
    """Share of the evidence turns among ``retrieved`` (None for a question without evidence)."""
    if not question.evidence:
        return None
    found = set(retrieved)
    return sum(1 for e in question.evidence if e in found) / len(question.evidence)


def session_recall_at(retrieved: Sequence[str], question: EvalQuestion) -> float | None:
    """Share of the evidence sessions that hold at least one of ``retrieved``
    (message ids are ``<session>:<turn>``); None without evidence sessions."""
    if not question.evidence_sessions:
        return None
    hit = {r.rsplit(":", 1)[0] for r in retrieved}
    return sum(1 for s in question.evidence_sessions if s in hit) / len(question.evidence_sessions)
