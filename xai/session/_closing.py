"""The end of a Session's task: finalising it (hooks, the journal's last record, the
events), or suspending it (none of that: the journal stays open-ended for a reopen).

``Ending`` works on the state objects it is given and runs in the Session's own task.
"""

from __future__ import annotations

from xai.events import SessionClosed, SessionFailed, SessionFinalizing, TurnDone
from xai.exceptions import DiskFullError
from xai.logs import get_logger
from xai.messages import CloseReason, ErrorInfo, TurnOutcome, TurnStatus
from xai.session import _oplog
from xai.session._announce import SessionHub
from xai.session._candidates import Candidates
from xai.session._inbox import Inbox
from xai.session._lifecycle import Lifecycle, SessionState
from xai.session._mood import SessionMood
from xai.session._recorder import Recorder
from xai.session._records import ClosedRecord, ClosingRecord, TurnEndRecord
from xai.session._transcript import Transcript
from xai.session._types import FinalizingContext, FinalizingHook, TurnSlot, run_hooks
from xai.session._usage import Spending

__all__ = ["Ending"]

_log = get_logger(__name__)


class Ending:
    """How one Session's task ends: ``finalise`` (a close) or ``suspended``."""

    __slots__ = (
        "candidates",
        "hook_timeout",
        "hooks",
        "hub",
        "inbox",
        "lifecycle",
        "mood",
        "parent_id",
        "recorder",
        "session_id",
        "spending",
        "transcript",
    )

    def __init__(
        self,
        *,
        session_id: str,
        parent_id: str | None,
        hooks: list[FinalizingHook],
        hook_timeout: float,
        lifecycle: Lifecycle,
        inbox: Inbox,
        recorder: Recorder,
        hub: SessionHub,
        candidates: Candidates,
        transcript: Transcript,
        spending: Spending,
        mood: SessionMood | None = None,
    ) -> None:
        self.mood = mood
        self.session_id = session_id
        self.parent_id = parent_id
        self.hooks = hooks
        self.hook_timeout = hook_timeout
        self.lifecycle = lifecycle
        self.inbox = inbox
        self.recorder = recorder
        self.hub = hub
        self.candidates = candidates
        self.transcript = transcript
        self.spending = spending

    async def finalise(self, turns: int, current: TurnSlot | None) -> None:
        """Close for good: end a torn-down turn (``current``, if it has not ended), drop what
        waits, run the ``on_session_finalizing`` hooks, write the journal's last record, end
        every subscription."""
        lifecycle = self.lifecycle
        if lifecycle.state is not SessionState.CLOSING:
            lifecycle.closing(lifecycle.close_reason)
        reason = lifecycle.close_reason
        recorder, hub = self.recorder, self.hub
        closed: tuple[ClosedRecord | ClosingRecord, int | None] | None = None  # the last word
        try:
            if current is not None and current.outcome is None:
                # The turn was torn down from outside (or by a failure) before it finished.
                outcome = TurnOutcome(
                    turn=turns,
                    status=TurnStatus.ERROR if reason == "error" else TurnStatus.CANCELLED,
                    input_id=current.input.id if current.input else None,
                )
                end = TurnEndRecord(outcome=outcome)
                try:
                    hub.announce(end, recorder.write(end))
                except DiskFullError:  # resumed from the journal as it is: an open turn
                    _log.exception("session.journal_failed", stage="turn_end")
                    hub.publish(TurnDone(outcome=outcome))
                current.resolve(outcome)
            try:
                self.inbox.drop(turns, recorder.journal)
            except DiskFullError:  # still accepted in the journal: they run when resumed
                _log.exception("session.journal_failed", stage="drop")
                self.inbox.drop(turns, None)
            hub.publish(SessionFinalizing(reason=reason))
            took_all = await self._run_hooks(reason, turns)
            if recorder.journal is not None:
                try:
                    waiting = len(self.candidates.unacknowledged())
                    closed = recorder.last_word(reason, waiting=waiting, hooks_took_all=took_all)
                    await recorder.sync()
                except OSError as exc:  # (a full disk too) not recorded closed: resumed later
                    _log.exception("session.journal_failed", stage="close")
                    hub.publish(SessionFailed(error=ErrorInfo.from_exception(exc), stage="journal"))
        finally:
            recorder.close()
            lifecycle.transition(SessionState.CLOSED)
            try:
                if closed is not None:
                    hub.announce(*closed)
                else:  # (no journal, or it failed: nothing recorded to announce)
                    hub.publish(SessionClosed(reason=reason))
                hub.end()
                pending = len(self.candidates.unacknowledged())
                _oplog.closed(
                    reason,
                    turns=turns,
                    usage=self.spending.total,
                    pending=pending,
                    acknowledged=len(self.candidates) - pending,
                )
            finally:  # whatever happened, nobody waits for this Session forever
                lifecycle.set_ended()

    async def _run_hooks(self, reason: CloseReason, turns: int) -> bool:
        """Run every hook; True if each returned normally (so the owner took the candidates).

        No hook (a Session without an owner's memory): nothing to build, the episodes
        included."""
        if not self.hooks:
            return True
        context = FinalizingContext(
            session_id=self.session_id,
            reason=reason,
            candidates=self.candidates.unacknowledged(),
            episodes=tuple(self.transcript.episodes),
            usage=self.spending.total,
            turns=turns,
            parent_id=self.parent_id,
            mood=tuple(self.mood.deltas) if self.mood is not None else (),
            mood_seed=self.mood.seed if self.mood is not None else None,
        )

        def failed(exc: Exception) -> None:
            error = ErrorInfo.from_exception(exc)
            self.hub.publish(SessionFailed(error=error, stage="finalizing_hook"))

        return await run_hooks(self.hooks, context, self.hook_timeout, failed)

    def suspended(self, turns: int) -> None:
        """The task ends without a close: the journal is left as it is (open-ended, so a
        reopen continues it), waiting inputs stay accepted there, subscriptions end."""
        self.lifecycle.transition(SessionState.SUSPENDED)
        try:
            waiting = self.inbox.release(turns)
            self.recorder.close()
            self.hub.end()
            _log.info(
                "session.suspended",
                turns=turns,
                inputs_waiting=waiting,
                candidates_pending=len(self.candidates.unacknowledged()),
            )
        finally:
            self.lifecycle.set_ended()
