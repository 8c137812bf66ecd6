"""The adjudication policy: how a candidate relates to a known fact, by its words.

Pure functions, no I/O: the same checks decide in rules mode and validate the
judge's verdicts in judge mode (docs/memory.md, "Adjudication policy").

- **restates**: the candidate says nothing the fact does not: same polarity and
  its content words are a subset of the fact's (after stemming, a few synonym
  classes, and without filler, dates or a ``[date] Speaker:`` header). Reinforce.
- **contradicts**: the same statement about the same subject and attribute, with
  the opposite polarity (a negation flip adding no content word and keeping at
  least half of the fact's), or a changed value of a single-valued attribute
  (where one lives, works, is called, how old, a favourite): exactly one value
  word swapped, not in subject position; or a change the candidate announces ("now",
  "moved to", "no longer", "changed to", ...) of the same subject's value
  (``_changed_value``). Supersede.
- everything else that is related is **distinct**: add it as its own fact.
"""

from __future__ import annotations

import functools
import re
from typing import Literal, TypeAlias

from xai.memory._dates import MONTHS
from xai.memory._lexical import lexical_tokens

__all__ = [
    "Relation",
    "content_words",
    "contradicts",
    "covers",
    "negated",
    "relation",
    "restates",
    "shares_attribute",
]

Relation: TypeAlias = Literal["restates", "contradicts", "distinct"]

_NEGATION = re.compile(
    r"\b(?:no longer|any ?more|not|no|never|none|nobody|nothing|neither|nor|"
    r"stopped|quit|dislikes?|hates?|cannot|can't|won't|isn't|aren't|wasn't|weren't|"
    r"don't|doesn't|didn't|hasn't|haven't|hadn't)\b",
    re.IGNORECASE,
)
_PARITY = re.compile(
    r"\b(?:not|no|never|none|nobody|nothing|neither|nor|no longer|"
    r"stopped|quit|dislikes?|hates?|cannot|can't|won't|isn't|aren't|wasn't|weren't|"
    r"don't|doesn't|didn't|hasn't|haven't|hadn't)\b",
    re.IGNORECASE,
)
_HEADER = re.compile(r"^\s*(?:\[[^\]\n]{0,60}\]\s*)?(?:[A-Z][\w.' -]{0,30}:\s+)?")
"""A leading ``[date]`` and ``Speaker:``: shared by many turns, they say nothing."""

