"""Turn-level retrieval over one conversation, in several configurations, and recall@k.

``recall`` is the library's retrieval (``xai.memory``: the one ``LongTermMemory.search``
uses), run over the sample's turns treated as episodes: each turn embedded once as
``speaker: text``, said at its session's time. The others are plain baselines, so a
gain is measured against them:

- ``vector``: cosine similarity between the question and each turn's text.
- ``vector_context``: each turn embedded with its speaker and session date.
- ``bm25``: lexical scoring of stemmed words.
- ``hybrid``: vector_context and bm25 fused (reciprocal rank fusion).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal, TypeAlias

import msgspec
import numpy as np

from xai.eval._datasets import EvalMessage, EvalQuestion, EvalSample
from xai.memory import (
    Embedder,
    EpisodeCorpus,
    LexicalIndex,
    RecallWeights,
    rank_apart,
    session_time,
)

__all__ = [
    "BEST",
    "CONFIGS",
    "Config",
    "ConversationIndex",
    "TurnEpisode",
    "recall_at",
    "session_recall_at",
    "turn_episodes",
]

Config: TypeAlias = Literal["vector", "vector_context", "bm25", "hybrid", "recall"]
CONFIGS: tuple[Config, ...] = ("vector", "vector_context", "bm25", "hybrid", "recall")
BEST: Config = "recall"


class TurnEpisode(msgspec.Struct, frozen=True, kw_only=True):
    """A dataset turn as the library's retrieval sees an episode."""

    id: str
    session_id: str
    seq: int
    speaker: str
    text: str
    at: float
    origin: str = "user"
    """``assistant`` for the dataset's assistant turns; every other speaker is a person."""


def turn_episodes(sample: EvalSample) -> list[TurnEpisode]:
    """The sample's turns as episodes: a session's turns in order, a second apart from the
    session's time (0 when its header names no date)."""
    out: list[TurnEpisode] = []
    for session in sample.sessions:
        start = session_time(session.date) or 0.0
        for seq, message in enumerate(session.messages):
            out.append(
                TurnEpisode(
                    id=message.id,
                    session_id=session.id,
                    seq=seq,
                    speaker=message.speaker,
                    text=message.text,
                    at=start + seq,
                    origin="assistant" if message.speaker.casefold() == "assistant" else "user",
                )
            )
    return out


def episode_text(episode: TurnEpisode) -> str:
    """What the library embeds of an episode."""
    return f"{episode.speaker}: {episode.text}"


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
        corpus: EpisodeCorpus,
        weights: RecallWeights | None = None,
    ) -> None:
        self.sample = sample
        self.messages: list[EvalMessage] = [m for s in sample.sessions for m in s.messages]
        self.plain = plain
        self.contextual = contextual
        self.corpus = corpus
        self.weights = weights if weights is not None else RecallWeights()
        # Rows follow the turns' order; every term is scored, as in plain BM25.
        documents = [(str(i), f"{m.speaker} {m.text}") for i, m in enumerate(self.messages)]
        self.bm25 = LexicalIndex.of(documents, k1=1.2, b=0.75, skip_common=False)

    @classmethod
    async def build(
        cls, sample: EvalSample, embedder: Embedder, *, baselines: bool = True
    ) -> ConversationIndex:
        """Embed the turns as the library does (and, unless ``baselines=False``, plain and
        with speaker and date for the baseline configurations)."""
        episodes = turn_episodes(sample)
        texts = [episode_text(e) for e in episodes]
        if baselines:
            for session in sample.sessions:
                texts.extend(m.text for m in session.messages)
            for session in sample.sessions:
                texts.extend(f"[{session.date}] {m.speaker}: {m.text}" for m in session.messages)
        corpus = EpisodeCorpus()
        n = len(episodes)
        if not n:
            empty = np.zeros((0, 0), dtype=np.float32)
            return cls(sample, empty, empty, corpus)
        matrix = np.asarray(await embedder.embed(texts), dtype=np.float32)
        corpus.add(episodes, matrix[:n])
        plain, contextual = (matrix[n : 2 * n], matrix[2 * n :]) if baselines else (None, None)
        empty = np.zeros((0, matrix.shape[1]), dtype=np.float32)
        return cls(
            sample,
            plain if plain is not None else empty,
            contextual if contextual is not None else empty,
            corpus,
        )

    def scores(self, config: Config, question: str, vector: np.ndarray) -> np.ndarray:
        """A score per turn for a baseline configuration."""
        if config == "recall":
            raise ValueError("`recall` ranks a candidate pool: use top()")
        if len(self.plain) != len(self.messages):
            raise ValueError("the baselines need their embeddings (build with baselines=True)")
        if config == "vector":
            return np.asarray(self.plain @ vector)
        if config == "vector_context":
            return np.asarray(self.contextual @ vector)
        lexical = self.bm25.scores(question)
        if config == "bm25":
            return lexical
        dense = self.contextual @ vector
        return np.asarray(1.0 / (60 + _rank(dense)) + 1.0 / (60 + _rank(lexical)))

    def top(self, config: Config, question: str, vector: np.ndarray, k: int) -> list[str]:
        if not self.messages:
            return []
        if config == "recall":
            weights = self.weights
            episodes = self.corpus.columns(question, vector, weights)
            return [item.id for item, _ in rank_apart(question, [], episodes, weights, k)]
        scores = self.scores(config, question, vector)
        order = np.argsort(-scores, kind="stable")[:k]
        return [self.messages[i].id for i in order]


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
