"""The retrieval: dense + lexical candidates over episodes and facts, fused with conversation cues.

One function ranks a *pool* of candidates, never the whole store, so a query
costs the same at 600 turns and at 100k:

1. **Candidates.** The ``depth`` nearest episodes by meaning (HNSW in the store,
   or exact over a small in-memory corpus) and the ``depth`` best by words (BM25),
   the same for facts; then the session neighbours (``seq`` ± ``span``) of every
   episode candidate, because evidence sits in runs of turns and a reply carries
   its question's words.
2. **Base score.** Cosine similarity and BM25, each z-normalised over the pool and
   mixed ``lexical`` : ``1 - lexical`` (a z-score, not a raw score: the two scales
   never meet otherwise); an episode adds a share of its length against its
   speaker's other turns ("Thanks!" tells less than a turn that tells of a trip).
3. **Cues** (episodes only; each in standard deviations of the pool's scores, so
   no cue depends on the embedder's or BM25's scale):
   - neighbours: each episode gains a share of its neighbours' base scores;
   - answers: a turn that ends in a question passes a share of its (positive) base
     score to the next turn when another speaker says it and that turn is a person's
     input: a question is found by the words the query shares with it, but between two
     people the fact is often in the reply ("What gave you the idea?" / "I'm obsessed
     with those..."). The assistant's reply (or another agent's, a tool's, the
     system's) takes nothing: a user who asks an assistant puts their own facts in the
     question;
   - sessions: each episode gains a share of the best base score in its session (a
     session that holds a good match likely holds the rest of the answer);
   - speaker: when the query names exactly one known speaker, that speaker's
     episodes; a query that asks what *you* said favours the assistant's;
   - dates: a day, month or year the query names lifts episodes said in that
     window (by ``Episode.at``, not by any header), and a fortnight after a day
     (people tell of last week's news); "when" questions favour episodes that
     speak of time;
   - (off by default) the two sessions holding the best episodes, scaled by how
     clearly they lead.
4. **Facts stand where they were said.** Facts and episodes are z-scored apart (two
   pools of different texts); a fact whose evidence episodes are in the pool takes
   the best of their scores, cues and all (it *is* that turn's knowledge), and a fact
   and the episodes it was drawn from take one slot of the ``k`` (two facts drawn
   from one turn take two). A fact
   with no evidence in the pool keeps its own score. (On LoCoMo 0-4 through the Agent,
   where every user turn is also a fact: 81.9 -> 82.6 recall@10.)

The weights (``RecallWeights``) were chosen on LoCoMo conversations 0-4 only;
conversations 5-9 are the held-out figures (docs/memory.md, bench/locomo_recall.py).
"""

from __future__ import annotations

import datetime as dt
import functools
import math
import re
from collections.abc import Callable, Iterable, Sequence
from typing import Literal, Protocol, TypeAlias

import msgspec
import numpy as np

from xai.exceptions import ConfigurationError
from xai.memory._dates import DateWindow, day_of, question_windows

__all__ = [
    "PERSON",
    "Columns",
    "EpisodeLike",
    "PoolItem",
    "RecallWeights",
    "fuse",
    "fuse_columns",
    "named_speaker",
    "rank",
    "rank_apart",
]

Kind: TypeAlias = Literal["episode", "fact"]

_TIME_WORDS = re.compile(
    r"\b(yesterday|today|tonight|tomorrow|recently|since|ago|"
    r"(last|next|this) (week|weekend|month|year|night|morning|summer|winter|spring|fall|"
    r"monday|tuesday|wednesday|thursday|friday|saturday|sunday)|"
    r"in (january|february|march|april|may|june|july|august|september|october|november|"
    r"december)|(19|20)\d\d)\b",
    re.IGNORECASE,
)
_DATE_WEIGHT = {"day": 2.0, "month": 1.0, "year": 0.3}
"""A named day points harder than a month, a month harder than a year."""
_REQUEST = re.compile(
    r"\b(can|could|would|will) you\b|\bdo you (know|remember|recall)\b|\bthank you\b", re.I
)
_YOU = re.compile(r"\b(you|your|yours|you've|you'd)\b", re.I)
_ASKS = re.compile(r"\?\s*(\[[^\]]*\]\s*)?$")
"""A turn that ends in a question (a bracketed note after it, such as an attachment's, aside)."""
ASSISTANT = "assistant"
PERSON = "user"
"""The origin of a person's input (``xai.messages.Origin``): the only replies that take a
share of a question's score. The assistant's answer is advice; another agent's, a tool's
or the system's input is no person's answer."""


class EpisodeLike(Protocol):
    """What the retrieval reads of an episode (``xai.messages.Episode`` has it all)."""

    @property
    def id(self) -> str: ...
    @property
    def session_id(self) -> str: ...
    @property
    def seq(self) -> int: ...
    @property
    def speaker(self) -> str: ...
    @property
    def text(self) -> str: ...
    @property
    def at(self) -> float: ...
    @property
    def origin(self) -> str: ...