_FILLER = frozenset(
    [
        "user",
        "users",
        "s",
        "t",
        "m",
        "ll",
        "re",
        "ve",
        "d",
        "am",
        "has",
        "have",
        "had",
        "will",
        "would",
        "can",
        "could",
        "should",
        "shall",
        "may",
        "might",
        "must",
        "so",
        "very",
        "really",
        "just",
        "also",
        "too",
        "still",
        "actually",
        "quite",
        "pretty",
        "much",
        "lot",
        "lots",
        "indeed",
        "definitely",
        "totally",
        "absolutely",
        "yes",
        "yeah",
        "oh",
        "wow",
        "hey",
        "hi",
        "well",
        "okay",
        "ok",
        "now",
        "then",
        "there",
        "here",
        "some",
        "any",
        "all",
        "about",
        "as",
        "if",
        "than",
        "into",
        "up",
        "out",
        "over",
        "again",
    ]
)
_TIME = frozenset(
    [
        *MONTHS,
        "jan",
        "feb",
        "mar",
        "apr",
        "jun",
        "jul",
        "aug",
        "sep",
        "sept",
        "oct",
        "nov",
        "dec",
        "monday",
        "tuesday",
        "wednesday",
        "thursday",
        "friday",
        "saturday",
        "sunday",
        "today",
        "yesterday",
        "tomorrow",
        "tonight",
        "week",
        "weekend",
        "month",
        "year",
        "day",
        "morning",
        "evening",
        "night",
        "ago",
        "last",
        "next",
        "recently",
        "currently",
        "lately",
        "am",
        "pm",
    ]
)
_TIMES = _TIME | frozenset(w for t in _TIME for w in lexical_tokens(t)[:1])
"""The time words and their stems ("morning" is "morn" among content words)."""
_CLASSES: dict[str, tuple[str, ...]] = {
    # single-valued attributes: a changed value is a contradiction
    "=reside": ("live", "lives", "lived", "living", "move", "moved", "moving", "relocated",
                "relocate", "reside", "resides", "based", "home"),
    "=work": ("work", "works", "worked", "working", "job", "employed", "employer"),
    "=name": ("name", "named", "called", "renamed"),
    "=age": ("age", "aged", "old"),
    "=favorite": ("favorite", "favourite", "fav", "favorites", "favourites"),
    # synonyms: a paraphrase restates
    "~like": ("like", "likes", "liked", "love", "loves", "loved", "enjoy", "enjoys",
              "enjoyed", "adore", "adores", "fond"),
    "~own": ("own", "owns", "owned", "got"),
}  # fmt: skip
_POSSESSIVE = re.compile(r"\b(?:my|our|\w+'s)\s+((?:new\s+)?\w+(?:\s+\w+)?)", re.IGNORECASE)
_STATE = re.compile(r"\s*(?:i am|i'm|the user is|user is|they are|he is|she is)\b", re.IGNORECASE)
"""A statement of what the subject itself is ("I am single", "The user is vegan")."""
_ADDRESS = re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+|https?://\S+")
"""An e-mail address or a URL: one value (its parts are not words of the statement)."""
_CHANGE = re.compile(
    r"\b(?:now|nowadays|these days|no longer|any ?more|chang(?:e|ed|ing)|switch(?:ed|ing)?|"
    r"mov(?:e|ed|ing) (?:to|into|out|in)|relocat(?:e|ed|ing)|(?:my|our|\w+'s|started (?:a|my)) new|a new job|renam(?:e|ed)|went (?:up|down)|"
    r"bec(?:a|o)me|instead|quit|stopped)\b",
    re.IGNORECASE,
)
"""Words that say a value changed ("I live in Lisbon now", "moved to", "no longer",
"started a new job", "changed to"): chosen on the ``choose`` half of
``tests/data/value_changes.jsonl`` (``bench/value_changes.py``)."""
_MARKERS = frozenset(
    ["chang", "switch", "start", "new", "renam", "went", "becam", "becom", "instead",
     "nowadai", "down"]
)  # fmt: skip
"""The change words as ``_words`` gives them (stemmed): not part of the value."""
_CANON = {word: cls for cls, words in _CLASSES.items() for word in words}
_SINGLE_VALUED = frozenset(c for c in _CLASSES if c.startswith("="))


def _canon(word: str) -> str:
    return _CANON.get(word) or word


@functools.lru_cache(maxsize=8192)
def _words(text: str) -> tuple[str, ...]:
    """Content words in order (negations, filler and the header left out); cached: a
    fact is compared with many candidates."""
    body = _NEGATION.sub(" ", _HEADER.sub("", text, count=1))
    body = _ADDRESS.sub(lambda m: re.sub(r"\W", "", m.group()), body)  # one value, one word
    out: list[str] = []
    for raw in re.findall(r"[A-Za-z0-9]+", body.lower()):
        if raw in _FILLER:
            continue
        word = _CANON.get(raw)
        if word is None:
            stemmed = lexical_tokens(raw)
            if not stemmed:
                continue
            word = _canon(stemmed[0])
        out.append(word)
    return tuple(out)


@functools.lru_cache(maxsize=8192)
def content_words(text: str) -> frozenset[str]:
    """The words that carry content: stemmed, synonyms folded, no negation or filler."""
    return frozenset(_words(text))


def _attribute(words: frozenset[str]) -> frozenset[str]:
    """Content words that are not times or dates."""
    return frozenset(w for w in words if w not in _TIMES and not w.isdigit())


@functools.lru_cache(maxsize=8192)
def negated(text: str) -> bool:
    """Odd number of negations: the statement is negative."""
    return len(_PARITY.findall(_HEADER.sub("", text, count=1))) % 2 == 1


def restates(candidate: str, fact: str) -> bool:
    """Same polarity and no content word the fact lacks (the candidate adds nothing)."""
    new = content_words(candidate)
    return bool(new) and negated(candidate) == negated(fact) and new <= content_words(fact)


