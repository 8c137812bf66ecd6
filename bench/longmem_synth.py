"""A synthetic memory benchmark in LongMemEval's public JSON format, generated offline.

Each sample is one question with its own haystack of 40-50 chat sessions (user and
assistant), dated over four to eight months in LongMemEval's format
(``2023/05/20 (Sat) 02:21``). One to three sessions hold the evidence (turns marked
``has_answer``); a few more are decoys on the same topic, with the same words and names
but another fact; the rest are everyday filler conversations drawn from a shared pool
(as LongMemEval draws its filler from a shared pool). Question types follow LongMemEval:
single-session-user, single-session-assistant, single-session-preference, multi-session,
knowledge-update, temporal-reasoning, and abstentions (ids ending ``_abs``, no evidence).

    python bench/longmem_synth.py [--seed 0] [--questions 150] [--out FILE]
                                  [--assistant-words N]

``--assistant-words N`` (off by default) pads every assistant turn with more of the
replies' sentences until it has about N words, as LongMemEval's assistant turns run to
hundreds of words while the user's facts sit in short turns. The padding draws on a
random generator of its own, so the rest of the file is what the seed alone gives.

Without ``--out`` the file goes to a new temporary directory; its path is printed.
Load it with ``xai.eval.load_longmemeval`` or run ``xai eval longmemeval --data FILE``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import random
import string
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from _longmem_frames import ASSISTANT, COUNT, EVENT, PREFERENCE, UPDATE, USER, EventFrame
from _longmem_text import ACKS, FILLER, SMALL_TALK, VOCAB

__all__ = ["QUESTION_TYPES", "generate", "main", "write"]

QuestionType = Literal[
    "single-session-user",
    "single-session-assistant",
    "single-session-preference",
    "multi-session",
    "knowledge-update",
    "temporal-reasoning",
]
QUESTION_TYPES: tuple[QuestionType, ...] = (
    "single-session-user",
    "single-session-assistant",
    "single-session-preference",
    "multi-session",
    "knowledge-update",
    "temporal-reasoning",
)
_SHARE: dict[QuestionType, int] = {  # LongMemEval's 500 questions, by type
    "single-session-user": 70,
    "single-session-assistant": 56,
    "single-session-preference": 30,
    "multi-session": 133,
    "knowledge-update": 78,
    "temporal-reasoning": 133,
}
_ABSTAINING: tuple[QuestionType, ...] = (
    "single-session-user",
    "single-session-assistant",
    "knowledge-update",
)
ABSTAIN_ANSWER = "The information provided is not enough: it was never mentioned."
_FORMAT = "%Y/%m/%d (%a) %H:%M"
_WORDS = {2: "two", 3: "three", 4: "four"}

Turn = dict[str, Any]


class _Slots(dict[str, str]):
    """Placeholders for ``str.format_map``: fixed ones, else a random value of the slot
    named (a trailing digit draws another: ``{city2}``)."""

    def __init__(self, rng: random.Random, fixed: Mapping[str, str]) -> None:
        super().__init__(fixed)
        self.rng = rng

    def __missing__(self, key: str) -> str:
        value = self.rng.choice(VOCAB[key.rstrip(string.digits)])
        self[key] = value
        return value


def _fill(rng: random.Random, template: str, **fixed: str) -> str:
    """``template`` with its slots filled, as a sentence (capitalised)."""
    text = _phrase(rng, template, **fixed)
    return text[:1].upper() + text[1:]


def _phrase(rng: random.Random, template: str, **fixed: str) -> str:
    """``template`` with its slots filled, as it stands (for inside a sentence)."""
    return template.format_map(_Slots(rng, fixed))


def _turn(role: str, content: str, has_answer: bool = False) -> Turn:
    return {"role": role, "content": content, "has_answer": has_answer}


def _filler(rng: random.Random, topic: str | None = None) -> list[Turn]:
    """An everyday conversation: an opener and 1-5 follow-ups, each answered."""
    parts = FILLER[topic or rng.choice(sorted(FILLER))]
    turns = [_turn("user", _fill(rng, rng.choice(parts["open"])))]
    turns.append(_turn("assistant", _fill(rng, rng.choice(parts["reply"]))))
    for _ in range(rng.randint(1, 5)):
        if rng.random() < 0.2:
            turns.append(_turn("user", _fill(rng, rng.choice(SMALL_TALK))))
            turns.append(_turn("assistant", rng.choice(ACKS)))
        else:
            turns.append(_turn("user", _fill(rng, rng.choice(parts["follow"]))))
            turns.append(_turn("assistant", _fill(rng, rng.choice(parts["reply"]))))
    return turns


def _around(rng: random.Random, topic: str, said: Sequence[Turn]) -> list[Turn]:
    """A conversation on ``topic`` with the exchange ``said`` (user then assistant) inside."""
    turns = _filler(rng, topic)
    at = 2 * rng.randint(0, len(turns) // 2)  # at an exchange boundary
    return [*turns[:at], *said, *turns[at:]]


def _told(rng: random.Random, topic: str, line: str, evidence: bool) -> list[Turn]:
    """The user says ``line`` (with a question of the topic after it, half the time)."""
    if rng.random() < 0.5:
        line = f"{line} {_fill(rng, rng.choice(FILLER[topic]['open']))}"
    reply = (
        rng.choice(ACKS) if rng.random() < 0.5 else _fill(rng, rng.choice(FILLER[topic]["reply"]))
    )
    return _around(rng, topic, [_turn("user", line, evidence), _turn("assistant", reply)])


def _others(rng: random.Random, slot: str, not_: Sequence[str], n: int) -> list[str]:
    pool = [v for v in VOCAB[slot] if v not in not_]
    return rng.sample(pool, min(n, len(pool)))


class _Question:
    """One question in the making: its sessions with fixed days, and the rest of its fields."""

    def __init__(self, rng: random.Random, start: dt.datetime, span_days: int) -> None:
        self.rng = rng
        self.start = start
        self.span = span_days
        self.sessions: list[tuple[dt.datetime, list[Turn], bool]] = []
        """(when, turns, holds evidence)"""
        self.question = self.answer = ""
        self.question_date: dt.datetime | None = None

    def day(self, lo: float = 0.0, hi: float = 1.0) -> dt.datetime:
        """A moment between the ``lo`` and ``hi`` shares of the span."""
        offset = self.rng.uniform(lo * self.span, hi * self.span)
        moment = self.start + dt.timedelta(days=offset)
        return moment.replace(hour=self.rng.randint(7, 23), minute=self.rng.randint(0, 59))

    def end(self) -> dt.datetime:
        """The last moment filler may be dated."""
        return self.start + dt.timedelta(days=self.span)

    def add(self, when: dt.datetime, turns: list[Turn]) -> None:
        self.sessions.append((when, turns, any(t["has_answer"] for t in turns)))


def _user(q: _Question, abstain: bool) -> None:
    rng = q.rng
    frame = rng.choice(USER)
    value = rng.choice(VOCAB[frame["slot"]])
    line = _fill(rng, rng.choice(frame["fact"]), v=value)
    q.add(q.day(), _told(rng, frame["topic"], line, not abstain))
    for decoy in _others(rng, frame["slot"], [value], rng.randint(1, 2)):
        q.add(
            q.day(),
            _told(rng, frame["topic"], _fill(rng, rng.choice(frame["decoy"]), d=decoy), False),
        )
    q.question = frame["absent"] if abstain else rng.choice(frame["ask"])
    q.answer = value


def _assistant(q: _Question, abstain: bool) -> None:
    rng = q.rng
    frame = rng.choice(ASSISTANT)
    keys = rng.sample(VOCAB[frame["key"]], 3)
    values = rng.sample(list(VOCAB[frame["slot"]]), 3)
    for n, (key, value) in enumerate(zip(keys, values, strict=True)):
        if n > 0 and rng.random() < 0.4:
            continue  # one or two decoys: the same request about another key
        said = [
            _turn("user", _fill(rng, rng.choice(frame["request"]), k=key)),
            _turn(
                "assistant",
                _fill(rng, rng.choice(frame["say"]), k=key, v=value),
                n == 0 and not abstain,
            ),
        ]
        q.add(q.day(), _around(rng, frame["topic"], said))
    template = frame["absent"] if abstain else rng.choice(frame["ask"])
    q.question = _fill(rng, template, k=keys[0])
    q.answer = values[0]


def _preference(q: _Question, abstain: bool) -> None:
    rng = q.rng
    frame = rng.choice(PREFERENCE)
    q.add(q.day(0.0, 0.8), _told(rng, frame["topic"], rng.choice(frame["state"]), True))
    q.add(q.day(), _told(rng, frame["topic"], _fill(rng, rng.choice(frame["decoy"])), False))
    q.question = _fill(rng, rng.choice(frame["ask"]))
    q.answer = f"The user would prefer suggestions that fit their stated taste: {frame['rubric']}."


def _update(q: _Question, abstain: bool) -> None:
    rng = q.rng
    frame = rng.choice(UPDATE)
    changes = rng.randint(1, 2)
    values = rng.sample(VOCAB[frame["slot"]], changes + 1)
    if frame["slot"] == "pb":
        values.sort(reverse=True)  # a personal best only ever improves
    moments = sorted(q.day() for _ in values)
    for n, (value, when) in enumerate(zip(values, moments, strict=True)):
        template = rng.choice(frame["first"] if n == 0 else frame["later"])
        latest = n == len(values) - 1
        q.add(
            when, _told(rng, frame["topic"], _fill(rng, template, v=value), latest and not abstain)
        )
    q.question = frame["absent"] if abstain else rng.choice(frame["ask"])
    q.answer = values[-1]


def _count(q: _Question, abstain: bool) -> None:
    rng = q.rng
    frame = rng.choice(COUNT)
    items = rng.sample(VOCAB[frame["slot"]], rng.randint(2, 3) + 2)
    held, decoys = items[:-2], items[-2:]
    amounts = [rng.choice(VOCAB["amount"]) for _ in held]
    for value, amount in zip(held, amounts, strict=True):
        line = _fill(rng, rng.choice(frame["item"]), v=value, n=amount)
        q.add(q.day(), _told(rng, frame["topic"], line, True))
    for decoy in decoys[: rng.randint(1, 2)]:
        q.add(
            q.day(),
            _told(rng, frame["topic"], _fill(rng, rng.choice(frame["decoy"]), d=decoy), False),
        )
    q.question = frame["ask"]
    if frame["total"]:
        q.answer = f"{sum(int(a) for a in amounts)} dollars"
    else:
        q.answer = f"{len(held)} ({', '.join(held)})"


def _event(q: _Question, frame: EventFrame, value: str, when: dt.datetime) -> None:
    line = _fill(q.rng, q.rng.choice(frame["done"]), v=value)
    q.add(when, _told(q.rng, frame["topic"], line, True))


def _temporal(q: _Question, abstain: bool) -> None:
    rng = q.rng
    kind = rng.choice(("ago", "order", "between", "before", "what_ago"))
    shopping = [f for f in EVENT if f["topic"] == "shopping"]
    if kind in ("ago", "order", "between"):
        first, second = rng.sample(EVENT, 2)
        a, b = rng.choice(VOCAB[first["slot"]]), rng.choice(VOCAB[second["slot"]])
        when_a, when_b = sorted((q.day(0.2, 0.95), q.day(0.2, 0.95)))
        if (when_b - when_a).days < 3:
            when_b = when_a + dt.timedelta(days=rng.randint(3, 30))
        _event(q, first, a, when_a)
        # the same kind of event with another value, on another day: a decoy
        other = _others(rng, first["slot"], [a], 1)[0]
        q.add(
            q.day(0.0, 0.2),
            _told(rng, first["topic"], _fill(rng, rng.choice(first["done"]), v=other), False),
        )
        q.add(
            q.day(), _told(rng, first["topic"], _fill(rng, rng.choice(first["plan"]), v=a), False)
        )
        noun_a = _phrase(rng, first["noun"], v=a)
        if kind == "ago":
            q.sessions.pop(0)  # told again below, on the day the question counts back to
            asked = q.end() + dt.timedelta(hours=rng.randint(2, 30))
            when_a = q.day().replace(
                year=asked.year, month=asked.month, day=asked.day
            ) - dt.timedelta(days=rng.randint(3, 45))
            _event(q, first, a, when_a)
            q.question_date = asked
            q.question = f"How many days ago did I {_phrase(rng, first['phrase'], v=a)}?"
            q.answer = f"{(asked.date() - when_a.date()).days} days ago"
            return
        _event(q, second, b, when_b)
        noun_b = _phrase(rng, second["noun"], v=b)
        if kind == "order":
            pair = [noun_a, noun_b]
            rng.shuffle(pair)
            q.question = f"Which came first, {pair[0]} or {pair[1]}?"
            q.answer = noun_a
        else:
            q.question = f"How many days passed between {noun_a} and {noun_b}?"
            q.answer = f"{(when_b.date() - when_a.date()).days} days"
        return
    purchase = rng.choice(shopping)
    bought = rng.sample(VOCAB[purchase["slot"]], 3)
    if kind == "before":
        trip = next(f for f in EVENT if f["slot"] == "city")
        city = rng.choice(VOCAB["city"])
        when_trip = q.day(0.4, 0.95)
        gap = rng.choice((7, 10, 14, 21))
        _event(q, trip, city, when_trip)
        _event(q, purchase, bought[0], when_trip - dt.timedelta(days=gap))
        for n, other in enumerate(bought[1:]):  # other purchases, well away from that day
            moment = (
                when_trip - dt.timedelta(days=gap + 20 + 15 * n)
                if n == 0
                else when_trip + dt.timedelta(days=5)
            )
            q.add(
                moment,
                _told(
                    rng, purchase["topic"], _fill(rng, rng.choice(purchase["done"]), v=other), False
                ),
            )
        span = {7: "a week", 10: "ten days", 14: "two weeks", 21: "three weeks"}[gap]
        q.question = f"What did I buy {span} before my trip to {city}?"
        q.answer = bought[0]
        return
    weeks = rng.randint(2, 6)
    q.question_date = q.end() + dt.timedelta(hours=rng.randint(2, 30))
    when = q.question_date - dt.timedelta(days=7 * weeks, hours=rng.randint(0, 5))
    _event(q, purchase, bought[0], when)
    for n, other in enumerate(bought[1:]):  # other purchases, weeks away from that day
        moment = when + dt.timedelta(days=(-1) ** n * (12 + 9 * n))
        q.add(
            moment,
            _told(rng, purchase["topic"], _fill(rng, rng.choice(purchase["done"]), v=other), False),
        )
    q.question = f"What did I buy {_WORDS.get(weeks, str(weeks))} weeks ago?"
    q.answer = bought[0]


_BUILD = {
    "single-session-user": _user,
    "single-session-assistant": _assistant,
    "single-session-preference": _preference,
    "multi-session": _count,
    "knowledge-update": _update,
    "temporal-reasoning": _temporal,
}


def _sid(rng: random.Random, taken: set[str]) -> str:
    while (sid := f"{rng.getrandbits(48):012x}") in taken:
        pass
    taken.add(sid)
    return sid


def _plan(questions: int) -> list[tuple[QuestionType, bool]]:
    """How many of each type (LongMemEval's shares), a few of them abstentions."""
    total = sum(_SHARE.values())
    counts = {t: max(1, round(questions * s / total)) for t, s in _SHARE.items()}
    counts["multi-session"] += questions - sum(counts.values())
    abstentions = max(1, round(questions * 30 / 500)) if questions >= 6 else 0
    plan: list[tuple[QuestionType, bool]] = []
    for kind in QUESTION_TYPES:
        plan += [(kind, False)] * counts[kind]
    for n in range(abstentions):
        kind = _ABSTAINING[n % len(_ABSTAINING)]
        index = plan.index((kind, False))
        plan[index] = (kind, True)
    return plan


def generate(seed: int = 0, questions: int = 150, pool: int = 400) -> list[dict[str, Any]]:
    """The benchmark: ``questions`` samples in LongMemEval's JSON format, the same for a seed."""
    rng = random.Random(seed)
    taken: set[str] = set()
    filler = [(_sid(rng, taken), _filler(rng)) for _ in range(pool)]
    out: list[dict[str, Any]] = []
    plan = _plan(questions)
    rng.shuffle(plan)
    for kind, abstain in plan:
        start = dt.datetime(2023, 1, 1) + dt.timedelta(days=rng.randint(0, 300))
        q = _Question(rng, start, rng.randint(120, 240))
        _BUILD[kind](q, abstain)
        held = [(when, _sid(rng, taken), turns, has) for when, turns, has in q.sessions]
        count = rng.randint(40, 50) - len(held)
        chosen = rng.sample(filler, count)
        haystack = held + [(q.day(), sid, turns, False) for sid, turns in chosen]
        haystack.sort(key=lambda item: item[0])
        last = haystack[-1][0]
        asked = q.question_date or last + dt.timedelta(
            days=rng.randint(1, 10), hours=rng.randint(1, 9)
        )
        asked = max(asked, last + dt.timedelta(hours=1))
        qid = f"{rng.getrandbits(32):08x}" + ("_abs" if abstain else "")
        out.append(
            {
                "question_id": qid,
                "question_type": kind,
                "question": q.question,
                "answer": ABSTAIN_ANSWER if abstain else q.answer,
                "question_date": asked.strftime(_FORMAT),
                "haystack_dates": [when.strftime(_FORMAT) for when, *_ in haystack],
                "haystack_session_ids": [sid for _, sid, *_ in haystack],
                "haystack_sessions": [[dict(t) for t in turns] for *_, turns, _ in haystack],
                "answer_session_ids": [sid for _, sid, _, has in haystack if has],
            }
        )
    return out


def lengthen_answers(samples: list[dict[str, Any]], words: int, seed: int = 0) -> None:
    """Pad every assistant turn of ``samples`` (in place) with sentences of the filler
    replies, each from a topic drawn at random, until it has at least ``words`` words."""
    rng = random.Random(f"assistant-words:{seed}")
    topics = sorted(FILLER)
    for sample in samples:
        for session in sample["haystack_sessions"]:
            for turn in session:
                if turn["role"] != "assistant":
                    continue
                parts = [turn["content"]]
                count = len(turn["content"].split())
                while count < words:
                    sentence = _fill(rng, rng.choice(FILLER[rng.choice(topics)]["reply"]))
                    parts.append(sentence)
                    count += len(sentence.split())
                turn["content"] = " ".join(parts)


def write(
    path: Path, seed: int = 0, questions: int = 150, pool: int = 400, assistant_words: int = 0
) -> Path:
    """Generate and write the JSON to ``path`` (its folder is created)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    samples = generate(seed, questions, pool)
    if assistant_words > 0:
        lengthen_answers(samples, assistant_words, seed)
    path.write_text(json.dumps(samples, indent=None))
    return path


def main(argv: Sequence[str] | None = None) -> Path:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--questions", type=int, default=150)
    parser.add_argument("--pool", type=int, default=400, help="filler sessions to draw from")
    parser.add_argument("--out", type=Path, help="the JSON file (default: a new temp dir)")
    parser.add_argument(
        "--assistant-words", type=int, default=0, help="pad assistant turns to about N words"
    )
    args = parser.parse_args(argv)
    out = (
        args.out
        or Path(tempfile.mkdtemp(prefix="xai-longmem-")) / f"longmem_synth_seed{args.seed}.json"
    )
    write(out, args.seed, args.questions, args.pool, args.assistant_words)
    print(out)
    return out


if __name__ == "__main__":
    main()
