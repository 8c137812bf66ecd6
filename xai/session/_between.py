"""What a Session does between Queries, and only there: compaction and memory extraction.

These work on the Session's own state and run in its own task (rule 6).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from xai.events import (
    CandidatesProposed,
    Compacted,
    CompactionMethod,
    CompactionReason,
    SessionFailed,
)
from xai.logs import get_logger
from xai.messages import ErrorInfo, Message
from xai.session._compaction import digest, message_chars, split_point, summarise
from xai.session._extraction import extract_candidates
from xai.session._journal import CandidatesRecord, CompactedRecord

if TYPE_CHECKING:
    from xai.session._session import Session

__all__ = ["compact", "extract"]

_log = get_logger(__name__)


async def compact(self: Session, reason: CompactionReason) -> bool:
    """Summarise the older history. Returns False when there was nothing to compact."""
    telemetry = self._telemetry
    if telemetry is None:
        return await _compact(self, reason)
    with telemetry.compaction(self.id, reason) as span:
        compacted = await _compact(self, reason)
        span.set("xai.compaction.compacted", compacted)
    return compacted


async def _compact(self: Session, reason: CompactionReason) -> bool:
    config = self.config
    cut = split_point(self._history, config.keep_recent_tokens, self._calibration)
    if cut == 0:
        return False
    before = self.estimated_tokens()
    older = self._history[:cut]
    method: CompactionMethod = "summary"
    try:
        summary = await summarise(
            self._provider,
            older,
            self._summary,
            max_tokens=config.summary_max_tokens,
            input_tokens=config.summariser_input_tokens,
            calibration=self._calibration,
            on_usage=lambda usage: self._spend(usage, "compaction"),
            telemetry=self._telemetry,
        )
    except Exception as exc:
        _log.warning("session.summary_failed", error=str(exc))
        method = "digest"
        summary = digest(
            older,
            self._summary,
            int(config.summary_max_tokens * self._calibration.chars_per_token),
        )
    await self._recorder.commit(CompactedRecord(summary=summary, removed=cut, method=method))
    self._summary = summary
    del self._history[:cut]
    self._history_chars = sum(map(message_chars, self._history))
    after = self.estimated_tokens()
    self._hub.publish(
        Compacted(
            before_tokens=before,
            after_tokens=after,
            removed_messages=cut,
            method=method,
            reason=reason,
        )
    )
    _log.info(
        "session.compacted",
        reason=reason,
        method=method,
        before_tokens=before,
        after_tokens=after,
        removed_messages=cut,
    )
    return True


async def extract(
    self: Session, turn: int, messages: list[Message], trace_context: Any = None
) -> None:
    """Propose memory candidates from one turn's messages (in its own span, with telemetry:
    a sibling of the turn's, under ``trace_context``)."""
    telemetry = self._telemetry
    if telemetry is None:
        return await _extract(self, turn, messages)
    with telemetry.extraction(self.id, turn, trace_context) as span:
        before = len(self._candidates)
        await _extract(self, turn, messages)
        span.set("xai.extraction.candidates", len(self._candidates) - before)


async def _extract(self: Session, turn: int, messages: list[Message]) -> None:
    try:
        parsed = await extract_candidates(
            self._provider,
            messages,
            session_id=self.id,
            turn=turn,
            max_tokens=self.config.extraction_max_tokens,
            on_usage=lambda usage: self._spend(usage, "extraction"),
            telemetry=self._telemetry,
        )
    except Exception as exc:
        _log.warning("session.extraction_failed", turn=turn, error=str(exc))
        self._hub.publish(SessionFailed(error=ErrorInfo.from_exception(exc), stage="extraction"))
        return
    candidates = parsed.kept
    if parsed.rejected:
        # Report the invalid ones, keep the valid ones (a small model's slip costs only itself).
        message = (
            f"the extractor's answer had {len(parsed.rejected)} invalid candidate(s) "
            f"(kept {len(candidates)}): " + "; ".join(parsed.rejected)
        )
        _log.warning(
            "session.extraction_candidates_rejected",
            turn=turn,
            kept=len(candidates),
            rejected=len(parsed.rejected),
            reasons=list(parsed.rejected),
        )
        self._hub.publish(
            SessionFailed(error=ErrorInfo(type="RunError", message=message), stage="extraction")
        )
    if not candidates:
        return
    await self._recorder.commit(CandidatesRecord(candidates=candidates))
    self._candidates.extend(candidates)
    self._hub.publish(CandidatesProposed(candidates=candidates))
    _log.info("session.candidates_proposed", turn=turn, candidate_ids=[c.id for c in candidates])
