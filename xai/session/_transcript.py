"""What was said in a Session, as episodes: every input and the text of every answer.

The history a Session sends to the model loses its front to compaction; the
transcript keeps the whole conversation (rebuilt from the journal on reopen),
so the owner's memory gets every turn as evidence when the Session closes.
"""

from __future__ import annotations

from xai.messages import AssistantMessage, Episode, EpisodeOrigin, Message, UserMessage

__all__ = ["Transcript"]


class Transcript:
    """A Session's episodes in the order they were said (each message once, by id).

    ``add`` only keeps the message; its ``Episode`` is made when ``episodes`` is read (by
    the finalising hooks of an owner with memory), so a Session nobody asks for episodes
    does no episode work."""

    __slots__ = ("_episodes", "_ids", "_said", "created_at", "session_id")

    def __init__(
        self, session_id: str, created_at: float, episodes: list[Episode] | None = None
    ) -> None:
        self.session_id = session_id
        self.created_at = created_at
        """When a message carries no time (journals written before messages had one)."""
        self._episodes: list[Episode] = list(episodes) if episodes else []
        self._ids: set[str] = {e.id for e in self._episodes}
        self._said: list[tuple[int, Message]] = []
        """Messages added since ``episodes`` was last read, not yet made episodes."""

    def add(self, turn: int, message: Message) -> None:
        """Keep ``message`` if it says something: an input, or an answer with text."""
        if isinstance(message, UserMessage) or (
            isinstance(message, AssistantMessage) and message.content.strip()
        ):
            self._said.append((turn, message))

    @property
    def episodes(self) -> list[Episode]:
        """Every episode so far, in the order said."""
        if self._said:
            said, self._said = self._said, []
            for turn, message in said:
                self._make(turn, message)
        return self._episodes

    def _make(self, turn: int, message: Message) -> None:
        if message.id in self._ids:
            return
        origin: EpisodeOrigin
        if isinstance(message, UserMessage):
            origin = message.origin
            speaker = message.name or origin
        else:
            origin = speaker = "assistant"
        self._ids.add(message.id)
        at = message.at if message.at is not None else self.created_at
        self._episodes.append(
            Episode(
                id=message.id,
                session_id=self.session_id,
                turn=turn,
                seq=len(self._episodes),
                origin=origin,
                speaker=speaker,
                text=message.content,
                at=at,
            )
        )
