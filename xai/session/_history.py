"""The shape Chat Completions requires of a history, and how a Session keeps it.

Every tool call of an assistant message is answered by exactly one tool
message, and those answers come right after it, before the next assistant or
user message. A live Query produces histories of that shape; a history read
back from a journal after a crash (or after a lost line) may not have it. Two
small functions restore it, used alike when a journal is replayed and when a
reopened Session repairs what it found, so both build the same list:

- ``place`` puts a tool result right after the results already given to its
  call's assistant message (a plain append in the usual case) and refuses an
  orphan (no such call) or a second answer to the same call;
- ``unanswered_calls`` lists the calls still waiting for a result, and
  ``interrupted_by_crash`` makes the synthetic result a reopened Session gives one.
"""

from __future__ import annotations

from xai.messages import AssistantMessage, Message, ToolCall, ToolMessage

__all__ = [
    "INTERRUPTED_BY_CRASH",
    "NOT_DECIDED",
    "interrupted_by_crash",
    "not_decided",
    "place",
    "unanswered_calls",
]

INTERRUPTED_BY_CRASH = "[interrupted: the process stopped before this tool call returned a result]"
NOT_DECIDED = "[not run: the turn was cancelled or closed before a person decided on this call]"


def place(history: list[Message], message: Message) -> bool:
    """Add ``message`` where it belongs. Returns False (and adds nothing) for a tool result
    whose call is not in ``history`` or is already answered."""
    if not isinstance(message, ToolMessage):
        history.append(message)
        return True
    call_id = message.tool_call_id
    # The usual case: the results of the last assistant message are being appended.
    end = len(history)
    start = end
    while start and isinstance(history[start - 1], ToolMessage):
        start -= 1
    owner = start - 1
    if not (owner >= 0 and _asked(history[owner], call_id)):
        owner = _find_owner(history, call_id, start - 1)
        if owner < 0:
            return False
        start = end = owner + 1
        while end < len(history) and isinstance(history[end], ToolMessage):
            end += 1
    for index in range(start, end):
        answer = history[index]
        if isinstance(answer, ToolMessage) and answer.tool_call_id == call_id:
            return False
    history.insert(end, message)
    return True


def unanswered_calls(history: list[Message]) -> list[ToolCall]:
    """The tool calls of ``history`` with no result right after their assistant message."""
    missing: list[ToolCall] = []
    index, size = 0, len(history)
    while index < size:
        message = history[index]
        index += 1
        if not isinstance(message, AssistantMessage) or not message.tool_calls:
            continue
        answered: set[str] = set()
        while index < size and isinstance(answer := history[index], ToolMessage):
            answered.add(answer.tool_call_id)
            index += 1
        missing.extend(call for call in message.tool_calls if call.id not in answered)
    return missing


def interrupted_by_crash(call: ToolCall) -> ToolMessage:
    """The synthetic result of a call whose process died before it returned."""
    return ToolMessage(
        tool_call_id=call.id,
        tool_name=call.name,
        content=INTERRUPTED_BY_CRASH,
        is_error=True,
        synthetic=True,
    )


def not_decided(call: ToolCall) -> ToolMessage:
    """The synthetic result of a held call its Session closed before anyone decided."""
    return ToolMessage(
        tool_call_id=call.id,
        tool_name=call.name,
        content=NOT_DECIDED,
        is_error=True,
        synthetic=True,
    )


def _asked(message: Message, call_id: str) -> bool:
    return isinstance(message, AssistantMessage) and any(
        call.id == call_id for call in message.tool_calls
    )


def _find_owner(history: list[Message], call_id: str, before: int) -> int:
    for index in range(min(before, len(history) - 1), -1, -1):
        if _asked(history[index], call_id):
            return index
    return -1
