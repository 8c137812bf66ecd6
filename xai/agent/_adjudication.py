"""The Agent's adjudication: one task deciding the memory candidates its Sessions propose,
in order, several queued jobs in one call; the decisions acknowledged and announced.

It is handed what it works on (the memory, a way to publish, the telemetry of the
moment), never the Agent. Its life: ``run`` (in the Agent's task group) until
``finish``, which lets it decide what is queued within a bound, then stops it; what it
could not decide stays unacknowledged in the Sessions' journals (the next start
decides it) and ``finish`` says how much that was.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any

import anyio
import anyio.abc
import msgspec
from anyio.streams.memory import MemoryObjectSendStream

from xai.agent._jobs import Job, decisions_by_job, drain, grounded_in
from xai.events import MemoryDecided
from xai.exceptions import AdjudicationStopped, MemoryUnavailableError
from xai.logs import get_logger
from xai.memory import Decision, LongTermMemory
from xai.messages import CandidateKind, MemoryCandidate, Message, new_id
from xai.session import FinalizingContext, Session

if TYPE_CHECKING:
    from xai.telemetry import Telemetry

__all__ = ["Adjudication", "AdjudicationStopped", "Publish"]

_log = get_logger("xai.agent._agent")  # the Agent's own lines

_FLUSH_IDLE = 2.0
"""Seconds without a pass after which the index writes that passes deferred are written
(``LongTermMemory.flush_index``): a busy Agent groups many passes' writes, and a shared
index store (a Chroma server other programs read) is at most about this far behind."""

Publish = Callable[[str | None, Any], None]
"""How an event reaches the Agent's observers: ``(session id or None, event body)``."""


