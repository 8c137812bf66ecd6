"""Where a Session's running Query sends its events: journal first, then the observers."""

from __future__ import annotations

from collections.abc import Callable

import anyio
import msgspec

from xai.events import MessageCommitted, QueryEvent, ToolCallStarted
from xai.messages import Message, ToolMessage
from xai.session._announce import SessionHub
from xai.session._approvals import Approvals
from xai.session._context import Context
from xai.session._recorder import Recorder
from xai.session._records import MessageRecord
from xai.session._transcript import Transcript

__all__ = ["Sink"]


class Sink:
    """Where the running Query of turn ``turn`` sends its events: journal first, then the
    observers. A committed message joins the context, the transcript and ``added`` (what
    the turn added to the history) once it is on disk.

    A Query sends a ``MessageCommitted`` again when a cancel interrupted its first
    delivery, so each message is journaled and published once, by id. The event
    published is the record's (``SessionHub.announce``), in journal order: with a sync
    per record, concurrent tool results take turns from write to announcement.
    """

    __slots__ = (
        "added",
        "approvals",
        "clock",
        "context",
        "hub",
        "journaled",
        "lock",
        "published",
        "recorder",
        "transcript",
        "turn",
    )

    def __init__(
        self,
        turn: int,
        *,
        clock: Callable[[], float],
        recorder: Recorder,
        context: Context,
        transcript: Transcript,
        added: list[Message],
        hub: SessionHub,
        approvals: Approvals,
    ) -> None:
        self.turn = turn
        self.approvals = approvals
        self.clock = clock
        self.recorder = recorder
        self.context = context
        self.transcript = transcript
        self.added = added
        self.hub = hub
        self.journaled: dict[str, tuple[MessageRecord, int | None]] = {}
        self.published: set[str] = set()
        self.lock = anyio.Lock() if recorder.fsync == "commit" else None

    async def send(self, event: QueryEvent, /) -> None:
        if type(event) is ToolCallStarted:
            start = self.approvals.starting(event.call.id)
            if start is not None:  # an approved call: on disk before it runs
                self.recorder.write(start)
                await self.recorder.sync()
            self.hub.publish(event)
        elif type(event) is not MessageCommitted:
            self.hub.publish(event)
        elif self.lock is None:
            await self.commit(event)
        else:
            async with self.lock:
                await self.commit(event)

    async def commit(self, event: MessageCommitted) -> None:
        message = event.message
        if message.id in self.published:
            return
        if message.at is None:  # said now, by the Session's clock
            message = msgspec.structs.replace(message, at=self.clock())
        written = self.journaled.get(message.id)
        if written is None:
            record = MessageRecord(
                turn=self.turn, message=message, query_id=event.query_id, round=event.round
            )
            written = self.journaled[message.id] = (record, self.recorder.write(record))
            self.context.append(message)
            self.transcript.add(self.turn, message)
            self.added.append(message)
            await self.recorder.sync_commit()
            if isinstance(message, ToolMessage):
                self.approvals.answered(message.tool_call_id)
        self.published.add(message.id)
        self.hub.announce(*written)