_MAX_SPAN = 64
"""Neighbours on each side past which a window is a whole session (and a pool, thousands)."""


class RecallWeights(msgspec.Struct, frozen=True, kw_only=True):
    """The fusion's few weights (chosen on LoCoMo conversations 0-4; see the module doc)."""

    depth: int = 50
    """Candidates taken from each of dense and lexical search, for episodes and for facts."""
    span: int = 2
    """Session neighbours added on each side of an episode candidate."""
    lexical: float = 0.5
    """Share of BM25 in the base score (the rest is cosine similarity), both z-scored."""
    neighbours: tuple[float, ...] = (0.3, 0.1)
    """Share of the base score of the neighbour at distance 1, 2, ... (same session)."""
    answer: float = 0.5
    """Share of a question's positive base score that moves to its answer: the next
    turn, said by another speaker and a person's input (origin ``user``; not the
    assistant, another agent, a tool or the system). Between two people the fact is
    often in the reply; a user who asks an assistant puts their own facts in the
    question, so an assistant's reply takes nothing."""
    length: float = 0.1
    """Weight of a turn's length in its base score (the log of its characters, z-scored
    among the same speaker's turns in the pool): a long turn tells more than "Thanks!"
    or "Haha, sure", and a speaker who always says more is not lifted for it."""
    session_best: float = 0.2
    """Share of the best base score in an episode's session that the episode gains: a
    session that holds a good match is likelier to hold the rest of the answer."""
    speaker: float = 0.5
    you: float = 1.0
    """The speaker cue when the query asks what *you* (the assistant) said: a question
    only the assistant's own episodes can answer. Not fitted (LoCoMo has no assistant)."""
    time_words: float = 0.6
    date: float = 1.0
    session: float = 0.0
    """Boost, per standard deviation of lead, of the ``sessions`` best sessions over
    the next one (at most ``session_max``). Off by default: ``session_best`` replaced it
    (on LoCoMo 0-4 it cost turn recall once ``session_best`` was on)."""
    session_max: float = 1.5
    sessions: int = 2

    def __post_init__(self) -> None:
        counts = {"depth": self.depth, "span": self.span, "sessions": self.sessions}
        for name, count in counts.items():
            if not isinstance(count, int) or isinstance(count, bool):
                raise ConfigurationError(f"recall weights: {name} must be an int, not {count!r}")
        if self.depth < 1 or not 0 <= self.span <= _MAX_SPAN or self.sessions < 1:
            raise ConfigurationError(
                f"recall weights: depth must be >= 1, span in [0, {_MAX_SPAN}] and "
                f"sessions >= 1 (got {self.depth}, {self.span}, {self.sessions})"
            )
        if not isinstance(self.neighbours, tuple):
            raise ConfigurationError("recall weights: neighbours must be a tuple of shares")
        shares = {
            "lexical": self.lexical,
            "answer": self.answer,
            "length": self.length,
            "session_best": self.session_best,
            "speaker": self.speaker,
            "you": self.you,
            "time_words": self.time_words,
            "date": self.date,
            "session": self.session,
            "session_max": self.session_max,
            **{f"neighbours[{i}]": share for i, share in enumerate(self.neighbours)},
        }
        for name, value in shares.items():
            if not isinstance(value, int | float) or isinstance(value, bool):
                raise ConfigurationError(f"recall weights: {name} must be a number, not {value!r}")
            if not math.isfinite(value) or value < 0:
                raise ConfigurationError(f"recall weights: {name} must be finite and >= 0")
        if self.lexical > 1:
            raise ConfigurationError("recall weights: lexical must be in [0, 1]")


class PoolItem(msgspec.Struct, frozen=True, kw_only=True):
    """One candidate: an episode (with its place in a session) or a fact."""

    id: str
    kind: Kind
    dense: float
    lexical: float
    session_id: str = ""
    seq: int = -1
    speaker: str = ""
    text: str = ""
    at: float | None = None
    origin: str = PERSON
    """An episode's: who produced it (``xai.messages.EpisodeOrigin``)."""
    evidence: tuple[str, ...] = ()
    """A fact's: the ids of the episodes it was drawn from."""


