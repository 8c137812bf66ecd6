"""Where a Session's running Query sends its events: journal first, then the observers."""

from __future__ import annotations

from typing import TYPE_CHECKING

import msgspec

from xai.events import MessageCommitted, QueryEvent
from xai.session._journal import MessageRecord

if TYPE_CHECKING:
    from xai.session._session import Session

__all__ = ["Sink"]


class Sink:
    """Where the running Query sends its events: journal first, then the observers.

    A Query sends a ``MessageCommitted`` again when a cancel interrupted its first
    delivery, so each message is journaled and published once, by id.
    """

    __slots__ = ("journaled", "published", "session", "turn")

    def __init__(self, session: Session, turn: int) -> None:
        self.session = session
        self.turn = turn
        self.journaled: set[str] = set()
        self.published: set[str] = set()

    async def send(self, event: QueryEvent, /) -> None:
        session = self.session
        if type(event) is MessageCommitted:
            message = event.message
            if message.id in self.published:
                return
            if message.at is None:  # said now, by the Session's clock
                message = msgspec.structs.replace(message, at=session.clock())
                event = msgspec.structs.replace(event, message=message)
            if message.id not in self.journaled:
                session._recorder.write(MessageRecord(turn=self.turn, message=message))
                self.journaled.add(message.id)
                session._append(message)
                session._transcript.add(self.turn, message)
                session._turn_messages.append(message)
                await session._recorder.sync_commit()
            self.published.add(message.id)
        session._hub.publish(event)