class Adjudication:
    """The job queue and the task that empties it. ``tracer`` gives the Agent's telemetry
    as it is now (its persona's name may change), ``None`` without telemetry."""

    def __init__(
        self,
        agent_id: str,
        memory: LongTermMemory,
        publish: Publish,
        tracer: Callable[[], Telemetry | None],
    ) -> None:
        self.agent_id = agent_id
        self.memory = memory
        self._publish = publish
        self._tracer = tracer
        self._send: MemoryObjectSendStream[Job] | None = None
        self._scope: anyio.CancelScope | None = None
        self._stopped: anyio.Event | None = None
        self._recorded: set[str] = set()  # Sessions whose episodes are in memory (closing ones)
        self._deferred: anyio.Event | None = None  # set when a pass left index writes waiting
        self._last_pass = 0.0
        self._passing = False

    # -- the queue ---------------------------------------------------------------------

    async def enqueue(self, job: Job) -> bool:
        """Queue ``job``, waiting while the queue is full. False once the adjudicator stopped."""
        send = self._send
        if send is None:
            _log.warning("agent.candidates_after_stop", count=len(job.candidates))
            return False
        try:
            await send.send(job)
        except (anyio.BrokenResourceError, anyio.ClosedResourceError):
            _log.warning("agent.candidates_after_stop", count=len(job.candidates))
            return False
        return True

    def offer(self, job: Job) -> None:
        """Queue ``job`` if there is room. When there is none (the adjudicator is behind),
        the candidates stay with their Session, unacknowledged and journaled, and its close
        hands them over: the event forwarder never waits (it also carries ``SessionClosed``)."""
        send = self._send
        if send is None:
            return
        try:
            send.send_nowait(job)
        except anyio.WouldBlock:
            _log.info("agent.adjudication_behind", session_id=job.session_id)
        except (anyio.BrokenResourceError, anyio.ClosedResourceError):
            _log.warning("agent.candidates_after_stop", count=len(job.candidates))

    def recorded(self, session_id: str) -> bool:
        """Whether the closing hook of ``session_id`` recorded its episodes (asked once, when
        it closed: ``closed.list`` may name it then)."""
        if session_id in self._recorded:
            self._recorded.discard(session_id)
            return True
        return False

    async def finalizing(self, context: FinalizingContext, session: Session | None) -> None:
        """A Session is closing: its unacknowledged candidates are decided before it goes.

        Returns once they are decided (and acknowledged). Raises ``AdjudicationStopped``
        at once if the adjudicator has stopped (or when it stops, or fails on them), so
        that the Session records itself ``closing``, not closed: the candidates stay in
        its journal for the next start. A decision that comes after the Session closed
        acknowledges them late, which completes its close.
        """
        if context.episodes:  # what was said is kept first: the evidence candidates point to
            await self.memory.record_episodes(context.episodes)
        if not context.episodes or context.episodes[-1].id in self.memory.episodes:
            self._recorded.add(context.session_id)
        if not context.candidates:
            return
        done = anyio.Event()
        job = Job(context.session_id, context.candidates, session, done)
        if await self.enqueue(job):
            await done.wait()  # set when decided, and when the adjudicator stops without
        if not job.decided:
            raise AdjudicationStopped(
                f"agent {self.agent_id} did not decide the {len(job.candidates)} memory "
                f"candidates of session {context.session_id}: they wait in its journal"
            )

    # -- deciding ----------------------------------------------------------------------

    async def decide(
        self, candidates: tuple[MemoryCandidate, ...], session_id: str
    ) -> list[Decision]:
        """``memory.adjudicate``, traced as the Agent's adjudication."""
        telemetry = self._tracer()
        if telemetry is None:
            return await self.memory.adjudicate(candidates, session_id=session_id)
        with telemetry.adjudication(session_id, len(candidates)) as span:
            decisions = await self.memory.adjudicate(candidates, session_id=session_id)
            span.decisions(d.kind for d in decisions)
        return decisions

    async def decide_left_over(
        self,
        session_id: str,
        candidates: tuple[MemoryCandidate, ...],
        history: Sequence[Message],
    ) -> None:
        """Decide candidates no live Session will deliver (those not decided already)."""
        todo = tuple(
            c if grounded_in(history, c) else msgspec.structs.replace(c, evidence=())
            for c in candidates
            if not self.memory.decided(c.id)
        )
        if todo:
            self.announce(session_id, await self.decide(todo, session_id))

    async def remember(
        self, text: str, kind: CandidateKind, source: str, now: float
    ) -> list[Decision]:
        """Decide ``text`` as a candidate the user asked for from outside any Session
        (``Agent.remember``), with ``source`` as its provenance; announced."""
        candidate = MemoryCandidate(
            text=text,
            kind=kind,
            confidence=0.9,  # said explicitly, on purpose
            evidence=(f"{source}:{new_id()}",),  # the user's request
            session_id=source,
            created_at=now,
        )
        # Queued like a Session's candidates: requests that arrive together are decided in
        # one pass (30 concurrent MCP ``remember`` calls each used to adjudicate alone).
        done = anyio.Event()
        job = Job(source, (candidate,), None, done, request=True)
        if await self.enqueue(job):
            await done.wait()
        if job.error is not None:
            raise job.error
        if not job.decided:
            raise AdjudicationStopped(
                f"agent {self.agent_id} stopped deciding memory: {text!r} was not remembered"
            )
        return job.decisions

    async def announced(self, deciding: Awaitable[Decision | list[Decision]]) -> list[Decision]:
        """The decisions ``deciding`` makes (the memory's own: maintenance, forgetting),
        announced as no Session's."""
        made = await deciding
        decisions = made if isinstance(made, list) else [made]
        self.announce(None, decisions)
        return decisions

    def announce(self, session_id: str | None, decisions: Sequence[Decision]) -> None:
        """Log the decisions (``memory.decided``) and publish one ``MemoryDecided`` each."""
        if decisions and _log.enabled("info"):
            fields = _decided_fields(session_id, decisions)
            _log.info("memory.decided", agent_id=self.agent_id, **fields)
        for decision in decisions:
            self._publish(
                session_id,
                MemoryDecided(
                    decision=decision.kind,
                    reason=decision.reason,
                    fact_ids=tuple(f.id for f in decision.facts),
                    candidate_id=decision.candidate.id if decision.candidate else None,
                ),
            )

    def _checked(self, job: Job) -> tuple[MemoryCandidate, ...]:
        """``job``'s candidates, without the evidence that is not the user's."""
        history = job.session.history if job.session is not None else ()
        return tuple(
            c if grounded_in(history, c) else msgspec.structs.replace(c, evidence=())
            for c in job.candidates
        )

    async def _one(self, job: Job) -> None:
        try:
            decisions = await self.decide(self._checked(job), job.session_id)
            self._settle(job, decisions)
        except Exception as exc:
            if job.request:
                job.error = exc  # the caller hears of it
            else:
                _log.exception("agent.adjudication_failed", session_id=job.session_id)

    async def _together(self, batch: Sequence[Job]) -> bool:
        """The candidates of every job of ``batch`` in one ``memory.adjudicate`` call, each
        with its job's session id. False if that call failed: nothing is acknowledged then,
        and each job is tried again on its own (one bad job fails alone)."""
        candidates = tuple(
            c if not job.session_id or c.session_id == job.session_id
            else msgspec.structs.replace(c, session_id=job.session_id)
            for job in batch
            for c in self._checked(job)
        )  # fmt: skip
        sessions = {job.session_id for job in batch}
        try:
            decisions = await self.decide(candidates, sessions.pop() if len(sessions) == 1 else "")
        except Exception:
            _log.warning("agent.adjudication_batch_failed", jobs=len(batch), exc_info=True)
            return False
        for job, decided in zip(batch, decisions_by_job(batch, decisions), strict=True):
            try:
                self._settle(job, decided)
            except Exception:
                _log.exception("agent.adjudication_failed", session_id=job.session_id)
        return True

    def _settle(self, job: Job, decisions: Sequence[Decision]) -> None:
        """``job``'s candidates are decided: acknowledge them and tell of the decisions."""
        if job.session is not None:
            # Also after the Session closed: a late acknowledgement completes a close
            # whose hook could not wait for it.
            job.session.acknowledge_candidates(c.id for c in job.candidates)
        job.decided = True
        if job.request:
            job.decisions = list(decisions)
            self.announce(None, decisions)  # asked from outside any Session
        else:
            self.announce(job.session_id or None, decisions)

    # -- the task ----------------------------------------------------------------------

    async def run(
        self, queue: int, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED
    ) -> None:
        """Decide every job queued (``queue`` of them wait at most: a Session that proposes
        more waits), in order, until ``finish``."""
        send, jobs = anyio.create_memory_object_stream[Job](queue)
        self._send = send
        self._stopped = stopped = anyio.Event()
        try:
            with anyio.CancelScope() as self._scope:
                async with anyio.create_task_group() as tasks:
                    self._deferred = anyio.Event()
                    tasks.start_soon(self._flush_when_idle)
                    task_status.started()
                    async for job in jobs:
                        batch = drain(job, jobs)  # every job already queued: one embedding call
                        self._passing = True
                        try:
                            if len(batch) == 1 or not await self._together(batch):
                                for one in batch:
                                    await self._one(one)
                        finally:
                            self._passing = False
                            for one in batch:
                                if one.done is not None:
                                    one.done.set()
                        if self.memory.index_behind:
                            self._last_pass = anyio.current_time()
                            self._deferred.set()
                    tasks.cancel_scope.cancel()
        finally:
            # Stopped (the job stream ended, or cancelled): whoever waits for a queued job
            # stops waiting now, and sends from now on fail at once. (No await in here.)
            left = 0
            while True:
                try:
                    job = jobs.receive_nowait()
                except (anyio.WouldBlock, anyio.EndOfStream, anyio.ClosedResourceError):
                    break
                left += len(job.candidates)
                if job.done is not None:
                    job.done.set()
            if left:
                _log.warning("agent.adjudication_abandoned", queued_candidates=left)
            jobs.close()
            send.close()
            self._send = None
            stopped.set()

    async def _flush_when_idle(self) -> None:
        """Once a pass has left index writes waiting, write them when no pass has run for
        ``_FLUSH_IDLE`` seconds (an idle Agent has no timer: this waits for a pass first)."""
        while True:
            assert self._deferred is not None
            await self._deferred.wait()
            self._deferred = anyio.Event()
            while True:  # (a deadline that moves with every pass: no single event to wait on)
                left = self._last_pass + _FLUSH_IDLE - anyio.current_time()
                if not self._passing and left <= 0:
                    break
                await anyio.sleep(_FLUSH_IDLE if self._passing else left)
            try:
                await self.memory.flush_index()
            except MemoryUnavailableError:  # repaired from the ledger when next opened
                _log.warning("agent.index_flush_failed", exc_info=True)

    async def finish(self, seconds: float) -> bool:
        """No more jobs: decide those queued (and the one being decided) within ``seconds``
        seconds, then stop. True if the queue emptied in time; False if the adjudicator
        was stopped first (its candidates wait in their journals, a warning says so)."""
        send, stopped = self._send, self._stopped
        if send is None or stopped is None:
            return True
        send.close()
        with anyio.move_on_after(seconds):
            await stopped.wait()
            return True
        _log.warning("agent.adjudication_timed_out", seconds=seconds)
        if self._scope is not None:
            self._scope.cancel()
        await stopped.wait()
        return False


def _decided_fields(session_id: str | None, decisions: Sequence[Decision]) -> dict[str, Any]:
    """The ``memory.decided`` line: how many of each kind, and ids (never a fact's text)."""
    fields: dict[str, Any] = {} if session_id is None else {"session_id": session_id}
    fields["kinds"] = dict(Counter(d.kind for d in decisions))
    fields["judged"] = sum(d.judge for d in decisions)
    fields["candidate_ids"] = [d.candidate.id for d in decisions if d.candidate is not None]
    fields["fact_ids"] = list(dict.fromkeys(f.id for d in decisions for f in d.facts))
    return fields