class Columns:
    """A pool as columns: what ``fuse`` reads of each candidate. Made from items
    (``of``), or by the episodes' corpus straight from its arrays, where an item is
    made only when it is ranked (a search's ~500 candidates, for the k it returns)."""

    __slots__ = (
        "_asks",
        "_at",
        "_item",
        "_lengths",
        "_people",
        "_texts",
        "dense",
        "episode",
        "ids",
        "lexical",
        "seq",
        "session_ids",
        "speakers",
    )

    def __init__(
        self,
        *,
        ids: list[str],
        dense: np.ndarray,
        lexical: np.ndarray,
        episode: np.ndarray,
        session_ids: list[str],
        seq: np.ndarray,
        speakers: list[str],
        texts: Callable[[], list[str]],
        at: Callable[[], list[float | None]],
        item: Callable[[int], PoolItem],
        people: Callable[[], np.ndarray],
        lengths: Callable[[], np.ndarray] | None = None,
        asks: Callable[[], np.ndarray] | None = None,
    ) -> None:
        self.ids, self.dense, self.lexical, self.episode = ids, dense, lexical, episode
        self.session_ids, self.seq, self.speakers = session_ids, seq, speakers
        self._texts, self._at, self._item = texts, at, item
        self._lengths, self._asks, self._people = lengths, asks, people

    @classmethod
    def of(cls, pool: Sequence[PoolItem]) -> Columns:
        n = len(pool)
        return cls(
            ids=[p.id for p in pool],
            dense=np.fromiter((p.dense for p in pool), dtype=np.float64, count=n),
            lexical=np.fromiter((p.lexical for p in pool), dtype=np.float64, count=n),
            episode=np.fromiter((p.kind == "episode" for p in pool), dtype=bool, count=n),
            session_ids=[p.session_id for p in pool],
            seq=np.fromiter((p.seq for p in pool), dtype=np.int64, count=n),
            speakers=[p.speaker for p in pool],
            texts=lambda: [p.text for p in pool],
            at=lambda: [p.at for p in pool],
            item=pool.__getitem__,
            people=lambda: np.array([p.origin == PERSON for p in pool], dtype=bool),
        )

    def __len__(self) -> int:
        return len(self.ids)

    def texts(self) -> list[str]:
        return self._texts()

    def at(self) -> list[float | None]:
        return self._at()

    def item(self, i: int) -> PoolItem:
        return self._item(i)

    def lengths(self) -> np.ndarray:
        """Each text's length in characters (a measure that needs no word boundaries)."""
        if self._lengths is not None:
            return self._lengths()
        return np.array([len(t) for t in self.texts()], dtype=np.float64)

    def asks(self) -> np.ndarray:
        """Whether each text ends in a question (``ends_in_question``)."""
        if self._asks is not None:
            return self._asks()
        return np.array([ends_in_question(t) for t in self.texts()], dtype=bool)

    def people(self) -> np.ndarray:
        """Whether each item is a person's input (origin ``user``)."""
        return self._people()


def _z(values: np.ndarray, groups: np.ndarray | None = None) -> np.ndarray:
    """``values`` z-scored: over them all, or within each group of ``groups`` (a group
    number per value) apart. Values all equal (up to rounding) score 0: no signal."""
    values = np.nan_to_num(values.astype(np.float64))
    if groups is None:
        mean = float(values.mean()) if len(values) else 0.0
        spread = float(values.std()) if len(values) else 0.0
        if spread <= _FLAT * max(1.0, abs(mean)):
            return np.zeros(len(values))
        return np.asarray((values - mean) / spread)
    count = np.maximum(np.bincount(groups), 1)
    means = (np.bincount(groups, values) / count)[groups]
    centred = values - means
    spreads = np.sqrt(np.bincount(groups, centred * centred) / count)[groups]
    flat = spreads <= _FLAT * np.maximum(1.0, np.abs(means))
    return np.asarray(np.where(flat, 0.0, centred / np.where(flat, 1.0, spreads)))


_FLAT = 1e-12
"""A spread this small next to its mean is rounding's, of values all equal."""


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


def _z_within(values: np.ndarray, groups: Sequence[str]) -> np.ndarray:
    """``_z`` of ``values`` within each group apart (0 for a group of one): a turn's
    length against its own speaker's other turns, so that a speaker who always says
    more (an assistant's long answers to a user's short questions) is not lifted."""
    codes: dict[str, int] = {}
    code = np.fromiter(
        (codes.setdefault(g, len(codes)) for g in groups), dtype=np.int64, count=len(groups)
    )
    return _z(values, code if len(codes) > 1 else None)


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


def fuse(query: str, pool: Sequence[PoolItem], weights: RecallWeights) -> np.ndarray:
    """A score for every item of ``pool`` (higher is better)."""
    return fuse_columns(query, Columns.of(pool), weights)


