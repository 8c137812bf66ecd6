"""Words, not meaning: Porter-stemmed tokens and a BM25 index of the active facts.

Dense search misses what only the words say (names, rare terms, numbers); BM25
finds those. ``LongTermMemory.search`` fuses the two. The index lives in memory,
is built from the facts on first search, and follows every write after that.
Each term keeps its postings as arrays (rebuilt only when the term changes), so
a query costs a few vector operations per term, not a loop over facts. A term in
more than half of the facts ("user", in "The user ...") is skipped (from ten
facts on): its weight is
next to nothing and its postings are the longest (at 100k facts, 0.3 ms a query
instead of 1.9).
"""

from __future__ import annotations

import functools
import math
import re
import threading
from collections.abc import Callable, Iterable, Sequence

import msgspec
import numpy as np

__all__ = ["TOKENS_VERSION", "LexicalIndex", "Terms", "lexical_tokens"]

TOKENS_VERSION = 1
"""Changes whenever ``lexical_tokens`` would count a text's terms differently (stop
words, the stemmer): terms counted by another version (a snapshot's) are not used."""

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
_local = threading.local()
_SKIP_FROM = 10
"""From this many documents on, a term in more than half of them is not scored."""


def lexical_tokens(text: str) -> list[str]:
    """Lower-cased words without stop words, Porter-stemmed."""
    return [_stem(w) for w in _WORD.findall(text.lower()) if w not in _STOP]


@functools.lru_cache(maxsize=200_000)
def _stem(word: str) -> str:
    # A stemmer per thread: the snowball stemmer keeps state while it works. The cache
    # matters more: a vocabulary is small next to the text that uses it.
    stemmer = getattr(_local, "stemmer", None)
    if stemmer is None:
        import snowballstemmer

        stemmer = _local.stemmer = snowballstemmer.stemmer("porter")
    return str(stemmer.stemWord(word))


