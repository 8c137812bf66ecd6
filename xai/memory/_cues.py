"""The fusion: a pool's base scores, then the conversation cues, each a named function.

``fuse_columns`` z-scores the cosine and BM25 columns into a base score, lets the *base
cues* shape it, copies it into the scores and lets each *score cue* add to those, in
order (``_recall``'s module doc says what each cue does and why). The cues are plain
functions of one ``Fusion`` (the pool, the weights and the arrays being built), listed
in ``DEFAULT_CUES``: an ablation is a list edit (``DEFAULT_CUES.without("answers")``,
passed as ``cues=`` to ``fuse``, ``rank`` or ``rank_apart``). Each cue's weight stays in
``RecallWeights``; a weight of 0 turns its cue off as before.
"""

from __future__ import annotations

import datetime as dt
import functools
import re
from collections.abc import Callable, Iterable, Sequence
from typing import NamedTuple, TypeAlias

import numpy as np

from xai.exceptions import ConfigurationError
from xai.memory._dates import DateWindow, day_of, question_windows
from xai.memory._pool import ASSISTANT, Columns, PoolItem, RecallWeights, z_scores, z_within

__all__ = [
    "DEFAULT_CUES",
    "Cue",
    "Cues",
    "Fusion",
    "answers",
    "dates",
    "fuse",
    "fuse_columns",
    "leading_sessions",
    "length",
    "named_speaker",
    "neighbours",
    "session_best",
    "speaker",
    "time_words",
]

_TIME_WORDS = re.compile(
    r"\b(yesterday|today|tonight|tomorrow|recently|since|ago|"
    r"(last|next|this) (week|weekend|month|year|night|morning|summer|winter|spring|fall|"
    r"monday|tuesday|wednesday|thursday|friday|saturday|sunday)|"
    r"in (january|february|march|april|may|june|july|august|september|october|november|"
    r"december)|(19|20)\d\d)\b",
    re.IGNORECASE,
)
_DATE_WEIGHT = {"day": 3.0, "month": 1.0, "year": 0.3}
"""A named day points harder than a month, a month harder than a year."""
_REQUEST = re.compile(
    r"\b(can|could|would|will) you\b|\bdo you (know|remember|recall)\b|\bthank you\b", re.I
)
_YOU = re.compile(r"\b(you|your|yours|you've|you'd)\b", re.I)


class Fusion:
    """One fusion's working state, handed to every cue in turn: the query, the pool (as
    columns), the weights, the base scores, the scores being built and the pool's
    episodes by session."""

    __slots__ = (
        "_marks",
        "_spread",
        "base",
        "episode",
        "pool",
        "query",
        "scores",
        "sessions",
        "weights",
    )

    def __init__(self, query: str, pool: Columns, weights: RecallWeights, base: np.ndarray) -> None:
        self.query = query
        self.pool = pool
        self.weights = weights
        self.base = base
        """Cosine and BM25 z-scored and mixed; the base cues add to it."""
        self.episode = pool.episode
        self.scores = base
        """The base scores copied once the base cues are done; the score cues add to it."""
        self.sessions = _Sessions(pool.session_ids, pool.seq, pool.episode)
        self._spread: float | None = None
        self._marks: list[bool] | None = None

    def spread(self) -> float:
        """The scores' standard deviation when a cue first asks (1 if flat): the unit of
        the speaker, time-word and date cues, taken once the structural cues are done."""
        if self._spread is None:
            self._spread = float(self.scores.std()) or 1.0
        return self._spread

    def marks(self) -> list[bool]:
        """``episode`` as a list (the per-item cues loop over it)."""
        if self._marks is None:
            self._marks = self.episode.tolist()
        return self._marks


Cue: TypeAlias = Callable[[Fusion], None]
"""Adds to a fusion's ``base`` (a base cue) or ``scores`` (a score cue), in place."""


def length(fusion: Fusion) -> None:
    """An episode's length (the log of its characters, z-scored among the same speaker's
    turns in the pool) adds ``length`` to its base score."""
    weights, pool = fusion.weights, fusion.pool
    if weights.length > 0:
        rows = np.flatnonzero(fusion.episode)
        speakers = [pool.speakers[i] for i in rows.tolist()]
        fusion.base[rows] += weights.length * z_within(np.log1p(pool.lengths()[rows]), speakers)


def neighbours(fusion: Fusion) -> None:
    """Each episode gains a share of its session neighbours' base scores."""
    base, scores, sessions = fusion.base, fusion.scores, fusion.sessions
    for distance, share in enumerate(fusion.weights.neighbours, start=1):
        for step in (-distance, distance):
            j = sessions.at(step)
            found = j >= 0
            scores[found] += share * base[j[found]]


def answers(fusion: Fusion) -> None:
    """A question passes a share of its positive base score to a person's reply."""
    if fusion.weights.answer > 0:
        _answers(fusion.pool, fusion.base, fusion.scores, fusion.sessions, fusion.weights.answer)


