"""What the Agent's adjudicator works on: jobs of candidates (taken together when several
are queued), and whether a candidate's evidence is grounded in what the user said."""

from __future__ import annotations

from collections.abc import Sequence

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream

from xai.memory import Decision
from xai.messages import MemoryCandidate, Message, UserMessage
from xai.session import Session

__all__ = ["Job", "decisions_by_job", "drain", "grounded_in"]


class Job:
    """Candidates of one Session for the adjudicator. ``done`` is set when the job is over
    (``decided`` says whether its candidates were decided and acknowledged).

    A request from outside any Session (``Agent.remember``) is a job too, with
    ``request=True``: ``session_id`` is then its provenance (``"mcp"``), its decisions are
    kept in ``decisions`` for the caller and announced as no Session's, and ``error`` is
    what failed it. Concurrent requests queue behind one adjudication pass this way (one
    embedding call, one neighbour query, one ledger sync for all of them)."""

    __slots__ = ("candidates", "decided", "decisions", "done", "error", "request", "session",
                 "session_id")  # fmt: skip

    def __init__(
        self,
        session_id: str,
        candidates: tuple[MemoryCandidate, ...],
        session: Session | None,
        done: anyio.Event | None,
        *,
        request: bool = False,
    ) -> None:
        self.session_id = session_id
        self.candidates = candidates
        self.session: Session | None = session
        self.done: anyio.Event | None = done
        self.decided = False
        self.request = request
        self.decisions: list[Decision] = []
        self.error: Exception | None = None


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


def drain(first: Job, jobs: MemoryObjectReceiveStream[Job]) -> list[Job]:
    """``first`` and every job already queued behind it, without waiting."""
    batch = [first]
    while True:
        try:
            batch.append(jobs.receive_nowait())
        except (anyio.WouldBlock, anyio.EndOfStream, anyio.ClosedResourceError):
            return batch


def decisions_by_job(batch: Sequence[Job], decisions: Sequence[Decision]) -> list[list[Decision]]:
    """``decisions`` (of one ``adjudicate`` call over the candidates of ``batch``, in order)
    split by the job whose candidate each decides; a decision without a candidate (a
    promotion) follows the decision before it. A candidate id in two jobs is the first's."""
    owner: dict[str, int] = {}
    for n, job in enumerate(batch):
        for candidate in job.candidates:
            owner.setdefault(candidate.id, n)
    out: list[list[Decision]] = [[] for _ in batch]
    current = 0
    for decision in decisions:
        if decision.candidate is not None:
            current = owner.get(decision.candidate.id, current)
        out[current].append(decision)
    return out
