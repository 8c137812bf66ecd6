"""L1 memory candidates: what the user said that may be worth remembering.

After each turn the Session asks the model, in a JSON reply, for points drawn
from the turn's *user-origin* messages only. Candidates whose evidence is not a
user message are dropped, so input the Agent synthesised (origin ``agent``)
can never become a statement about the user.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, assert_never, get_args

import msgspec

from xai.exceptions import RunError
from xai.messages import (
    AssistantMessage,
    CandidateKind,
    MemoryCandidate,
    Message,
    StopReason,
    SystemMessage,
    ToolMessage,
    Usage,
    UserMessage,
)
from xai.mood import MoodDelta
from xai.providers import Provider
from xai.structured import ask_json, json_object_text

if TYPE_CHECKING:
    from xai.telemetry import Telemetry

__all__ = ["EXTRACTION_MARKER", "CandidateParse", "extract_candidates", "parse_candidates"]

EXTRACTION_MARKER = "[xai:memory-extraction]"
_KINDS = frozenset(get_args(CandidateKind))

# A worked example, not a schema with placeholders: small models copy a template's
# "<id of a user message>" and "preference|fact|..." back verbatim, but follow an example.
# Its ids look like real ones (16 hex digits) yet are no message's, so a copied example
# candidate is never grounded in the real conversation (and is rejected besides).
_EXAMPLE_IDS = ("4f1c9a7e2b3d8c60", "a93e07d5c1f24b88", "7d20b6e4f9a1c352")
_EXAMPLE_CANDIDATE = "The user is allergic to peanuts"
_EXAMPLE_REPLY = (
    '{"candidates": [{"text": "'
    + _EXAMPLE_CANDIDATE
    + '", "kind": "fact", "confidence": 0.9, "evidence": ["'
    + _EXAMPLE_IDS[0]
    + '"]}], "mood": {"user": {"valence": -0.2, "arousal": 0.1, "emotions": {"worry": 0.3}, '
    + '"confidence": 0.6}, "assistant": {"valence": -0.1, "arousal": 0.0, "confidence": 0.5}}}'
)
EXTRACTOR_PROMPT = (
    "You pick out what is worth remembering about the user from the latest part of a "
    "conversation: preferences, facts about them or their work, commitments and plans, "
    "notable events. Use only what USER messages say; never what the assistant, a tool or "
    "an automated input says. Each point is one short self-contained sentence about the "
    "user.\n\n"
    "Reply with one JSON object only. Each candidate has: text (the sentence), kind (one "
    "word: preference, fact, commitment, event or other), confidence (a number from 0 to "
    "1) and evidence (the ids, in square brackets, of the USER messages it comes from).\n"
    "Also say how this part changed the mood of the user and of the assistant, in mood: "
    "for each, valence (change of pleasant versus unpleasant, -1 to 1), arousal (change of "
    "calm versus excited, -1 to 1), emotions (names with intensities from 0 to 1, may be "
    "empty) and confidence (0 to 1). Judge the user's mood from USER messages only; use 0 "
    "when nothing changed.\n\n"
    "Example. For this conversation:\n"
    f"[{_EXAMPLE_IDS[0]}] USER: I can't eat that, I'm allergic to peanuts.\n"
    f"[{_EXAMPLE_IDS[1]}] assistant: Sorry to hear that! I will suggest something else.\n"
    f"[{_EXAMPLE_IDS[2]}] USER: Thanks.\n"
    f"the reply is:\n{_EXAMPLE_REPLY}\n\n"
    "If nothing is worth remembering, reply with an empty candidates list (and the mood)."
)


def _request(rendered: str, user_ids: Sequence[str]) -> str:
    """The extraction request: the marker, the turn's messages, and their USER ids spelled out."""
    ids = ", ".join(user_ids)
    return (
        f"{EXTRACTION_MARKER}\n{rendered}\n\n"
        f"The USER message ids above: {ids}. Reply with the JSON object now."
    )


class _WireCandidate(msgspec.Struct):
    text: str
    kind: str = "fact"
    confidence: float = 0.5
    evidence: list[str] = msgspec.field(default_factory=list)


class _WireReply(msgspec.Struct):
    candidates: list[Any] = msgspec.field(default_factory=list)
    """Each item is converted on its own: one bad candidate never costs the good ones."""
    mood: Any = None
    """``{"user": {...}, "assistant": {...}}``: read on its own too (see ``_mood``)."""


class _WireMood(msgspec.Struct):
    valence: float = 0.0
    arousal: float = 0.0
    emotions: dict[str, float] = msgspec.field(default_factory=dict)
    confidence: float = 0.5


class CandidateParse(msgspec.Struct, frozen=True, kw_only=True):
    """What one extraction reply gave: the candidates kept, and why the others were rejected.

    ``rejected`` lists invalid items (a missing or mistyped field, or a copy of
    the prompt's placeholders), each as ``$.candidates[i]: reason``. Candidates
    whose evidence names no user message are dropped without a word: that is
    policy (input the Agent synthesised is never a statement about the user),
    not a malformed answer.
    """

    kept: tuple[MemoryCandidate, ...] = ()
    rejected: tuple[str, ...] = ()
    mood: tuple[MoodDelta, ...] | None = None
    """The mood deltas the reply gave (``None``: none usable, the lexicon estimates them)."""


_reply = msgspec.json.Decoder(_WireReply)


def _template(value: str) -> bool:
    """Whether ``value`` is a blank or a slot of a template (``...``, ``<id ...>``)."""
    v = value.strip()
    return v in ("", "...", "…") or (v.startswith("<") and v.endswith(">"))