def session_best(fusion: Fusion) -> None:
    """Each episode gains a share of the best base score in its session."""
    sessions, episode = fusion.sessions, fusion.episode
    if fusion.weights.session_best > 0 and sessions.count:
        # Centred over the episodes: their mean stays, so the episodes as a whole do not
        # rise past the facts (those of the best sessions do; the rest fall).
        best = sessions.best(fusion.base)[sessions.code[episode]]
        fusion.scores[episode] += fusion.weights.session_best * (best - best.mean())


def speaker(fusion: Fusion) -> None:
    """The episodes of the one speaker the query names (or the assistant's, asked what
    *you* said)."""
    pool, marks = fusion.pool, fusion.marks()
    named = named_speaker(fusion.query, {s for s, e in zip(pool.speakers, marks, strict=True) if e})
    if named is not None:
        spread = fusion.spread()
        weight = fusion.weights.you if named == ASSISTANT else fusion.weights.speaker
        said = np.array([s == named for s in pool.speakers], dtype=bool)
        fusion.scores += weight * spread * (said & fusion.episode)


def time_words(fusion: Fusion) -> None:
    """A "when" question favours the episodes that speak of time."""
    if fusion.query.lower().lstrip().startswith("when"):
        spread = fusion.spread()
        talks_of_time = np.array(
            [
                e and _talks_of_time(t)
                for t, e in zip(fusion.pool.texts(), fusion.marks(), strict=True)
            ],
            dtype=bool,
        )
        fusion.scores += fusion.weights.time_words * spread * talks_of_time


def dates(fusion: Fusion) -> None:
    """A day, month or year the query names lifts the episodes said then (and a
    fortnight after a day)."""
    windows = question_windows(fusion.query)
    if windows:
        spread = fusion.spread()
        near = _near_dates(fusion.pool.at(), windows)
        fusion.scores += fusion.weights.date * spread * near * fusion.episode


def leading_sessions(fusion: Fusion) -> None:
    """(Off by default: ``session`` is 0.) The best sessions' episodes, by their lead."""
    fusion.scores = _boost_sessions(fusion.scores, fusion.sessions, fusion.weights)


class Cues(NamedTuple):
    """The cues a fusion applies, in order: ``base`` to the base score, then ``scores``."""

    base: tuple[Cue, ...]
    scores: tuple[Cue, ...]

    def without(self, *names: str) -> Cues:
        """These cues less the ones named (by function name): an ablation."""
        known = {c.__name__ for c in (*self.base, *self.scores)}
        unknown = set(names) - known
        if unknown:
            raise ConfigurationError(
                f"no cue named {sorted(unknown)}; the cues are {sorted(known)}"
            )
        return Cues(
            tuple(c for c in self.base if c.__name__ not in names),
            tuple(c for c in self.scores if c.__name__ not in names),
        )


DEFAULT_CUES = Cues(
    base=(length,),
    scores=(neighbours, answers, session_best, speaker, time_words, dates, leading_sessions),
)
"""The search's cues. The order is part of the score: the structural cues (neighbours,
answers, sessions) come before ``spread`` is taken for the speaker, time and date ones."""


def fuse(
    query: str, pool: Sequence[PoolItem], weights: RecallWeights, *, cues: Cues = DEFAULT_CUES
) -> np.ndarray:
    """A score for every item of ``pool`` (higher is better)."""
    return fuse_columns(query, Columns.of(pool), weights, cues=cues)


def fuse_columns(
    query: str, pool: Columns, weights: RecallWeights, *, cues: Cues = DEFAULT_CUES
) -> np.ndarray:
    """``fuse`` of a pool given as columns."""
    if not len(pool):
        return np.zeros(0)
    base = (1 - weights.lexical) * z_scores(pool.dense) + weights.lexical * z_scores(pool.lexical)
    if not pool.episode.any() and not any(pool.speakers):
        return base  # every cue needs an episode or a speaker: facts keep their base
    fusion = Fusion(query, pool, weights, base)
    for cue in cues.base:
        cue(fusion)
    fusion.scores = fusion.base.copy()
    for cue in cues.scores:
        cue(fusion)
    return fusion.scores


def named_speaker(query: str, speakers: Iterable[str]) -> str | None:
    """The one known speaker the query names (a query asking what *you* said names the
    assistant); None for none or several."""
    lowered = query.lower()
    named = {
        s
        for s in speakers
        if s and s != ASSISTANT and re.search(rf"\b{re.escape(s.lower())}\b", lowered)
    }
    if len(named) == 1:
        return named.pop()
    if not named and _YOU.search(_REQUEST.sub(" ", query)):
        return ASSISTANT
    return None


@functools.lru_cache(maxsize=1 << 16)
def _talks_of_time(text: str) -> bool:
    # Cached: the same episodes come back in pool after pool, and the search is costly.
    return bool(_TIME_WORDS.search(text))


