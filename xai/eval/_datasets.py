"""Conversation-memory datasets in one schema: samples → sessions → messages, plus questions.

LoCoMo (``locomo10.json``) and LongMemEval (the public JSON format) load into
the same structs. Data files are given by path; none ships with xai.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec

from xai._reading import MiB, decode_json, read_capped
from xai.exceptions import ConfigurationError

__all__ = [
    "EvalMessage",
    "EvalQuestion",
    "EvalSample",
    "EvalSession",
    "load_locomo",
    "load_longmemeval",
    "normalise_evidence",
]

MAX_DATASET_BYTES = 8 * 1024 * MiB
"""The largest dataset file read (LongMemEval's biggest split is a few GB)."""


class EvalMessage(msgspec.Struct, frozen=True, kw_only=True):
    id: str
    speaker: str
    text: str


class EvalSession(msgspec.Struct, frozen=True, kw_only=True):
    id: str
    date: str = ""
    messages: tuple[EvalMessage, ...] = ()


class EvalQuestion(msgspec.Struct, frozen=True, kw_only=True):
    id: str
    question: str
    answer: str
    category: str
    evidence: tuple[str, ...] = ()
    """Message ids that support the answer (turn level)."""
    evidence_sessions: tuple[str, ...] = ()
    abstention: bool = False
    """The right answer is that the information is not available."""
    date: str = ""
    """When the question is asked, as the dataset writes it (LongMemEval's
    ``question_date``; "" when it gives none): "how many days ago" counts from it."""


class EvalSample(msgspec.Struct, frozen=True, kw_only=True):
    id: str
    sessions: tuple[EvalSession, ...]
    questions: tuple[EvalQuestion, ...]
    speakers: tuple[str, ...] = ()


_DIA = re.compile(r"D(\d+):(\d+)")


def normalise_evidence(raw: Any) -> tuple[str, ...]:
    """LoCoMo evidence to clean ``D<session>:<turn>`` ids: split packed strings
    (``'D8:6; D9:17'``, ``'D9:1 D4:4'``), repair ``'D:11:26'`` and ``'D30:05'``, drop junk."""
    items = raw if isinstance(raw, list) else [raw]
    out: list[str] = []
    for item in items:
        text = str(item).replace("D:", "D")
        for session, turn in _DIA.findall(text):
            ident = f"D{int(session)}:{int(turn)}"
            if ident not in out:
                out.append(ident)
    return tuple(out)


_LOCOMO_CATEGORIES = {
    1: "multi-hop",
    2: "temporal",
    3: "open-domain",
    4: "single-hop",
    5: "adversarial",
}


def _load(
    path: str | Path, dataset: str, parse: Callable[[Any], list[EvalSample]]
) -> list[EvalSample]:
    """Read ``path`` as JSON and ``parse`` it; either failing is a ``ConfigurationError``."""
    what = f"{dataset} data"  # every way of failing is a ConfigurationError naming the file
    data = decode_json(read_capped(Path(path), MAX_DATASET_BYTES, what=what), path, what=what)
    try:
        return parse(data)
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise ConfigurationError(
            f"{path}: not {dataset}'s format: {type(exc).__name__} {exc}"
        ) from None


def load_locomo(path: str | Path) -> list[EvalSample]:
    """LoCoMo: one sample per conversation. Sessions come from the ``session_N`` lists
    (not the date keys, which can outnumber them); category 5 answers are abstentions."""
    return _load(path, "LoCoMo", _parse_locomo)


def _parse_locomo(data: Any) -> list[EvalSample]:
    samples: list[EvalSample] = []
    for index, raw in enumerate(data):
        conversation = raw["conversation"]
        numbers = sorted(
            int(k.split("_")[1])
            for k, v in conversation.items()
            if re.fullmatch(r"session_\d+", k) and isinstance(v, list)
        )
        sessions = []
        for n in numbers:
            messages = tuple(
                EvalMessage(
                    id=turn["dia_id"],
                    speaker=turn["speaker"],
                    text=turn["text"]
                    + (
                        f" [shares a photo: {turn['blip_caption']}]"
                        if turn.get("blip_caption")
                        else ""
                    ),
                )
                for turn in conversation[f"session_{n}"]
            )
            sessions.append(
                EvalSession(
                    id=f"D{n}",
                    date=str(conversation.get(f"session_{n}_date_time", "")),
                    messages=messages,
                )
            )
        questions = []
        for q_index, qa in enumerate(raw["qa"]):
            category = int(qa["category"])
            evidence = normalise_evidence(qa.get("evidence", []))
            answer = qa.get("answer", qa.get("adversarial_answer", ""))
            questions.append(
                EvalQuestion(
                    id=f"{raw.get('sample_id', index)}-q{q_index}",
                    question=qa["question"],
                    answer=str(answer),
                    category=_LOCOMO_CATEGORIES.get(category, str(category)),
                    evidence=evidence,
                    evidence_sessions=tuple(dict.fromkeys(e.split(":")[0] for e in evidence)),
                    abstention=category == 5,
                )
            )
        samples.append(
            EvalSample(
                id=str(raw.get("sample_id", index)),
                sessions=tuple(sessions),
                questions=tuple(questions),
                speakers=(conversation.get("speaker_a", ""), conversation.get("speaker_b", "")),
            )
        )
    return samples


def load_longmemeval(path: str | Path) -> list[EvalSample]:
    """LongMemEval: one sample per question, its haystack sessions as the memory.

    Turns with ``has_answer`` are the turn-level evidence; ``answer_session_ids``
    the session level; question ids ending in ``_abs`` are abstentions.
    """
    return _load(path, "LongMemEval", _parse_longmemeval)


def _parse_longmemeval(data: Any) -> list[EvalSample]:
    samples: list[EvalSample] = []
    for raw in data:
        qid = str(raw["question_id"])
        dates = raw.get("haystack_dates") or []
        ids = raw.get("haystack_session_ids") or []
        sessions = []
        evidence: list[str] = []
        for s_index, turns in enumerate(raw.get("haystack_sessions") or []):
            sid = str(ids[s_index]) if s_index < len(ids) else f"S{s_index}"
            messages = []
            for t_index, turn in enumerate(turns):
                mid = f"{sid}:{t_index}"
                messages.append(
                    EvalMessage(
                        id=mid, speaker=str(turn.get("role", "")), text=str(turn.get("content", ""))
                    )
                )
                if turn.get("has_answer"):
                    evidence.append(mid)
            sessions.append(
                EvalSession(
                    id=sid,
                    date=str(dates[s_index]) if s_index < len(dates) else "",
                    messages=tuple(messages),
                )
            )
        question = EvalQuestion(
            id=qid,
            question=str(raw["question"]),
            answer=str(raw.get("answer", "")),
            category=str(raw.get("question_type", "")),
            evidence=tuple(evidence),
            evidence_sessions=tuple(str(s) for s in raw.get("answer_session_ids") or []),
            abstention=qid.endswith("_abs"),
            date=str(raw.get("question_date") or ""),
        )
        samples.append(EvalSample(id=qid, sessions=tuple(sessions), questions=(question,)))
    return samples
