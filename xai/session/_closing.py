"""The end of a Session's task: finalising it (hooks, the journal's last record, the
events), or suspending it (none of that: the journal stays open-ended for a reopen).

These work on the Session's own state and run in its own task (rule 6).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from xai.events import SessionClosed, SessionFailed, SessionFinalizing, TurnDone
from xai.logs import get_logger
from xai.messages import CloseReason, ErrorInfo, TurnOutcome, TurnStatus
from xai.session import _oplog
from xai.session._journal import TurnEndRecord
from xai.session._types import FinalizingContext, run_hooks

if TYPE_CHECKING:
    from xai.session._session import Session

__all__ = ["end_suspended", "finalise"]

_log = get_logger(__name__)


async def finalise(self: Session) -> None:
    """Close ``self`` for good: end a torn-down turn, drop what waits, run the
    ``on_session_finalizing`` hooks, write the journal's last record, end every subscription."""
    self._closing = True
    self._state = "closing"
    reason = self._close_reason
    try:
        current = self._current
        if current is not None and not current.done:
            # The turn was torn down from outside (or by a failure) before it finished.
            outcome = TurnOutcome(
                turn=self._turns,
                status=TurnStatus.ERROR if reason == "error" else TurnStatus.CANCELLED,
                input_id=current.input.id if current.input else None,
            )
            self._recorder.write(TurnEndRecord(outcome=outcome))
            self._hub.publish(TurnDone(outcome=outcome))
            current._resolve(outcome)
        self._inbox.drop(self._turns, self._recorder.journal)
        self._hub.publish(SessionFinalizing(reason=reason))
        took_all = await _run_finalizing_hooks(self, reason)
        if self._recorder.journal is not None:
            try:
                waiting = len(self._unacknowledged())
                self._recorder.last_word(reason, waiting=waiting, hooks_took_all=took_all)
                await self._recorder.sync()
            except OSError as exc:
                _log.exception("session.journal_failed", stage="close")
                self._hub.publish(
                    SessionFailed(error=ErrorInfo.from_exception(exc), stage="journal")
                )
    finally:
        self._recorder.close()
        self._state = "closed"
        try:
            self._hub.publish(SessionClosed(reason=reason))
            self._hub.end()
            _oplog.closed(self, reason, pending=len(self._unacknowledged()))
        finally:  # whatever happened, nobody waits for this Session forever
            if self._closed is not None:
                self._closed.set()


async def _run_finalizing_hooks(self: Session, reason: CloseReason) -> bool:
    """Run every hook; True if each returned normally (so the owner took the candidates)."""
    context = FinalizingContext(
        session_id=self.id,
        reason=reason,
        candidates=self._unacknowledged(),
        episodes=tuple(self._transcript.episodes),
        usage=self._usage,
        turns=self._turns,
        parent_id=self.parent_id,
    )

    def failed(exc: Exception) -> None:
        error = ErrorInfo.from_exception(exc)
        self._hub.publish(SessionFailed(error=error, stage="finalizing_hook"))

    return await run_hooks(self.on_session_finalizing, context, self.config.hook_timeout, failed)


def end_suspended(self: Session) -> None:
    """The task ends without a close: the journal is left as it is (open-ended, so a
    reopen continues it), waiting inputs stay accepted there, subscriptions end."""
    self._state = "suspended"
    try:
        waiting = self._inbox.release(self._turns)
        self._recorder.close()
        self._hub.end()
        _log.info(
            "session.suspended",
            turns=self._turns,
            inputs_waiting=waiting,
            candidates_pending=len(self._unacknowledged()),
        )
    finally:
        if self._closed is not None:
            self._closed.set()
