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
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence
from typing import Literal, TypeAlias

import numpy as np

from xai.eval._datasets import EvalMessage, EvalQuestion, EvalSample
from xai.memory import Embedder

__all__ = ["CONFIGS", "Config", "ConversationIndex", "recall_at"]

Config: TypeAlias = Literal[
    "vector", "vector_context", "bm25", "hybrid", "hybrid_neighbours", "fusion"
]
CONFIGS: tuple[Config, ...] = (
    "vector",
    "vector_context",
    "bm25",
    "hybrid",
    "hybrid_neighbours",
    "fusion",
)

_WORD = re.compile(r"[a-z0-9]+")
_STOP = frozenset(
    [
        "a",
        "an",
        "the",
        "and",
        "or",
        "but",
        "of",
        "to",
        "in",
        "on",
        "at",
        "for",
        "with",
        "by",
        "from",
        "is",
        "are",
        "was",
        "were",
        "be",
        "been",
        "being",
        "do",
        "does",
        "did",
        "what",
        "when",
        "where",
        "who",
        "whom",
        "which",
        "why",
        "how",
        "that",
        "this",
        "these",
        "those",
        "it",
        "its",
        "i",
        "you",
        "he",
        "she",
        "we",
        "they",
        "me",
        "him",
        "her",
        "us",
        "them",
        "my",
        "your",
        "his",
        "our",
        "their",
    ]
)


_stemmer_cache: list[object] = []


def _stemmer() -> object:
    if not _stemmer_cache:
        import snowballstemmer

        _stemmer_cache.append(snowballstemmer.stemmer("porter"))
    return _stemmer_cache[0]


def tokens(text: str) -> list[str]:
    stemmer = _stemmer()
    return [
        stemmer.stemWord(w)  # type: ignore[attr-defined]
        for w in _WORD.findall(text.lower())
        if w not in _STOP
    ]


class _BM25:
    def __init__(self, documents: Sequence[list[str]], k1: float = 1.2, b: float = 0.75) -> None:
        self.k1, self.b = k1, b
        self.docs = [Counter(d) for d in documents]
        self.lengths = [len(d) for d in documents]
        self.average = (sum(self.lengths) / len(self.lengths)) if self.lengths else 1.0
        frequency: Counter[str] = Counter()
        for doc in self.docs:
            frequency.update(doc.keys())
        n = len(self.docs)
        self.idf = {t: math.log(1 + (n - f + 0.5) / (f + 0.5)) for t, f in frequency.items()}

    def scores(self, query: list[str]) -> np.ndarray:
        out = np.zeros(len(self.docs), dtype=np.float32)
        for term in set(query):
            idf = self.idf.get(term)
            if idf is None:
                continue
            for i, doc in enumerate(self.docs):
                tf = doc.get(term)
                if tf:
                    norm = tf + self.k1 * (1 - self.b + self.b * self.lengths[i] / self.average)
                    out[i] += idf * tf * (self.k1 + 1) / norm
        return out


def _z(scores: np.ndarray) -> np.ndarray:
    spread = float(scores.std()) or 1.0
    return np.asarray((scores - scores.mean()) / spread)


def _lift(scores: np.ndarray, sessions: np.ndarray, weights: dict[int, float]) -> np.ndarray:
    """Add a share of each neighbour's score, within the same session only."""
    out = scores.copy()
    for offset, weight in weights.items():
        shifted = np.roll(scores, offset)
        same = np.roll(sessions, offset) == sessions
        out += weight * np.where(same, shifted, 0.0)
    return out


def _rank(scores: np.ndarray) -> np.ndarray:
    order = np.argsort(-scores, kind="stable")
    ranks = np.empty(len(scores), dtype=np.float32)
    ranks[order] = np.arange(1, len(scores) + 1)
    return ranks


class ConversationIndex:
    """Everything needed to score one conversation's turns against questions."""

    def __init__(self, sample: EvalSample, plain: np.ndarray, contextual: np.ndarray) -> None:
        self.sample = sample
        self.messages: list[EvalMessage] = [m for s in sample.sessions for m in s.messages]
        self.session_of = [s.id for s in sample.sessions for _ in s.messages]
        self.plain = plain
        self.contextual = contextual
        self.bm25 = _BM25([tokens(f"{m.speaker} {m.text}") for m in self.messages])

    @classmethod
    async def build(cls, sample: EvalSample, embedder: Embedder) -> ConversationIndex:
        plain_texts = [m.text for s in sample.sessions for m in s.messages]
        context_texts = [
            f"[{s.date}] {m.speaker}: {m.text}" for s in sample.sessions for m in s.messages
        ]
        vectors = await embedder.embed([*plain_texts, *context_texts])
        matrix = np.asarray(vectors, dtype=np.float32)
        return cls(sample, matrix[: len(plain_texts)], matrix[len(plain_texts) :])

    def scores(self, config: Config, question: str, vector: np.ndarray) -> np.ndarray:
        if config == "vector":
            return np.asarray(self.plain @ vector)
        if config == "vector_context":
            return np.asarray(self.contextual @ vector)
        lexical = self.bm25.scores(tokens(question))
        if config == "bm25":
            return lexical
        if config == "fusion":
            sessions = np.array(self.session_of)
            mixed = (
                0.5 * _z(lexical)
                + 0.3 * _z(self.contextual @ vector)
                + 0.2 * _z(self.plain @ vector)
            )
            lifted = _lift(mixed, sessions, {-1: 0.5, 1: 0.5, -2: 0.2, 2: 0.2})
            best = {s: float(lifted[sessions == s].max()) for s in set(self.session_of)}
            top = sorted(best, key=lambda s: -best[s])[:2]
            return np.asarray(lifted + 1.0 * float(lifted.std()) * np.isin(sessions, top))
        dense = self.contextual @ vector
        fused = 1.0 / (60 + _rank(dense)) + 1.0 / (60 + _rank(lexical))
        if config == "hybrid":
            return fused
        lifted = fused.copy()
        same_session = np.array(self.session_of)
        for offset in (-1, 1):
            shifted = np.roll(fused, offset)
            same = np.roll(same_session, offset) == same_session
            lifted += 0.35 * np.where(same, shifted, 0.0)
        lowered = question.lower()
        for i, message in enumerate(self.messages):
            if message.speaker and message.speaker.lower() in lowered:
                lifted[i] *= 1.1
        return lifted

    def top(self, config: Config, question: str, vector: np.ndarray, k: int) -> list[str]:
        scores = self.scores(config, question, vector)
        order = np.argsort(-scores, kind="stable")[:k]
        return [self.messages[i].id for i in order]


def recall_at(retrieved: Sequence[str], question: EvalQuestion) -> float | None:
    """Share of the evidence turns among ``retrieved`` (None for a question without evidence)."""
    if not question.evidence:
        return None
    found = set(retrieved)
    return sum(1 for e in question.evidence if e in found) / len(question.evidence)
