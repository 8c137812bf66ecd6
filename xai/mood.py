"""Mood: the user's and the Agent's affect, as values that cross every boundary (msgspec).

The model is the circumplex of affect (Russell 1980), the two dimensions that carry most of
the variance in self-reported feeling and the first two of Mehrabian's PAD: **valence**
(unpleasant -1 .. +1 pleasant) and **arousal** (calm -1 .. +1 activated). Dominance, PAD's
third axis, is left out: it is hard to read from short text and no style decision needs it.
Named emotions ("frustration": 0.6) ride along as optional intensities in 0..1.

A mood rests at a **baseline** (the Persona's temperament for the Agent, neutral for the
user) and **decays** toward it with a half-life. Decay is computed when the mood is read
(``MoodState.at`` says when it was last set): nothing runs while an Agent is idle.

A Session starts from a copy (``MoodSeed``, handed in its ``SystemPrompt``), reports one
``MoodDelta`` per person per turn, and the Agent digests them when the Session finalises.
Deltas come from the memory-extraction request when the model gives them, else from the
offline estimator here (VADER's lexicon, shipped inside ``vaderSentiment``). This module is
a leaf: it imports nothing from xai (the Query never sees it).
"""

from __future__ import annotations

import math
import threading
from collections.abc import Iterable, Sequence
from typing import Any, Literal, TypeAlias

import msgspec

__all__ = [
    "AROUSAL_GAIN",
    "CONTAGION",
    "DEAD_ZONE",
    "LEXICON_CONFIDENCE",
    "MOOD_LOW_EVENT",
    "VALENCE_GAIN",
    "Mood",
    "MoodConfig",
    "MoodDelta",
    "MoodSeed",
    "MoodSource",
    "MoodState",
    "MoodStyles",
    "StyleKey",
    "Who",
    "apply_delta",
    "baseline_of",
    "decayed",
    "direction",
    "estimate_deltas",
    "fold",
    "style_key",
]

Who: TypeAlias = Literal["user", "agent"]
MoodSource: TypeAlias = Literal["model", "lexicon"]
StyleKey: TypeAlias = Literal["neutral", "positive", "low", "tense"]

MOOD_LOW_EVENT = "mood_low"
"""The named event (``agent.notify``) an Agent raises when the user's valence has stayed
below ``MoodConfig.low_valence`` for ``MoodConfig.low_days`` days: an ``OnEvent`` wake-up on
it reaches out."""

# The offline estimator's constants, chosen on the "tune" half of
# tests/data/mood_exchanges.jsonl only (bench/mood.py reports the other half).
DEAD_ZONE = 0.1
"""|VADER compound| below this moves nothing: the exchange leaves the mood the same."""
VALENCE_GAIN = 0.5
"""A compound of 1 moves the user's valence by this much (at the estimator's confidence)."""
AROUSAL_GAIN = 0.4
CONTAGION = 0.3
"""The Agent's own mood follows the user's valence by this share (emotional contagion)."""
LEXICON_CONFIDENCE = 0.6
_EMOTION_FLOOR = 0.05
# The value structs are ``gc=False`` (no reference cycles: numbers, strings, tuples, flat
# dicts): 16 bytes less each and nothing for the collector to walk in an idle Session.
_NO_EMOTIONS: dict[str, float] = {}
"""Shared by every mood this module makes without emotions (never mutated: the structs are
frozen and every change builds a new dict), so an idle Session's copy costs no empty dicts."""


