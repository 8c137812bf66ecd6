"""What a Session has cost: its running total, and what its current turn's children spent."""

from __future__ import annotations

from xai.messages import Usage
from xai.session._recorder import Recorder
from xai.session._records import UsageRecord

__all__ = ["Spending"]


class Spending:
    """The Session's usage. Its own requests outside a turn (summaries, extraction) are
    journaled as they are spent; a turn's usage (its children's included) is journaled
    with the turn's end."""

    __slots__ = ("children", "recorder", "total")

    def __init__(self, recorder: Recorder, total: Usage) -> None:
        self.recorder = recorder
        self.total = total
        self.children = Usage()
        """What the current turn's delegated children have spent so far."""

    def begin_turn(self) -> None:
        self.children = Usage()

    def add_child(self, usage: Usage) -> None:
        self.children = self.children + usage

    def turn_ended(self, usage: Usage) -> None:
        self.total = self.total + usage

    def spend(self, usage: Usage, purpose: str) -> None:
        """Usage of the Session's own requests (summaries, extraction), outside any turn."""
        if usage.requests:
            self.total = self.total + usage
            self.recorder.write(UsageRecord(usage=usage, purpose=purpose))