def _value_changed(candidate: str, fact: str) -> bool:
    """One value word swapped on a single-valued attribute both statements name."""
    c_order, f_order = _words(candidate), _words(fact)
    c, f = frozenset(c_order), frozenset(f_order)
    new, lost = _attribute(c - f) | (c - f) & _digits(c), _attribute(f - c) | (f - c) & _digits(f)
    if len(new) != 1 or len(lost) != 1 or not (c & f & _SINGLE_VALUED):
        return False
    (fresh,), (old,) = tuple(new), tuple(lost)

    def subject(word: str, order: tuple[str, ...]) -> bool:  # the first content word names who
        return order[0] == word and not word.isdigit()

    return not subject(fresh, c_order) and not subject(old, f_order)


def changed(text: str) -> bool:
    """The statement says a value changed: it has a change word (``_CHANGE``)."""
    return _CHANGE.search(_HEADER.sub("", text, count=1)) is not None


def _changed_value(candidate: str, fact: str) -> bool:
    """A change word in the candidate, the same subject (``_subject``), and a new value:
    1-3 words swapped (times too: "night shifts" -> "day shifts") with a shared attribute
    left; a state of the subject itself ("I am single" -> "I am married now"); or, negated,
    nothing added ("no longer has a dog" against "has a dog named Rex")."""
    if not changed(candidate):
        return False
    c = frozenset(w for w in _words(candidate) if w not in _MARKERS)
    f = frozenset(w for w in _words(fact) if w not in _MARKERS)
    if not c or not f or not _subject(candidate) <= f or not _subject(fact) <= c:
        return False  # another subject ("my sister lives in ..." against "I live in ...")
    if negated(candidate) != negated(fact):
        return c <= f
    if len(c) == len(f) == 1 and _STATE.match(candidate) and _STATE.match(fact):
        return c != f
    new, lost = c - f, f - c
    return 1 <= len(new) <= 3 and 1 <= len(lost) <= 3 and bool(_attribute(c & f))


def _subject(text: str) -> frozenset[str]:
    """Whose attribute it is: the noun after a possessive ("my sister", "the user's
    favourite colour"); none for "I" or "the user" themselves."""
    found = _POSSESSIVE.search(_HEADER.sub("", text, count=1))
    if found is None:
        return frozenset()
    words = [w for w in _words(found.group(1)) if w not in _MARKERS]
    # One noun ("my sister"), two after "favourite" ("favourite colour" is not "food").
    return frozenset(words[:2] if words[:1] == ["=favorite"] else words[:1])


def _digits(words: frozenset[str]) -> frozenset[str]:
    return frozenset(w for w in words if w.isdigit())


def contradicts(candidate: str, fact: str) -> bool:
    """The candidate denies the fact, or changes the value of the same attribute."""
    c, f = content_words(candidate), content_words(fact)
    if not c or not f:
        return False
    if negated(candidate) != negated(fact):
        shared = _attribute(c & f)
        if c <= f and len(shared) >= max(1, -(-2 * len(_attribute(f)) // 3)):
            return True
        return _changed_value(candidate, fact)
    return _value_changed(candidate, fact) or _changed_value(candidate, fact)


def relation(candidate: str, fact: str) -> Relation:
    """How a candidate relates to a fact it is similar to (the similarity is checked first)."""
    if contradicts(candidate, fact):
        return "contradicts"
    if restates(candidate, fact):
        return "restates"
    return "distinct"


def shares_attribute(candidate: str, fact: str) -> bool:
    """Both name at least one content word that is not a time (a subject or attribute)."""
    return bool(_attribute(content_words(candidate) & content_words(fact)))


def covers(merged: str, *parts: str, slack: float = 0.1) -> bool:
    """``merged`` keeps (almost) every content word of ``parts``: at most ``slack`` of them
    missing (none of fewer than ten)."""
    wanted: frozenset[str] = frozenset().union(*(content_words(p) for p in parts))
    missing = wanted - content_words(merged)
    return len(missing) <= int(len(wanted) * slack)
