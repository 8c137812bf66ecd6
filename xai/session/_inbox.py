"""A Session's inputs waiting for their turn, in the order they will run.

Accepting an input journals it at once (``accepted``: one ``O_APPEND`` write,
so ``send()`` stays synchronous and a kill -9 right after it loses nothing);
a restart puts the accepted inputs that never started back, in order; a close
drops what waits and journals that (``dropped``), so a restart never runs it.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable

from xai.messages import ErrorInfo, TurnOutcome, TurnStatus, UserMessage
from xai.session._journal import Journal
from xai.session._records import AcceptedRecord, DroppedRecord
from xai.session._types import TurnSlot

__all__ = ["Inbox"]


class Inbox:
    """Waiting turns: ``(slot, input)``, the input ``None`` for ``continue_turn``."""

    __slots__ = ("_items",)

    def __init__(self) -> None:
        self._items: deque[tuple[TurnSlot, UserMessage | None]] = deque()

    def __len__(self) -> int:
        return len(self._items)

    def accept(self, message: UserMessage, *, first: bool, journal: Journal | None) -> TurnSlot:
        """Queue an input (``first``: before those waiting), journaled before it is queued."""
        if journal is not None:
            journal.append(AcceptedRecord(message=message, interrupt=first))
        slot = TurnSlot(message)
        if first:
            self._items.appendleft((slot, message))
        else:
            self._items.append((slot, message))
        return slot

    def continuation(self) -> TurnSlot:
        slot = TurnSlot(None)
        self._items.append((slot, None))
        return slot

    def resume(self, turn: int) -> TurnSlot:
        """The open turn ``turn`` goes on first (its held calls wait for a decision)."""
        slot = TurnSlot(None, resume=turn)
        self._items.appendleft((slot, None))
        return slot

    def requeue(self, messages: Iterable[UserMessage]) -> tuple[TurnSlot, ...]:
        """Inputs accepted before a restart (already journaled), to run next, in order."""
        slots = tuple(TurnSlot(m) for m in messages)
        self._items.extend((s, s.input) for s in slots)
        return slots

    def pop(self) -> tuple[TurnSlot, UserMessage | None]:
        return self._items.popleft()

    def drop(self, turn: int, journal: Journal | None) -> None:
        """Cancel every waiting input, journaled as dropped first."""
        dropped = tuple(message.id for _, message in self._items if message is not None)
        if dropped and journal is not None:
            journal.append(DroppedRecord(input_ids=dropped))
        while self._items:
            handle, message = self._items.popleft()
            handle.resolve(
                TurnOutcome(
                    turn=turn, status=TurnStatus.CANCELLED, input_id=message.id if message else None
                )
            )

    def release(self, turn: int) -> int:
        """The Session is suspended: what waits stays accepted in the journal (a reopen runs
        it); the handles here resolve ``interrupted``. Returns how many waited."""
        count = len(self._items)
        error = ErrorInfo(
            type="SessionSuspended",
            message="the Session was suspended: this input runs when it is reopened",
        )
        while self._items:
            handle, message = self._items.popleft()
            handle.resolve(
                TurnOutcome(
                    turn=turn,
                    status=TurnStatus.INTERRUPTED,
                    error=error,
                    input_id=message.id if message else None,
                )
            )
        return count
