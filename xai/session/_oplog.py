"""A Session's info lines for operators: what happened and what it cost, never what was said.

Every line carries the bound ``session_id`` (and ``agent_id`` under an Agent).
Message texts, tool arguments and results stay out of them; see docs/logging.md.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from xai.logs import get_logger
from xai.messages import CloseReason, Message, ToolMessage, TurnOutcome, Usage

__all__ = ["closed", "opened", "turn_done"]

_log = get_logger("xai.session._session")  # the Session's own lines


def _ms(started: float) -> float:
    return round((time.perf_counter() - started) * 1000, 1)


def opened(*, parent_id: str | None, depth: int, resumed: bool, turns: int, durable: bool) -> None:
    _log.info(
        "session.opened",
        parent_id=parent_id,
        depth=depth,
        resumed=resumed,
        turns=turns,
        durable=durable,
    )


def turn_done(
    outcome: TurnOutcome, *, rounds: int, messages: Sequence[Message], started: float
) -> None:
    """``messages``: what the turn added to the history (only its tool results are counted)."""
    if not _log.enabled("info"):
        return
    usage = outcome.usage
    _log.info(
        "session.turn_done",
        turn=outcome.turn,
        status=outcome.status.value,
        rounds=rounds,
        prompt_tokens=usage.prompt_tokens,
        completion_tokens=usage.completion_tokens,
        requests=usage.requests,
        estimated=usage.estimated,
        tool_calls=sum(isinstance(m, ToolMessage) for m in messages),
        error=outcome.error.type if outcome.error is not None else None,
        ms=_ms(started),
    )


def closed(
    reason: CloseReason, *, turns: int, usage: Usage, pending: int, acknowledged: int
) -> None:
    """``pending``: candidates the owner has not acknowledged (they wait in the journal)."""
    if not _log.enabled("info"):
        return
    _log.info(
        "session.closed",
        reason=reason,
        turns=turns,
        prompt_tokens=usage.prompt_tokens,
        completion_tokens=usage.completion_tokens,
        requests=usage.requests,
        estimated=usage.estimated,
        candidates_pending=pending,
        candidates_acknowledged=acknowledged,
    )