class LexicalIndex:
    """BM25 over documents (facts) that come and go. ``k1`` and ``b`` suit short texts;
    ``skip_common=False`` scores every term, however common (plain BM25)."""

    def __init__(self, *, k1: float = 0.9, b: float = 0.4, skip_common: bool = True) -> None:
        self.k1, self.b = k1, b
        self.skip_common = skip_common
        self._row: dict[str, int] = {}
        self._ids: list[str | None] = []
        self._free: list[int] = []
        self._terms: list[dict[str, int] | None] = []
        """Each row's term counts (``None``: still only in ``_base``)."""
        self._base: Terms | None = None
        self._lengths = np.zeros(0, dtype=np.float32)
        self._total = 0
        self._postings: dict[str, dict[int, int]] = {}
        self._arrays: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        self._frozen: set[str] = set()
        """Terms whose postings are only in ``_arrays`` (built by ``of``): made a dict
        when a document with the term comes or goes."""

    def __len__(self) -> int:
        return len(self._row)

    def __contains__(self, doc_id: object) -> bool:
        return doc_id in self._row

    def set(self, doc_id: str, text: str) -> None:
        """Add ``doc_id``, or replace its text."""
        self.discard(doc_id)
        counts: dict[str, int] = {}
        for term in lexical_tokens(text):
            counts[term] = counts.get(term, 0) + 1
        row = self._free.pop() if self._free else len(self._ids)
        if row == len(self._ids):
            self._ids.append(doc_id)
            self._terms.append(counts)
            if row >= len(self._lengths):
                grown = np.zeros(max(16, 2 * len(self._lengths)), dtype=np.float32)
                grown[: len(self._lengths)] = self._lengths
                self._lengths = grown
        else:
            self._ids[row] = doc_id
            self._terms[row] = counts
        self._row[doc_id] = row
        length = sum(counts.values())
        self._lengths[row] = length
        self._total += length
        for term, count in counts.items():
            self._editable(term)[row] = count
            self._arrays.pop(term, None)

    def discard(self, doc_id: str) -> None:
        row = self._row.pop(doc_id, None)
        if row is None:
            return
        for term in self._counts(row):
            posting = self._editable(term)
            del posting[row]
            if not posting:
                del self._postings[term]
            self._arrays.pop(term, None)
        self._total -= int(self._lengths[row])
        self._lengths[row] = 0
        self._ids[row] = None
        self._terms[row] = {}
        self._free.append(row)

    def _editable(self, term: str) -> dict[int, int]:
        posting = self._postings.get(term)
        if posting is None:
            if term in self._frozen:
                self._frozen.discard(term)
                rows, counts = self._arrays[term]
                posting = dict(zip(rows.tolist(), counts.astype(np.int64).tolist(), strict=True))
            else:
                posting = {}
            self._postings[term] = posting
        return posting

    def row_of(self, doc_id: str) -> int:
        """The row of ``doc_id`` (held) in the arrays ``scores`` returns."""
        return self._row[doc_id]

    def _posting(self, term: str) -> tuple[np.ndarray, np.ndarray] | None:
        cached = self._arrays.get(term)
        if cached is None:
            posting = self._postings.get(term)
            if not posting:
                return None
            rows = np.fromiter(posting.keys(), dtype=np.int64, count=len(posting))
            counts = np.fromiter(posting.values(), dtype=np.float32, count=len(posting))
            cached = self._arrays[term] = (rows, counts)
        return cached

    def scores(self, query: str) -> np.ndarray:
        """The BM25 score of every row for ``query`` (rows are given out in the order
        documents are added, and reused after ``discard``)."""
        scores = np.zeros(len(self._ids), dtype=np.float32)
        docs = len(self._row)
        if not docs:
            return scores
        average = self._total / docs or 1.0
        for term in set(lexical_tokens(query)):
            found = self._posting(term)
            if found is None:
                continue
            rows, counts = found
            if self.skip_common and 2 * len(rows) > docs >= _SKIP_FROM:
                continue  # in most facts ("user"): it weighs little and costs the most
            idf = math.log(1 + (docs - len(rows) + 0.5) / (len(rows) + 0.5))
            norm = counts + self.k1 * (1 - self.b + self.b * self._lengths[rows] / average)
            scores[rows] += idf * counts * (self.k1 + 1) / norm
        return scores

    def top(
        self, query: str, n: int, *, keep: Callable[[str], bool] | None = None
    ) -> list[tuple[str, float]]:
        """The ``n`` best-scoring documents that share a word with ``query`` (and pass
        ``keep``), best first."""
        if not self._row or n <= 0:
            return []
        return self.top_of(self.scores(query), n, keep=keep)

    def top_of(
        self, scores: np.ndarray, n: int, *, keep: Callable[[str], bool] | None = None
    ) -> list[tuple[str, float]]:
        """``top`` over scores already computed by ``scores``."""
        if not self._row or n <= 0:
            return []
        hit = np.flatnonzero(scores != 0)  # (a mask first: 10x faster than on floats)
        if keep is None and len(hit) > n:  # only the best n need ordering
            hit = hit[np.argpartition(-scores[hit], n - 1)[:n]]
        order = hit[np.argsort(-scores[hit], kind="stable")]
        out: list[tuple[str, float]] = []
        for row in order:
            doc_id = self._ids[row]
            if doc_id is not None and (keep is None or keep(doc_id)):
                out.append((doc_id, float(scores[row])))
                if len(out) == n:
                    break
        return out

    def pick(self, scores: np.ndarray, ids: Sequence[str]) -> np.ndarray:
        """The entries of ``scores`` (from ``scores``) for ``ids``; 0 for an id not held."""
        rows = [self._row.get(i, -1) for i in ids]
        out = np.zeros(len(rows), dtype=np.float32)
        held = np.array([r >= 0 for r in rows], dtype=bool)
        if held.any():
            out[held] = scores[np.array(rows)[held]]
        return out

    @classmethod
    def of(
        cls,
        documents: Iterable[tuple[str, str]],
        *,
        k1: float = 0.9,
        b: float = 0.4,
        skip_common: bool = True,
    ) -> LexicalIndex:
        index = cls(k1=k1, b=b, skip_common=skip_common)
        texts = dict(documents)  # (a repeated id: its last text, as ``set`` would leave)
        index.load(list(texts), Terms.of(texts.values()))
        return index

    @classmethod
    def loaded(
        cls, ids: Sequence[str], terms: Terms, *, k1: float = 0.9, b: float = 0.4
    ) -> LexicalIndex:
        """An index of documents ``ids`` (distinct) whose terms were counted before."""
        index = cls(k1=k1, b=b)
        index.load(ids, terms)
        return index

    def load(self, ids: Sequence[str], terms: Terms) -> None:
        """Fill this empty index with documents ``ids`` (distinct) and their ``terms``:
        the same rows, lengths and postings as ``set`` of each in turn, the postings
        grouped by numpy (a dict entry per posting took most of a large memory's open);
        a document's own term counts are made when it changes."""
        count = len(ids)
        if len(terms.offsets) != count + 1:
            raise ValueError("one document of terms for each id")
        self._ids = list(ids)
        self._row = {doc_id: row for row, doc_id in enumerate(ids)}
        if len(self._row) != count:
            raise ValueError("document ids must be distinct")
        self._base = terms
        self._terms = [None] * count
        sizes = np.diff(terms.offsets)
        documents = np.repeat(np.arange(count, dtype=np.int64), sizes)
        values = terms.counts.astype(np.float32)
        self._lengths = np.bincount(documents, weights=values, minlength=count).astype(np.float32)
        self._total = int(terms.counts.sum())
        if not len(terms.codes):
            return
        order = np.argsort(terms.codes, kind="stable")  # each term's rows stay ascending
        rows, values = documents[order], values[order]
        found = np.bincount(terms.codes, minlength=len(terms.vocabulary))
        bounds = np.concatenate(([0], np.cumsum(found)))
        self._arrays = {
            term: (rows[bounds[code] : bounds[code + 1]], values[bounds[code] : bounds[code + 1]])
            for code, term in enumerate(terms.vocabulary)
            if found[code]
        }
        self._frozen = set(self._arrays)

    def terms(self, ids: Sequence[str]) -> Terms:
        """The term counts of documents ``ids`` (held), in that order."""
        vocabulary: dict[str, int] = {}
        codes: list[int] = []
        counts: list[int] = []
        offsets = [0]
        for doc_id in ids:
            for term, n in self._counts(self._row[doc_id]).items():
                codes.append(vocabulary.setdefault(term, len(vocabulary)))
                counts.append(n)
            offsets.append(len(codes))
        return Terms(
            list(vocabulary),
            np.asarray(offsets, dtype=np.int64),
            np.asarray(codes, dtype=np.int32),
            np.asarray(counts, dtype=np.int32),
        )

    def _counts(self, row: int) -> dict[str, int]:
        """The term counts of the document in ``row``."""
        counts = self._terms[row]
        if counts is None:
            base = self._base
            assert base is not None
            start, end = int(base.offsets[row]), int(base.offsets[row + 1])
            codes, numbers = base.codes[start:end].tolist(), base.counts[start:end].tolist()
            counts = {base.vocabulary[c]: int(n) for c, n in zip(codes, numbers, strict=True)}
            self._terms[row] = counts
        return counts