class Mood(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """One person's affect: valence and arousal in [-1, 1], named emotions in [0, 1]."""

    valence: float = 0.0
    arousal: float = 0.0
    emotions: dict[str, float] = msgspec.field(default_factory=dict)


class MoodDelta(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """What one turn changed in one person's mood: structured, never free text.

    ``who``: ``user`` or ``agent``; ``valence``/``arousal``: the change (each in [-1, 1]),
    applied scaled by ``confidence``; ``emotions``: intensities to add; ``evidence``: ids of
    the user-origin messages it was read from; ``source``: the model (the extraction
    request) or the offline lexicon."""

    who: Who
    valence: float = 0.0
    arousal: float = 0.0
    emotions: dict[str, float] = msgspec.field(default_factory=dict)
    confidence: float = 0.5
    evidence: tuple[str, ...] = ()
    turn: int = 0
    at: float = 0.0
    source: MoodSource = "lexicon"


class MoodState(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """The user's and the Agent's mood as they were set at ``at`` (decay applies after)."""

    user: Mood = Mood()
    agent: Mood = Mood()
    at: float = 0.0
    low_since: float | None = None
    """Since when the user's valence has stayed below ``MoodConfig.low_valence``."""


class MoodStyles(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """The style line for each state of the user's mood; the Persona words them."""

    neutral: str = ""
    positive: str = ""
    low: str = ""
    tense: str = ""

    def line(self, key: StyleKey) -> str:
        return str(getattr(self, key))


class MoodSeed(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """What an Agent hands a Session at creation: the mood it starts from (a copy), the
    baselines and half-life it decays by, and the style lines with their threshold."""

    state: MoodState
    user_baseline: Mood = Mood()
    agent_baseline: Mood = Mood()
    half_life: float = 43_200.0
    styles: MoodStyles = MoodStyles()
    threshold: float = 0.3


class MoodConfig(msgspec.Struct, frozen=True, kw_only=True):
    """An Agent's mood: ``enabled=False`` turns it off (no seed, no deltas, no ledger)."""

    enabled: bool = True
    half_life: float = 43_200.0
    """Seconds for a mood to come half way back to its baseline (default 12 h)."""
    style_threshold: float = 0.3
    """|valence| the user's mood must pass before the style line changes (and half of it
    to go back to neutral): the system prompt's prefix stays put otherwise."""
    low_valence: float = -0.3
    low_days: float = 3.0
    """The user's valence below ``low_valence`` this many days raises ``MOOD_LOW_EVENT``."""


def _clamp(value: float, low: float = -1.0, high: float = 1.0) -> float:
    return low if value < low else high if value > high else value


def decayed(mood: Mood, baseline: Mood, elapsed: float, half_life: float) -> Mood:
    """``mood`` after ``elapsed`` seconds of pulling toward ``baseline``."""
    if elapsed <= 0 or half_life <= 0:
        return mood
    keep = 0.5 ** (elapsed / half_life)
    emotions = {k: v * keep for k, v in mood.emotions.items() if v * keep >= _EMOTION_FLOOR}
    return Mood(
        valence=baseline.valence + (mood.valence - baseline.valence) * keep,
        arousal=baseline.arousal + (mood.arousal - baseline.arousal) * keep,
        emotions=emotions or _NO_EMOTIONS,
    )


def apply_delta(mood: Mood, delta: MoodDelta) -> Mood:
    """``mood`` moved by ``delta`` (scaled by its confidence), clamped to the ranges."""
    weight = _clamp(delta.confidence, 0.0, 1.0)
    emotions = dict(mood.emotions)
    for name, value in delta.emotions.items():
        level = _clamp(emotions.get(name, 0.0) + value * weight, 0.0, 1.0)
        if level >= _EMOTION_FLOOR:
            emotions[name] = level
        else:
            emotions.pop(name, None)
    return Mood(
        valence=_clamp(mood.valence + delta.valence * weight),
        arousal=_clamp(mood.arousal + delta.arousal * weight),
        emotions=emotions or _NO_EMOTIONS,
    )


def fold(
    state: MoodState,
    deltas: Iterable[MoodDelta],
    *,
    user_baseline: Mood,
    agent_baseline: Mood,
    half_life: float,
    now: float | None = None,
    low_valence: float | None = None,
) -> MoodState:
    """``state`` with ``deltas`` applied in time order, each after the decay up to it, then
    decayed to ``now`` (if given). ``low_valence`` keeps ``low_since`` up to date."""
    user, agent, at, low_since = state.user, state.agent, state.at, state.low_since
    for delta in sorted(deltas, key=lambda d: d.at):
        when = max(at, delta.at)
        user = decayed(user, user_baseline, when - at, half_life)
        agent = decayed(agent, agent_baseline, when - at, half_life)
        at = when
        if delta.who == "user":
            user = apply_delta(user, delta)
        else:
            agent = apply_delta(agent, delta)
        if low_valence is not None:
            low_since = (
                (at if low_since is None else low_since) if user.valence < low_valence else None
            )
    if now is not None and now > at:
        user = decayed(user, user_baseline, now - at, half_life)
        agent = decayed(agent, agent_baseline, now - at, half_life)
        at = now
    return MoodState(user=user, agent=agent, at=at, low_since=low_since)


def style_key(mood: Mood, threshold: float, current: StyleKey = "neutral") -> StyleKey:
    """Which style line the user's ``mood`` calls for. It leaves ``current`` only past the
    threshold (hysteresis: back to neutral below half of it), so small moves change nothing."""
    valence = mood.valence
    if abs(valence) >= threshold:
        if valence > 0:
            return "positive"
        return "tense" if mood.arousal >= threshold else "low"
    if current != "neutral" and abs(valence) >= threshold / 2:
        return current
    return "neutral"


def direction(deltas: Iterable[MoodDelta]) -> Literal["better", "worse", "same"]:
    """Which way the user's valence moved over ``deltas``."""
    total = sum(d.valence * d.confidence for d in deltas if d.who == "user")
    return "better" if total > 1e-9 else "worse" if total < -1e-9 else "same"


_TEMPERAMENTS = {
    "even": (0.0, 0.0),
    "cheerful": (0.3, 0.2),
    "calm": (0.2, -0.3),
    "lively": (0.2, 0.4),
    "serious": (-0.1, -0.1),
    "melancholic": (-0.3, -0.2),
}


def baseline_of(temperament: str) -> Mood:
    """The baseline mood a temperament names: a word (``even``, ``cheerful``, ``calm``,
    ``lively``, ``serious``, ``melancholic``) or ``"valence, arousal"`` numbers."""
    text = temperament.strip().lower()
    if not text:
        return Mood()
    if text in _TEMPERAMENTS:
        valence, arousal = _TEMPERAMENTS[text]
        return Mood(valence=valence, arousal=arousal)
    try:
        valence, arousal = (float(part) for part in text.replace(" ", "").split(","))
    except ValueError:
        raise ValueError(
            f"temperament {temperament!r} is neither one of {', '.join(_TEMPERAMENTS)} nor "
            "'valence, arousal'"
        ) from None
    return Mood(valence=_clamp(valence), arousal=_clamp(arousal))


# -- the offline estimator --------------------------------------------------------------

_analyzer: Any = None
_analyzer_lock = threading.Lock()


def _scores(text: str) -> dict[str, float]:
    """VADER's scores of ``text``; its lexicon is loaded once per process, when first used."""
    global _analyzer
    if _analyzer is None:
        with _analyzer_lock:
            if _analyzer is None:
                from vaderSentiment.vaderSentiment import SentimentIntensityAnalyzer

                _analyzer = SentimentIntensityAnalyzer()
    scores: dict[str, float] = _analyzer.polarity_scores(text)
    return scores


def _emphasis(text: str) -> float:
    """0..1: exclamation marks and shouting (words in capitals) in ``text``."""
    words = [w for w in text.split() if len(w) > 2 and w.isalpha()]
    shouted = sum(w.isupper() for w in words) / len(words) if words else 0.0
    return min(1.0, text.count("!") / 3 + shouted)


def estimate_deltas(
    said: Sequence[tuple[str, str]], *, turn: int, at: float, dead_zone: float = DEAD_ZONE
) -> tuple[MoodDelta, ...]:
    """The deltas one turn's user-origin messages (``(id, text)`` pairs) give, read with
    VADER: the user's (valence from the compound score beyond a dead zone; arousal from
    its strength and emphasis), and the Agent's (a share of the user's valence). Nothing
    said by the user, or nothing past the dead zone: no delta."""
    if not said:
        return ()
    compounds = [_scores(text)["compound"] for _, text in said]
    compound = math.fsum(compounds) / len(compounds)
    if abs(compound) < dead_zone:
        return ()
    emphasis = max(_emphasis(text) for _, text in said)
    arousal = AROUSAL_GAIN * (abs(compound) + emphasis) / 2 - AROUSAL_GAIN / 4
    evidence = tuple(message_id for message_id, _ in said)
    valence = VALENCE_GAIN * compound
    user = MoodDelta(
        who="user",
        valence=round(valence, 4),
        arousal=round(arousal, 4),
        emotions=_NO_EMOTIONS,
        confidence=LEXICON_CONFIDENCE,
        evidence=evidence,
        turn=turn,
        at=at,
    )
    agent = MoodDelta(
        who="agent",
        valence=round(valence * CONTAGION, 4),
        emotions=_NO_EMOTIONS,
        confidence=LEXICON_CONFIDENCE,
        evidence=evidence,
        turn=turn,
        at=at,
    )
    return user, agent