def fuse_columns(query: str, pool: Columns, weights: RecallWeights) -> np.ndarray:
    """``fuse`` of a pool given as columns."""
    if not len(pool):
        return np.zeros(0)
    base = (1 - weights.lexical) * _z(pool.dense) + weights.lexical * _z(pool.lexical)
    episode = pool.episode
    if not episode.any() and not any(pool.speakers):
        return base  # every cue below needs an episode or a speaker: facts keep their base
    if weights.length > 0:
        rows = np.flatnonzero(episode)
        speakers = [pool.speakers[i] for i in rows.tolist()]
        base[rows] += weights.length * _z_within(np.log1p(pool.lengths()[rows]), speakers)
    sessions = _Sessions(pool.session_ids, pool.seq, episode)
    scores = base.copy()
    for distance, share in enumerate(weights.neighbours, start=1):
        for step in (-distance, distance):
            j = sessions.at(step)
            found = j >= 0
            scores[found] += share * base[j[found]]
    if weights.answer > 0:
        _answers(pool, base, scores, sessions, weights.answer)
    if weights.session_best > 0 and sessions.count:
        # Centred over the episodes: their mean stays, so the episodes as a whole do not
        # rise past the facts (those of the best sessions do; the rest fall).
        best = sessions.best(base)[sessions.code[episode]]
        scores[episode] += weights.session_best * (best - best.mean())
    spread = float(scores.std()) or 1.0
    marks = episode.tolist()
    speaker = named_speaker(query, {s for s, e in zip(pool.speakers, marks, strict=True) if e})
    if speaker is not None:
        weight = weights.you if speaker == ASSISTANT else weights.speaker
        said = np.array([s == speaker for s in pool.speakers], dtype=bool)
        scores += weight * spread * (said & episode)
    if query.lower().lstrip().startswith("when"):
        talks_of_time = np.array(
            [e and _talks_of_time(t) for t, e in zip(pool.texts(), marks, strict=True)],
            dtype=bool,
        )
        scores += weights.time_words * spread * talks_of_time
    windows = question_windows(query)
    if windows:
        scores += weights.date * spread * _near_dates(pool.at(), windows) * episode
    return _boost_sessions(scores, sessions, weights)


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


def ends_in_question(text: str) -> bool:
    """Whether a turn ends in a question (a bracketed note after it, such as an
    attachment's, aside)."""
    tail = text.rstrip()
    return tail.endswith("?") or (tail.endswith("]") and bool(_ASKS.search(tail)))


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


def rank(
    query: str, pool: Sequence[PoolItem], weights: RecallWeights, k: int
) -> list[tuple[PoolItem, float]]:
    """The ``k`` best items of ``pool`` for ``query`` and their fused scores, best first;
    a fact and the episodes it was drawn from take one slot (step 4 of the module doc)."""
    scores = np.zeros(len(pool))
    episodes = [i for i, p in enumerate(pool) if p.kind == "episode"]
    facts = [i for i, p in enumerate(pool) if p.kind == "fact"]
    said = Columns.of([pool[i] for i in episodes])
    scores[episodes] = fuse_columns(query, said, weights)
    scores[facts] = _fact_scores(query, [pool[i] for i in facts], said, scores[episodes], weights)
    return _best(scores, pool.__getitem__, k)


def rank_apart(
    query: str,
    facts: Sequence[PoolItem],
    episodes: Columns,
    weights: RecallWeights,
    k: int,
) -> list[tuple[PoolItem, float]]:
    """``rank`` of the pool ``facts`` then ``episodes`` (as columns: an episode's item is
    made only if it is ranked)."""
    fused = fuse_columns(query, episodes, weights)
    scores = np.concatenate([_fact_scores(query, facts, episodes, fused, weights), fused])
    told = len(facts)
    return _best(scores, lambda i: facts[i] if i < told else episodes.item(i - told), k)


def _fact_scores(
    query: str,
    facts: Sequence[PoolItem],
    episodes: Columns,
    fused: np.ndarray,
    weights: RecallWeights,
) -> np.ndarray:
    """The facts fused apart from the episodes (``fused``: theirs); a fact with evidence
    in the pool scores as the best of its evidence episodes."""
    scores = fuse(query, facts, weights)
    if len(episodes) and any(f.evidence for f in facts):
        at = {episode_id: j for j, episode_id in enumerate(episodes.ids)}
        for i, fact in enumerate(facts):
            said = [fused[at[e]] for e in fact.evidence if e in at]
            if said:
                scores[i] = max(said)
    return scores


def _best(
    scores: np.ndarray, item: Callable[[int], PoolItem], k: int
) -> list[tuple[PoolItem, float]]:
    out: list[tuple[PoolItem, float]] = []
    episodes: set[str] = set()  # episodes in the list
    told: set[str] = set()  # episodes a fact in the list was drawn from
    for i in np.argsort(-scores, kind="stable").tolist():
        if len(out) >= k:
            break
        candidate = item(i)
        if candidate.kind == "episode":
            if candidate.id in told:
                continue  # a fact drawn from it is in the list already
            episodes.add(candidate.id)
        else:
            if candidate.evidence and episodes.issuperset(candidate.evidence):
                continue  # the turns it was drawn from are in the list already
            told.update(candidate.evidence)
        out.append((candidate, float(scores[i])))
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