class Terms(msgspec.Struct, frozen=True):
    """The terms of documents, counted: document ``i`` holds terms
    ``vocabulary[codes[offsets[i]:offsets[i + 1]]]``, each ``counts`` times (what
    ``lexical_tokens`` gives; kept in the memory's index snapshot)."""

    vocabulary: list[str]
    offsets: np.ndarray
    codes: np.ndarray
    counts: np.ndarray

    @classmethod
    def of(cls, texts: Iterable[str]) -> Terms:
        vocabulary: dict[str, int] = {}
        codes: list[int] = []
        counts: list[int] = []
        offsets = [0]
        for text in texts:
            own: dict[int, int] = {}
            for term in lexical_tokens(text):
                code = vocabulary.setdefault(term, len(vocabulary))
                own[code] = own.get(code, 0) + 1
            codes.extend(own)
            counts.extend(own.values())
            offsets.append(len(codes))
        return cls(
            list(vocabulary),
            np.asarray(offsets, dtype=np.int64),
            np.asarray(codes, dtype=np.int32),
            np.asarray(counts, dtype=np.int32),
        )

    def __len__(self) -> int:
        return len(self.offsets) - 1

    def take(self, rows: np.ndarray) -> Terms:
        """The documents ``rows``, in that order (the vocabulary shared)."""
        starts, ends = self.offsets[rows], self.offsets[rows + 1]
        sizes = ends - starts
        offsets = np.concatenate(([0], np.cumsum(sizes))).astype(np.int64)
        picks = np.repeat(starts - offsets[:-1], sizes) + np.arange(int(offsets[-1]))
        return Terms(self.vocabulary, offsets, self.codes[picks], self.counts[picks])

    def plus(self, other: Terms) -> Terms:
        """These documents, then ``other``'s (its terms coded in this vocabulary)."""
        vocabulary = {term: code for code, term in enumerate(self.vocabulary)}
        recode = np.fromiter(
            (vocabulary.setdefault(t, len(vocabulary)) for t in other.vocabulary),
            dtype=np.int32,
            count=len(other.vocabulary),
        )
        return Terms(
            list(vocabulary),
            np.concatenate([self.offsets, other.offsets[1:] + self.offsets[-1]]),
            np.concatenate([self.codes, recode[other.codes]]).astype(np.int32),
            np.concatenate([self.counts, other.counts]).astype(np.int32),
        )
