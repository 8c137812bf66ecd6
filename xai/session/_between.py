"""What a Session does between Queries, and only there: compaction, memory extraction and
the turn's mood delta (from the extraction reply, else the offline estimator).

``Between`` works on the state objects it is given (the context, usage, candidates,
the journal's recorder, the event hub) and runs in the Session's own task (rule 6).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from xai.events import CompactionMethod, CompactionReason, SessionFailed
from xai.logs import get_logger
from xai.messages import ErrorInfo, Message
from xai.mood import MoodDelta
from xai.providers import Provider
from xai.session._announce import SessionHub
from xai.session._candidates import Candidates
from xai.session._compaction import digest, split_point, summarise
from xai.session._context import Context
from xai.session._extraction import extract_candidates
from xai.session._mood import SessionMood
from xai.session._recorder import Recorder
from xai.session._records import CandidatesRecord, CompactedRecord
from xai.session._types import SessionConfig
from xai.session._usage import Spending

if TYPE_CHECKING:
    from xai.telemetry import Telemetry

__all__ = ["Between"]

_log = get_logger(__name__)


class Between:
    """Compaction and memory extraction for one Session."""

    __slots__ = (
        "candidates",
        "config",
        "context",
        "hub",
        "mood",
        "provider",
        "recorder",
        "session_id",
        "spending",
        "telemetry",
    )

    def __init__(
        self,
        *,
        session_id: str,
        config: SessionConfig,
        provider: Provider,
        telemetry: Telemetry | None,
        context: Context,
        spending: Spending,
        candidates: Candidates,
        recorder: Recorder,
        hub: SessionHub,
        mood: SessionMood | None = None,
    ) -> None:
        self.mood = mood
        self.session_id = session_id
        self.config = config
        self.provider = provider
        self.telemetry = telemetry
        self.context = context
        self.spending = spending
        self.candidates = candidates
        self.recorder = recorder
        self.hub = hub

    async def compact_if_needed(self, reason: CompactionReason) -> None:
        config = self.config
        if config.compaction and (
            self.context.estimated_tokens() > config.context_window * config.compact_at
        ):
            await self.compact(reason)

    async def compact(self, reason: CompactionReason) -> bool:
        """Summarise the older history. Returns False when there was nothing to compact."""
        telemetry = self.telemetry
        if telemetry is None:
            return await self._compact(reason)
        with telemetry.compaction(self.session_id, reason) as span:
            compacted = await self._compact(reason)
            span.set("xai.compaction.compacted", compacted)
        return compacted

    async def _compact(self, reason: CompactionReason) -> bool:
        config, context = self.config, self.context
        cut = split_point(context.history, config.keep_recent_tokens, context.calibration)
        if cut == 0:
            return False
        before = context.estimated_tokens()
        older = context.history[:cut]
        method: CompactionMethod = "summary"
        try:
            summary = await summarise(
                self.provider,
                older,
                context.summary,
                max_tokens=config.summary_max_tokens,
                input_tokens=config.summariser_input_tokens,
                calibration=context.calibration,
                on_usage=lambda usage: self.spending.spend(usage, "compaction"),
                telemetry=self.telemetry,
            )
        except Exception as exc:
            _log.warning("session.summary_failed", error=str(exc))
            method = "digest"
            summary = digest(
                older,
                context.summary,
                int(config.summary_max_tokens * context.calibration.chars_per_token),
            )
        after = context.tokens_after(summary, cut)
        record = CompactedRecord(
            summary=summary,
            removed=cut,
            method=method,
            before_tokens=before,
            after_tokens=after,
            reason=reason,
        )
        position = await self.recorder.commit(record)
        context.compacted(summary, cut)
        self.hub.announce(record, position)
        _log.info(
            "session.compacted",
            reason=reason,
            method=method,
            before_tokens=before,
            after_tokens=after,
            removed_messages=cut,
        )
        return True

    async def extract(self, turn: int, messages: list[Message], trace_context: Any = None) -> None:
        """Propose memory candidates from one turn's messages (in its own span, with telemetry:
        a sibling of the turn's, under ``trace_context``), and record the turn's mood delta
        (given by the same request when it can, else estimated offline)."""
        mood = self.mood
        if not self.config.extract_memory:
            if mood is not None:
                await mood.observe(turn, messages, None)
            return
        telemetry = self.telemetry
        if telemetry is None:
            given = await self._extract(turn, messages)
            if mood is not None:
                await mood.observe(turn, messages, given)
            return
        with telemetry.extraction(self.session_id, turn, trace_context) as span:
            before = len(self.candidates)
            given = await self._extract(turn, messages)
            span.set("xai.extraction.candidates", len(self.candidates) - before)
            if mood is not None:
                deltas = await mood.observe(turn, messages, given)
                user = [d for d in deltas if d.who == "user"]
                span.set("xai.mood.source", deltas[0].source if deltas else "none")
                span.set("xai.mood.user_valence_delta", user[0].valence if user else 0.0)

    async def _extract(self, turn: int, messages: list[Message]) -> tuple[MoodDelta, ...] | None:
        """Propose the turn's candidates; the mood deltas the reply gave (``None``: none)."""
        try:
            parsed = await extract_candidates(
                self.provider,
                messages,
                session_id=self.session_id,
                turn=turn,
                max_tokens=self.config.extraction_max_tokens,
                on_usage=lambda usage: self.spending.spend(usage, "extraction"),
                telemetry=self.telemetry,
            )
        except Exception as exc:
            _log.warning("session.extraction_failed", turn=turn, error=str(exc))
            self.hub.publish(SessionFailed(error=ErrorInfo.from_exception(exc), stage="extraction"))
            return None
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
            self.hub.publish(
                SessionFailed(error=ErrorInfo(type="RunError", message=message), stage="extraction")
            )
        if not candidates:
            return parsed.mood
        record = CandidatesRecord(candidates=candidates)
        position = await self.recorder.commit(record)
        self.candidates.propose(candidates)
        self.hub.announce(record, position)
        _log.info(
            "session.candidates_proposed", turn=turn, candidate_ids=[c.id for c in candidates]
        )
        return parsed.mood
