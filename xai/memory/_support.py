"""Grounded candidates: does the message a candidate cites support what it says?

The origin rule (``xai.agent._adjudication``) checks *which* message a candidate cites
(the user's, not the model's); this checks *what* it cites. A small model once turned the
assistant's "You're a wizard, don't forget to remember it!" into the user fact "I'm a
wizard, don't forget to remember it!", citing a user message that said nothing of it.

Two measures between the candidate and its evidence (the cited episodes' text together):

- **overlap**: the share of the candidate's content words (``lexical_tokens``: stop
  words out, stemmed; the frame words of an extraction, "user", "said", out too) found
  in the evidence. A restatement keeps its nouns and verbs;
- **similarity**: the cosine between their embeddings (a paraphrase: "expecting our
  first baby" supports "is going to be a parent").

A candidate is supported when either reaches its threshold (``MemoryConfig.
support_overlap``, ``support_similarity``), chosen on the choice half of
``tests/data/support.jsonl`` and reported on the other half (``bench/support.py``).
A candidate whose evidence is unknown to the memory (episodes not recorded, or pruned)
is not checked: nothing to check it against.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from xai.memory._lexical import lexical_tokens

__all__ = ["Support", "support"]

_FRAME = frozenset(
    lexical_tokens("user users user's said says told mentioned remember name named called")
)
"""Words an extraction frames a fact with ("The user said: ...", "The user's name is Ada"
from "I'm Ada"): not content."""


class Support:
    """The two measures of one candidate against its evidence."""

    __slots__ = ("overlap", "similarity")

    def __init__(self, overlap: float, similarity: float) -> None:
        self.overlap = overlap
        self.similarity = similarity

    def holds(self, min_overlap: float, min_similarity: float) -> bool:
        return self.overlap >= min_overlap or self.similarity >= min_similarity

    def __repr__(self) -> str:
        return f"overlap {self.overlap:.2f}, similarity {self.similarity:.2f}"


def content_words(text: str) -> set[str]:
    return {w for w in lexical_tokens(text) if w not in _FRAME}


def support(
    candidate: str,
    evidence: Sequence[str],
    vector: Sequence[float],
    evidence_vector: Sequence[float],
) -> Support:
    """How well ``evidence`` (the cited texts; ``evidence_vector`` the embedding of them
    joined) supports ``candidate`` (``vector`` its embedding)."""
    words = content_words(candidate)
    said = set().union(*(content_words(t) for t in evidence)) if evidence else set()
    overlap = len(words & said) / len(words) if words else 1.0
    a, b = np.asarray(vector, dtype=np.float32), np.asarray(evidence_vector, dtype=np.float32)
    norm = float(np.linalg.norm(a) * np.linalg.norm(b))
    similarity = float(a @ b) / norm if norm else 0.0
    return Support(overlap, similarity)
