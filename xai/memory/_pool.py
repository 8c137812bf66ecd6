"""The retrieval's pool: its candidates (``PoolItem``), as columns (``Columns``), and the
weights (``RecallWeights``) the fusion (``_cues``) and the ranking (``_recall``) read."""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from typing import Literal, Protocol, TypeAlias

import msgspec
import numpy as np

from xai.exceptions import ConfigurationError

__all__ = [
    "ASSISTANT",
    "PERSON",
    "Columns",
    "EpisodeLike",
    "Kind",
    "PoolItem",
    "RecallWeights",
    "ends_in_question",
    "z_scores",
    "z_within",
]

Kind: TypeAlias = Literal["episode", "fact"]

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


def z_scores(values: np.ndarray, groups: np.ndarray | None = None) -> np.ndarray:
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


def z_within(values: np.ndarray, groups: Sequence[str]) -> np.ndarray:
    """``z_scores`` of ``values`` within each group apart (0 for a group of one): a turn's
    length against its own speaker's other turns, so that a speaker who always says
    more (an assistant's long answers to a user's short questions) is not lifted."""
    codes: dict[str, int] = {}
    code = np.fromiter(
        (codes.setdefault(g, len(codes)) for g in groups), dtype=np.int64, count=len(groups)
    )
    return z_scores(values, code if len(codes) > 1 else None)


def ends_in_question(text: str) -> bool:
    """Whether a turn ends in a question (a bracketed note after it, such as an
    attachment's, aside)."""
    tail = text.rstrip()
    return tail.endswith("?") or (tail.endswith("]") and bool(_ASKS.search(tail)))
