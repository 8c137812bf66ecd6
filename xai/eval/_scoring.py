"""Answer scoring for the memory evaluation: LoCoMo's official QA metrics and an LLM judge.

The rules follow LoCoMo's ``task_eval/evaluation.py`` so scores compare with published ones:

- Text is normalised: lower case, ASCII punctuation removed, the words "a", "an", "the" and
  "and" removed, whitespace collapsed (``normalise_answer``).
- ``token_f1`` is the F1 of the Porter-stemmed tokens of the two normalised texts; when
  either text has no tokens the score is 0.
- Per category (``qa_f1``): *multi-hop* answers are lists, so the gold answer and the
  prediction are split on commas, each gold part takes its best F1 against the prediction's
  parts, and the parts are averaged; *open-domain* gold answers keep only the text before
  the first ";" (the rest is a rationale); *adversarial* questions have no answer in the
  conversation, so a prediction scores 1 exactly when it says so (``says_not_mentioned``);
  every other category (LoCoMo's temporal and single-hop, all of LongMemEval's) is plain
  ``token_f1``.
- ``score_answer`` also treats LongMemEval's abstention questions like adversarial ones.

``judge_answer`` asks a model instead, grading generously: the same meaning, or the same
date in another format, counts as correct.
"""

from __future__ import annotations

import re
import string
import threading
from collections import Counter
from typing import Any

import msgspec

from xai.providers import Provider
from xai.structured import ask_json, parse

__all__ = [
    "JUDGE_MARKER",
    "exact_match",
    "judge_answer",
    "normalise_answer",
    "qa_f1",
    "says_not_mentioned",
    "score_answer",
    "token_f1",
]

JUDGE_MARKER = "[xai:eval-judge]"
"""The first line of every judge request (scripted test models recognise it)."""

_PUNCTUATION = str.maketrans("", "", string.punctuation)
_FILLER = re.compile(r"\b(?:a|an|the|and)\b")
_NOT_MENTIONED = ("not mentioned", "no information available")
"""LoCoMo's own test for category 5: only these two phrases count as declining."""

# A stemmer object keeps the word being stemmed as its own state, so each thread gets its
# own; it is created on first use because the harness may never score by F1.
_local = threading.local()


def _stems(words: list[str]) -> list[str]:
    stemmer: Any = getattr(_local, "porter", None)
    if stemmer is None:
        import snowballstemmer

        stemmer = _local.porter = snowballstemmer.stemmer("porter")
    stemmed: list[str] = stemmer.stemWords(words)
    return stemmed


def normalise_answer(text: str) -> str:
    """``text`` lower-cased, without punctuation, articles and "and", whitespace collapsed.

    Only ASCII punctuation is removed, as in LoCoMo, so a hyphenated word becomes one
    word ("apple-pie" → "applepie").
    """
    text = text.lower().translate(_PUNCTUATION)
    return " ".join(_FILLER.sub(" ", text).split())


def token_f1(prediction: str, answer: str) -> float:
    """Token-level F1 between the stemmed tokens of the two normalised texts.

    Repeated tokens count as often as both texts hold them. As in LoCoMo, the score is 0
    when the texts share no token, which includes either (or both) having none: an empty
    prediction never matches, even an empty answer.
    """
    predicted = _stems(normalise_answer(prediction).split())
    gold = _stems(normalise_answer(answer).split())
    shared = sum((Counter(predicted) & Counter(gold)).values())
    if shared == 0:
        return 0.0
    precision = shared / len(predicted)
    recall = shared / len(gold)
    return 2 * precision * recall / (precision + recall)


def says_not_mentioned(prediction: str) -> bool:
    """Whether the prediction declines to answer as LoCoMo checks it ("not mentioned",
    "no information available"); case and spacing do not matter."""
    text = " ".join(prediction.lower().split())
    return any(phrase in text for phrase in _NOT_MENTIONED)


def qa_f1(prediction: str, answer: str, category: str) -> float:
    """LoCoMo's score for one answer to a question of ``category`` (see the module docstring)."""
    if category == "adversarial":
        return 1.0 if says_not_mentioned(prediction) else 0.0
    if category == "multi-hop":
        parts = [part.strip() for part in prediction.split(",")]
        golds = [gold.strip() for gold in answer.split(",")]
        best = [max(token_f1(part, gold) for part in parts) for gold in golds]
        return sum(best) / len(best)
    if category == "open-domain":
        answer = answer.split(";", 1)[0].strip()
    return token_f1(prediction, answer)


def score_answer(prediction: str, answer: str, category: str, *, abstention: bool = False) -> float:
    """``qa_f1``, except that an abstention question (LongMemEval) is scored like an
    adversarial one: 1 when the prediction declines to answer, else 0."""
    if abstention:
        return 1.0 if says_not_mentioned(prediction) else 0.0
    return qa_f1(prediction, answer, category)


def exact_match(prediction: str, answer: str, *, abstention: bool = False) -> float:
    """1 when the normalised texts are equal, else 0 (no stemming).

    Like ``token_f1``, texts with no tokens match nothing. For an abstention question
    the score is 1 when the prediction declines to answer.
    """
    if abstention:
        return 1.0 if says_not_mentioned(prediction) else 0.0
    normalised = normalise_answer(prediction)
    return 1.0 if normalised and normalised == normalise_answer(answer) else 0.0


_JUDGE_INSTRUCTIONS = (
    "You grade answers to questions about a long conversation. You are given the question, "
    "the gold answer and a generated answer. Be generous: the generated answer is correct "
    "when it conveys the same meaning as the gold answer, even if it is worded differently, "
    "is longer, or adds details that do not contradict it. A date or time is correct when it "
    'names the same date or period in another format ("7 May 2023", "May 7th, 2023"). '
    "The answer is incorrect when it contradicts the gold answer, misses its key point, or "
    "is about something else. If the gold answer says the information is not available, "
    "only an answer that also declines to answer is correct.\n"
    'Reply with JSON only: {"correct": true or false, "reason": "one short sentence"}'
)


class _Grade(msgspec.Struct, frozen=True):
    correct: bool
    reason: str = ""


async def judge_answer(
    provider: Provider, question: str, answer: str, prediction: str, *, max_tokens: int = 200
) -> bool | None:
    """Whether a model judges ``prediction`` a correct answer to ``question`` (gold: ``answer``).

    ``None`` when there is no verdict: the provider failed or the reply was not the JSON
    object asked for. Provider trouble never raises.
    """
    content = (
        f"{JUDGE_MARKER}\nQuestion: {question}\nGold answer: {answer}\n"
        f"Generated answer: {prediction}"
    )
    result = await ask_json(provider, _JUDGE_INSTRUCTIONS, content, max_tokens=max_tokens)
    if result.error is not None:
        return None
    grade = parse(result.text, _Grade).value
    return None if grade is None else grade.correct
