"""The LLM judge for candidates in the ambiguous band (the rules are in ``_policy``)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Literal

import msgspec

from xai.messages import StopReason
from xai.providers import Provider
from xai.structured import ask_json, json_object_text

__all__ = ["JUDGE_MARKER", "Verdict", "ask_judge"]

JUDGE_MARKER = "[xai:memory-judge]"

JUDGE_PROMPT = (
    "You keep a long-term memory of facts about a user. A new candidate statement "
    "arrived; compare it with the existing facts, numbered [1], [2], ... and decide one of:\n"
    '- "reinforce": it restates fact n and adds nothing: every detail it gives is already '
    'in fact n (give "fact": n)\n'
    '- "update": it refines or completes fact n; give "fact": n and "text": one sentence '
    "that keeps every detail of both\n"
    '- "supersede": it contradicts fact n about the same subject and the same attribute '
    "(the same statement negated, or a new value of it, e.g. a new city for where the user "
    'lives) and, being newer, replaces it (give "fact": n). A negative statement about a '
    "different detail is not a contradiction: add it\n"
    '- "add": it is a different fact, even if related (another detail, time, person or event)\n'
    '- "drop": not worth remembering (trivial, not about the user, or too uncertain)\n'
    "When unsure between reinforce or supersede and add, add: distinct facts must stay "
    "distinct.\n"
    'Set "important": true for a stable, significant fact (identity, strong preference, '
    "lasting commitment).\n"
    'Reply with JSON only: {"decision": "...", "fact": n or null, "text": "...", '
    '"important": false, "reason": "short why"}'
)


class Verdict(msgspec.Struct, frozen=True):
    decision: Literal["reinforce", "update", "supersede", "add", "drop"]
    fact: int | None = None
    text: str = ""
    important: bool = False
    reason: str = ""


_decode = msgspec.json.Decoder(Verdict).decode
_FENCE = re.compile(r"^```(?:json)?\s*|\s*```$", re.MULTILINE)


async def ask_judge(
    provider: Provider, candidate: str, facts: Sequence[str], *, max_tokens: int
) -> Verdict | None:
    """The judge's verdict, or ``None`` when it gave no usable answer (the rules decide then).

    Facts are shown by small integer ids, never by their real ids.
    """
    listing = "\n".join(f"[{n}] {text}" for n, text in enumerate(facts, start=1))
    result = await ask_json(
        provider,
        JUDGE_PROMPT,
        f"{JUDGE_MARKER}\nCandidate: {candidate}\nExisting facts:\n{listing}",
        max_tokens=max_tokens,
    )
    if result.stop_reason is not StopReason.END_TURN:
        return None
    body = json_object_text(result.text)
    if body is None:
        return None
    try:
        verdict = _decode(body)
    except (msgspec.DecodeError, msgspec.ValidationError):
        return None
    needs_fact = verdict.decision in ("reinforce", "update", "supersede")
    if needs_fact and (verdict.fact is None or not 1 <= verdict.fact <= len(facts)):
        return None
    if verdict.decision == "update" and not verdict.text.strip():
        return None
    return verdict
