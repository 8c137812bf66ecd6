"""What was said in a Session, as episodes: every input and the text of every answer.

The history a Session sends to the model loses its front to compaction; the
transcript keeps the whole conversation (rebuilt from the journal on reopen),
so the owner's memory gets every turn as evidence when the Session closes.
"""

from __future__ import annotations

from xai.messages import AssistantMessage, Episode, EpisodeOrigin, Message, UserMessage

__all__ = ["Transcript"]


class Transcript:
    """A Session's episodes in the order they were said (each message once, by id)."""

    __slots__ = ("_ids", "created_at", "episodes", "session_id")

    def __init__(
        self, session_id: str, created_at: float, episodes: list[Episode] | None = None
    ) -> None:
        self.session_id = session_id
        self.created_at = created_at
        """When a message carries no time (journals written before messages had one)."""
        self.episodes: list[Episode] = list(episodes) if episodes else []
        self._ids: set[str] = {e.id for e in self.episodes}

    def add(self, turn: int, message: Message) -> None:
        """Keep ``message`` if it says something: an input, or an answer with text."""
        if message.id in self._ids:
            return
        origin: EpisodeOrigin
        if isinstance(message, UserMessage):
            origin = message.origin
            speaker = message.name or origin
            text = message.content
        elif isinstance(message, AssistantMessage) and message.content.strip():
            origin = speaker = "assistant"
            text = message.content
        else:
            return
        self._ids.add(message.id)
        at = message.at if message.at is not None else self.created_at
        self.episodes.append(
            Episode(
                id=message.id,
                session_id=self.session_id,
                turn=turn,
                seq=len(self.episodes),
                origin=origin,
                speaker=speaker,
                text=text,
                at=at,
            )
        )
