"""L1 memory candidates: what the user said that may be worth remembering.

After each turn the Session asks the model, in a JSON reply, for points drawn
from the turn's *user-origin* messages only. Candidates whose evidence is not a
user message are dropped, so input the Agent synthesised (origin ``agent``)
can never become a statement about the user.
"""

from __future__ import annotations

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
from xai.providers import Provider
from xai.structured import ask_json, json_object_text

if TYPE_CHECKING:
    from xai.telemetry import Telemetry

__all__ = ["EXTRACTION_MARKER", "CandidateParse", "extract_candidates", "parse_candidates"]

EXTRACTION_MARKER = "[xai:memory-extraction]"
_KINDS = frozenset(get_args(CandidateKind))

EXTRACTOR_PROMPT = (
    "You pick out what is worth remembering about the user from the latest part of a "
    "conversation: preferences, facts about them or their work, commitments and plans, "
    "notable events. Use only what USER messages say; never what the assistant, a tool or "
    "an automated input says. Each point is one short self-contained sentence about the "
    "user. Reply with JSON only, in this shape:\n"
    '{"candidates": [{"text": "...", "kind": "preference|fact|commitment|event|other", '
    '"confidence": 0.0-1.0, "evidence": ["<id of a user message>"]}]}\n'
    'If nothing is worth remembering, reply {"candidates": []}.'
)


class _WireCandidate(msgspec.Struct):
    text: str
    kind: str = "fact"
    confidence: float = 0.5
    evidence: list[str] = msgspec.field(default_factory=list)


class _WireReply(msgspec.Struct):
    candidates: list[Any] = msgspec.field(default_factory=list)
    """Each item is converted on its own: one bad candidate never costs the good ones."""


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


_reply = msgspec.json.Decoder(_WireReply)


def _template(value: str) -> bool:
    """Whether ``value`` is a blank or a slot of a template (``...``, ``<id ...>``)."""
    v = value.strip()
    return v in ("", "...", "…") or (v.startswith("<") and v.endswith(">"))


def _placeholder(item: _WireCandidate) -> str | None:
    """Why ``item`` copies the prompt's template instead of filling it in (``None``: it does not)."""
    if _template(item.text):
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
    return CandidateParse(kept=tuple(kept), rejected=tuple(rejected))


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
    user_ids = {m.id for m in messages if isinstance(m, UserMessage) and m.origin == "user"}
    if not user_ids:
        return CandidateParse()
    result = await ask_json(
        provider,
        EXTRACTOR_PROMPT,
        f"{EXTRACTION_MARKER}\n{_render(messages)}",
        max_tokens=max_tokens,
        telemetry=telemetry,
    )
    if on_usage is not None:
        on_usage(result.usage)
    if result.stop_reason is not StopReason.END_TURN:
        reason = result.error.message if result.error else result.stop_reason.value
        raise RunError(f"memory extraction failed ({reason})")
    return parse_candidates(result.text, user_ids=user_ids, session_id=session_id, turn=turn)