def _placeholder(item: _WireCandidate) -> str | None:
    """Why ``item`` copies the prompt's template instead of filling it in (``None``: it does not)."""
    if _template(item.text) or item.text.strip() == _EXAMPLE_CANDIDATE:
        return f"text {item.text!r} is a placeholder"
    if "|" in item.kind or _template(item.kind):
        return f"kind {item.kind!r} is a placeholder"
    copied = [e for e in item.evidence if _template(e)]
    if copied:
        return f"evidence {copied[0]!r} is a placeholder"
    return None


def parse_candidates(
    text: str, *, user_ids: set[str], session_id: str, turn: int
) -> CandidateParse:
    """Parse the model's JSON candidate by candidate; keep the valid ones grounded in user
    messages, and say why the others were rejected.

    Raises ``RunError`` only when the answer has no candidate list at all.
    """
    body = json_object_text(text)
    if body is None:
        raise RunError(f"the extractor did not answer with JSON: {text[:200]!r}")
    try:
        reply = _reply.decode(body)
    except (msgspec.DecodeError, msgspec.ValidationError) as exc:
        raise RunError(f"the extractor's JSON is not a candidate list ({exc})") from None
    now = time.time()
    kept: list[MemoryCandidate] = []
    rejected: list[str] = []
    for index, raw in enumerate(reply.candidates):
        where = f"$.candidates[{index}]"
        try:
            item = msgspec.convert(raw, _WireCandidate, strict=False)
        except msgspec.ValidationError as exc:
            rejected.append(f"{where}: {exc}")
            continue
        copied = _placeholder(item)
        if copied is not None:
            rejected.append(f"{where}: {copied}")
            continue
        evidence = tuple(e for e in item.evidence if e in user_ids)
        if not evidence:
            continue  # not grounded in anything the user said
        kind = item.kind if item.kind in _KINDS else "other"
        kept.append(
            MemoryCandidate(
                text=item.text.strip(),
                kind=kind,  # type: ignore[arg-type]
                confidence=min(1.0, max(0.0, item.confidence)),
                evidence=evidence,
                session_id=session_id,
                turn=turn,
                created_at=now,
            )
        )
    parroted = any("placeholder" in reason for reason in rejected)  # a parroted example
    mood = None if parroted else _mood(reply.mood, sorted(user_ids), turn, now)
    return CandidateParse(kept=tuple(kept), rejected=tuple(rejected), mood=mood)


def _clamped(value: float, low: float) -> float:
    return max(low, min(1.0, value))


def _mood(raw: Any, evidence: Sequence[str], turn: int, now: float) -> tuple[MoodDelta, ...] | None:
    """The mood deltas of a reply's ``mood`` object; ``None`` when it has none or an invalid
    one (the offline estimator answers then). Evidence is the turn's user messages."""
    if not isinstance(raw, dict):
        return None
    deltas: list[MoodDelta] = []
    for key, who in (("user", "user"), ("assistant", "agent")):
        if raw.get(key) is None:
            continue
        try:
            item = msgspec.convert(raw[key], _WireMood, strict=False)
        except msgspec.ValidationError:
            return None
        if not all(map(math.isfinite, (item.valence, item.arousal, item.confidence))):
            return None
        emotions = {
            str(name)[:40]: _clamped(level, 0.0)
            for name, level in list(item.emotions.items())[:8]
            if math.isfinite(level) and level > 0
        }
        deltas.append(
            MoodDelta(
                who=who,  # type: ignore[arg-type]
                valence=_clamped(item.valence, -1.0),
                arousal=_clamped(item.arousal, -1.0),
                emotions=emotions,
                confidence=_clamped(item.confidence, 0.0),
                evidence=tuple(evidence),
                turn=turn,
                at=now,
                source="model",
            )
        )
    return tuple(d for d in deltas if d.valence or d.arousal or d.emotions)


def _render(messages: Sequence[Message]) -> str:
    lines: list[str] = []
    for message in messages:
        if isinstance(message, UserMessage):
            who = "USER" if message.origin == "user" else f"automated input ({message.origin})"
            lines.append(f"[{message.id}] {who}: {message.content}")
        elif isinstance(message, AssistantMessage):
            if message.content:
                lines.append(f"[{message.id}] assistant: {message.content}")
        elif isinstance(message, ToolMessage):
            lines.append(f"[{message.id}] tool {message.tool_name}: {message.content[:500]}")
        elif isinstance(message, SystemMessage):
            pass  # instructions, not what was said
        else:
            assert_never(message)
    return "\n".join(lines)


async def extract_candidates(
    provider: Provider,
    messages: Sequence[Message],
    *,
    session_id: str,
    turn: int,
    max_tokens: int,
    on_usage: Callable[[Usage], object] | None = None,
    telemetry: Telemetry | None = None,
) -> CandidateParse:
    """Candidates from ``messages`` (one turn). No user-origin message: no request at all."""
    ordered = [m.id for m in messages if isinstance(m, UserMessage) and m.origin == "user"]
    if not ordered:
        return CandidateParse()
    user_ids = set(ordered)
    result = await ask_json(
        provider,
        EXTRACTOR_PROMPT,
        _request(_render(messages), ordered),
        max_tokens=max_tokens,
        telemetry=telemetry,
    )
    if on_usage is not None:
        on_usage(result.usage)
    if result.stop_reason is not StopReason.END_TURN:
        reason = result.error.message if result.error else result.stop_reason.value
        raise RunError(f"memory extraction failed ({reason})")
    return parse_candidates(result.text, user_ids=user_ids, session_id=session_id, turn=turn)
