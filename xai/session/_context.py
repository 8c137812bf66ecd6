"""A Session's context: what the next request will see, and what it is estimated to cost.

The history (L0 after any compaction), the summary of what compaction removed,
the system prompt, and the calibration that turns characters into the model's
tokens. The history's size is kept up to date on every change, so estimating
the next request is O(1).
"""

from __future__ import annotations

from collections.abc import Iterable

from xai.messages import AssistantMessage, Message, SystemMessage
from xai.session._compaction import Calibration, message_chars
from xai.session._history import place
from xai.session._prompt import SystemPrompt

__all__ = ["Context"]


class Context:
    """History, summary, system prompt and calibration of one Session."""

    __slots__ = ("_chars", "_system_cache", "calibration", "history", "summary", "system")

    def __init__(self, system: SystemPrompt, history: Iterable[Message] = (), summary: str = ""):
        self.system = system
        self.history: list[Message] = list(history)
        self.summary = summary
        self.calibration = Calibration()
        self._chars = sum(map(message_chars, self.history))
        self._system_cache: tuple[str, SystemMessage | None] | None = None

    def append(self, message: Message) -> None:
        self.history.append(message)
        self._chars += message_chars(message)

    def place(self, message: Message) -> None:
        """Add a tool result where replaying the journal puts it, too (see ``place``)."""
        place(self.history, message)
        self._chars += message_chars(message)

    def compacted(self, summary: str, removed: int) -> None:
        """The first ``removed`` messages are now told by ``summary``."""
        self.summary = summary
        del self.history[:removed]
        self._chars = sum(map(message_chars, self.history))

    def tokens_after(self, summary: str, removed: int) -> int:
        """Estimated prompt tokens of the next request once ``compacted(summary, removed)``."""
        text = self.system.render(summary)
        chars = sum(map(message_chars, self.history[removed:]))
        if text:
            chars += message_chars(SystemMessage(content=text))
        return self.calibration.tokens(chars)

    def system_message(self) -> SystemMessage | None:
        """The system message of the next request (persona, instructions, memory, summary)."""
        cache = self._system_cache
        if cache is None or cache[0] != self.summary:
            text = self.system.render(self.summary)
            cache = self._system_cache = (
                self.summary,
                SystemMessage(content=text) if text else None,
            )
        return cache[1]

    def restyle(self, system: SystemPrompt) -> None:
        """A new system prompt (the mood's style line changed): rendered again when asked."""
        self.system = system
        self._system_cache = None

    def request(self) -> tuple[list[Message], int]:
        """The next request's messages and their size in characters."""
        system = self.system_message()
        if system is None:
            return list(self.history), self._chars
        return [system, *self.history], self._chars + message_chars(system)

    def estimated_tokens(self) -> int:
        """Estimated prompt tokens of the next request."""
        return self.calibration.tokens(self.request_chars())

    def request_chars(self) -> int:
        system = self.system_message()
        return self._chars + (message_chars(system) if system is not None else 0)

    def calibrate(self, prompt_tokens: int, chars: int) -> None:
        self.calibration.update(prompt_tokens, chars)

    @property
    def interrupted_turn(self) -> bool:
        """True if the history ends in a turn the model did not finish (e.g. after a crash)."""
        history = self.history
        return bool(history) and not (
            isinstance(history[-1], AssistantMessage)
            and not history[-1].tool_calls
            and not history[-1].interrupted
        )