def _date_weight(day: dt.date, windows: Sequence[DateWindow]) -> float:
    return max(_DATE_WEIGHT[w.precision] * w.weight(day) for w in windows)


_DAY_SECONDS = 86_400
_EDGE = 1e-3
"""Moments this close to midnight (UTC) get their day from ``day_of`` itself: it rounds
to the microsecond."""


def _near_dates(at: Sequence[float | None], windows: Sequence[DateWindow]) -> np.ndarray:
    out = np.zeros(len(at))
    if not windows:
        return out
    by_day: dict[int, float] = {}  # a pool's episodes fall on a few days: one weight each
    for i, moment in enumerate(at):
        if moment is None:
            continue
        day = int(moment // _DAY_SECONDS)
        if _EDGE < moment - day * _DAY_SECONDS < _DAY_SECONDS - _EDGE:
            weight = by_day.get(day)
            if weight is None:
                weight = by_day[day] = _date_weight(day_of(moment), windows)
        else:
            weight = _date_weight(day_of(moment), windows)
        out[i] = weight
    return out


def _answers(
    pool: Columns,
    base: np.ndarray,
    scores: np.ndarray,
    sessions: _Sessions,
    share: float,
) -> None:
    """Move ``share`` of each question's positive base score to its answer (in place):
    the next turn, by another speaker, when it is a person's input (``PERSON``)."""
    before = sessions.at(-1)
    answers = np.flatnonzero(before >= 0)
    if not len(answers):
        return
    asked = before[answers]
    questions = pool.asks()[asked]
    answers, asked = answers[questions], asked[questions]
    people = pool.people()[answers]
    answers, asked = answers[people], asked[people]
    speakers = pool.speakers
    replied = np.fromiter(
        (speakers[a] != speakers[q] for a, q in zip(answers.tolist(), asked.tolist(), strict=True)),
        dtype=bool,
        count=len(answers),
    )
    answers, asked = answers[replied], asked[replied]
    # Two turns at the question's next seq (the corpus keeps equal seqs): one answers it,
    # the first in the pool, so that what the question gives up is what its answer gains.
    _, first = np.unique(asked, return_index=True)
    answers, asked = answers[first], asked[first]
    moved = share * np.maximum(base[asked], 0.0)
    scores[answers] += moved
    scores[asked] -= moved


class _Sessions:
    """The pool's episodes by session and ``seq``, as arrays: ``code`` numbers each session
    (in the order its first episode appears; -1 for a fact, whatever its session)."""

    def __init__(self, session_ids: list[str], seq: np.ndarray, episode: np.ndarray) -> None:
        codes: dict[str, int] = {}
        marks = episode.tolist()
        code = [
            codes.setdefault(s, len(codes)) if e else -1
            for s, e in zip(session_ids, marks, strict=True)
        ]
        self.count = len(codes)
        self.code = np.array(code, dtype=np.int64)
        self.episode = episode
        self.key = (self.code << 32) + seq
        # (session, seq) -> the last pool index holding it, as a sorted lookup
        rows = np.flatnonzero(episode)
        order = rows[np.argsort(self.key[rows], kind="stable")]
        keys = self.key[order]
        last = np.ones(len(keys), dtype=bool)
        last[:-1] = keys[1:] != keys[:-1]
        self._keys, self._index = keys[last], order[last]
        self._at: dict[int, np.ndarray] = {}

    def best(self, scores: np.ndarray) -> np.ndarray:
        """The best of ``scores`` in each session, by session code."""
        best = np.full(self.count, -np.inf)
        np.maximum.at(best, self.code[self.episode], scores[self.episode])
        return best

    def at(self, step: int) -> np.ndarray:
        """For each item, the pool index of the episode ``step`` away in its session
        (-1 for none, and for every item that is not an episode). Kept: do not modify."""
        found = self._at.get(step)
        if found is not None:
            return found
        out = self._at[step] = np.full(len(self.key), -1, dtype=np.int64)
        if not len(self._keys):
            return out
        wanted = self.key + step
        place = np.minimum(np.searchsorted(self._keys, wanted), len(self._keys) - 1)
        hit = (self._keys[place] == wanted) & self.episode
        out[hit] = self._index[place[hit]]
        return out


def _boost_sessions(scores: np.ndarray, sessions: _Sessions, weights: RecallWeights) -> np.ndarray:
    if not sessions.count or weights.session <= 0:
        return scores
    best = sessions.best(scores)
    ranked = np.argsort(-best, kind="stable")  # ties: the session seen first
    spread = float(scores.std()) or 1.0
    lead = (best[ranked[0]] - best[ranked[min(weights.sessions, len(ranked) - 1)]]) / spread
    boost = min(weights.session_max, weights.session * lead) * spread
    top = ranked[: weights.sessions]
    return np.asarray(scores + boost * (np.isin(sessions.code, top) & sessions.episode))
