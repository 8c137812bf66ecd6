"""What the Agent's adjudicator works on: jobs of candidates, and whether a candidate's
evidence is grounded in what the user said."""

from __future__ import annotations

from collections.abc import Sequence

import anyio

from xai.messages import MemoryCandidate, Message, UserMessage
from xai.session import Session

__all__ = ["Job", "grounded_in"]


class Job:
    """Candidates of one Session for the adjudicator. ``done`` is set when the job is over
    (``decided`` says whether its candidates were decided and acknowledged)."""

    __slots__ = ("candidates", "decided", "done", "session", "session_id")

    def __init__(
        self,
        session_id: str,
        candidates: tuple[MemoryCandidate, ...],
        session: Session | None,
        done: anyio.Event | None,
    ) -> None:
        self.session_id = session_id
        self.candidates = candidates
        self.session: Session | None = session
        self.done: anyio.Event | None = done
        self.decided = False


def grounded_in(history: Sequence[Message], candidate: MemoryCandidate) -> bool:
    """Evidence must be user-origin input (when ``history`` still has the message)."""
    if not candidate.evidence:
        return False
    by_id = {m.id: m for m in history if isinstance(m, UserMessage)}
    for evidence in candidate.evidence:
        message = by_id.get(evidence)
        if message is not None and message.origin != "user":
            return False
    return True
