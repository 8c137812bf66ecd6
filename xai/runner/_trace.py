"""``trace.json``'s turns, rebuilt from a Session journal's complete record (its
``JournalView``: each turn with everything recorded under its number).

The journal keeps every message even when a compaction shortened the history,
and every crash repair: a turn a crash interrupted ends as ``interrupted``, the
tool calls it left unanswered get results made up by xai (``synthetic``), and a
turn that merely continued it (no input of its own) folds into it. So the trace
says what happened, not only how it ended: ``interruptions`` counts the crashes
a turn went through, and a tool call that never got any result at all makes the
turn ``interrupted`` and the run ``failed`` (the conversation is not valid).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import assert_never

import msgspec

from xai.messages import (
    AssistantMessage,
    SystemMessage,
    ToolMessage,
    TurnOutcome,
    TurnStatus,
    Usage,
    UserMessage,
)
from xai.session import TurnView

__all__ = ["ToolCallTrace", "TurnTrace", "turns_of"]

RESULT_CHARS = 2000
"""How much of a tool result the trace keeps."""


class ToolCallTrace(msgspec.Struct, kw_only=True, omit_defaults=True):
    id: str
    name: str
    arguments: str
    result: str | None = None
    """The tool message (first ``RESULT_CHARS`` characters); absent if it never came."""
    success: bool | None = None
    synthetic: bool = False
    """The result was made up by xai: the call was interrupted or never run."""


class TurnTrace(msgspec.Struct, kw_only=True, omit_defaults=True):
    turn: int
    input: str
    answer: str
    rounds: int
    tool_calls: list[ToolCallTrace]
    status: TurnStatus
    usage: Usage | None = None
    error: str | None = None
    interruptions: int = 0
    """Times a crash interrupted this turn before it ended (each repaired on resume)."""


def _new(number: int) -> TurnTrace:
    return TurnTrace(
        turn=number, input="", answer="", rounds=0, tool_calls=[], status=TurnStatus.INTERRUPTED
    )


def _trace(turn: TurnView) -> TurnTrace:
    """One turn's details, from everything its journal recorded under its number."""
    trace = _new(turn.turn)
    if turn.input is not None:
        trace.input = turn.input.content
    for message in turn.messages:
        if isinstance(message, AssistantMessage):
            trace.rounds += 1
            trace.answer = message.content
            trace.tool_calls.extend(
                ToolCallTrace(id=c.id, name=c.name, arguments=c.arguments)
                for c in message.tool_calls
            )
        elif isinstance(message, ToolMessage):
            for call in trace.tool_calls:
                if call.id == message.tool_call_id:
                    call.result = message.content[:RESULT_CHARS]
                    call.success = not message.is_error
                    call.synthetic = message.synthetic
        elif isinstance(message, (UserMessage, SystemMessage)):
            pass
        else:
            assert_never(message)
    for outcome in turn.outcomes:
        _ended(trace, outcome)
    return trace


def _ended(trace: TurnTrace, outcome: TurnOutcome) -> None:
    trace.status = outcome.status
    trace.usage = outcome.usage
    if outcome.status is TurnStatus.INTERRUPTED:
        trace.interruptions += 1
    if outcome.error is not None:
        trace.error = outcome.error.message
    elif outcome.status is TurnStatus.BUDGET_EXHAUSTED:
        trace.error = "the turn reached max_turns before the model finished"


def turns_of(turn_log: Iterable[TurnView]) -> list[TurnTrace]:
    """Per-turn details, from a journal's turns (``JournalView.turn_log``)."""
    merged: list[TurnTrace] = []
    # (A turn that only began records nothing worth a trace until it says more.)
    recorded = (t for t in turn_log if t.input is not None or t.messages or t.outcomes)
    for item in map(_trace, recorded):
        if not item.input and merged:  # a continuation of the turn before it
            last = merged[-1]
            last.rounds += item.rounds
            last.tool_calls.extend(item.tool_calls)
            last.answer = item.answer or last.answer
            last.status = item.status
            last.interruptions += item.interruptions
            last.usage = item.usage if last.usage is None else last.usage + (item.usage or Usage())
            last.error = item.error
            continue
        merged.append(item)
    for number, item in enumerate(merged, start=1):
        item.turn = number
        unanswered = [c.id for c in item.tool_calls if c.result is None]
        if unanswered:
            # A request carrying these calls is invalid: the turn did not end well.
            for call in item.tool_calls:
                if call.result is None:
                    call.success = False
            item.status = TurnStatus.INTERRUPTED
            item.error = f"tool call(s) {', '.join(unanswered)} never got a result"
    return merged
