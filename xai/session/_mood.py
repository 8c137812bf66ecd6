"""A Session's mood: the copy its owner injected, and what each turn changed in it.

``SessionMood`` is handed the seed (``SystemPrompt.mood``), the deltas its journal holds,
the context (whose style line it keeps), the recorder and the hub; it never sees the
Session. After each turn ``observe`` records the turn's deltas (``mood`` record), moves the
Session's copy, changes the style line only when the user's mood passes the seed's
threshold, and publishes ``MoodChanged``. Only user-origin messages move the user's mood:
a turn started by the Agent (a wake-up) or with no input changes nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

import msgspec

from xai.logs import get_logger
from xai.messages import Message, UserMessage
from xai.mood import MoodDelta, MoodSeed, MoodState, StyleKey, estimate_deltas, fold, style_key
from xai.session._announce import SessionHub
from xai.session._context import Context
from xai.session._recorder import Recorder
from xai.session._records import MoodRecord

__all__ = ["SessionMood", "user_said"]

_log = get_logger(__name__)


def user_said(messages: Iterable[Message]) -> list[tuple[str, str]]:
    """``(id, text)`` of the user-origin inputs among ``messages``: all that moves the user."""
    return [
        (m.id, m.content) for m in messages if isinstance(m, UserMessage) and m.origin == "user"
    ]


class SessionMood:
    """The Session's copy of the mood (seed + deltas) and the style line it calls for."""

    __slots__ = (
        "clock",
        "context",
        "current",
        "deltas",
        "hub",
        "key",
        "latest",
        "recorded",
        "recorder",
        "seed",
    )

    def __init__(
        self,
        seed: MoodSeed,
        deltas: Iterable[MoodDelta],
        recorded: Iterable[int],
        *,
        context: Context,
        recorder: Recorder,
        hub: SessionHub,
        clock: Callable[[], float],
    ) -> None:
        self.seed = seed
        self.deltas: list[MoodDelta] = list(deltas)
        self.recorded = frozenset(recorded)
        """Turns whose mood the journal had when the Session was made."""
        self.latest = 0
        """The last turn recorded since (turns are recorded in order, catch-up first)."""
        self.context, self.recorder, self.hub, self.clock = context, recorder, hub, clock
        self.current = self._fold(seed.state, self.deltas)
        """The seed with every delta applied (kept up to date: a turn folds only its own)."""
        self.key: StyleKey = "neutral"
        self.key = style_key(self.current.user, seed.threshold)
        self._restyle()

    def _fold(
        self, state: MoodState, deltas: Iterable[MoodDelta], now: float | None = None
    ) -> MoodState:
        seed = self.seed
        return fold(
            state,
            deltas,
            user_baseline=seed.user_baseline,
            agent_baseline=seed.agent_baseline,
            half_life=seed.half_life,
            now=now,
        )

    def state(self, now: float | None = None) -> MoodState:
        """The Session's mood: the seed with every delta applied (decayed to ``now``)."""
        return self._fold(self.current, (), now)

    def _restyle(self) -> bool:
        """Put the style line for ``key`` in the system prompt; True if it changed."""
        line = self.seed.styles.line(self.key)
        system = self.context.system
        if system.style == line:
            return False
        self.context.restyle(msgspec.structs.replace(system, style=line))
        return True

    async def catch_up(self, ended: Iterable[tuple[int, Sequence[Message]]]) -> int:
        """After a reopen: estimate (offline) each ended turn, given as (number, messages),
        that has no mood record (the process died before it was written). Returns how many."""
        missing = [(n, messages) for n, messages in ended if n not in self.recorded]
        for turn, messages in missing:
            await self.observe(turn, messages, None)
        return len(missing)

    async def observe(
        self, turn: int, messages: Sequence[Message], given: tuple[MoodDelta, ...] | None
    ) -> tuple[MoodDelta, ...]:
        """Record what turn ``turn`` (its ``messages``) changed: ``given`` deltas (from the
        extraction request), else the offline estimate. Once per turn."""
        if turn in self.recorded or turn <= self.latest:
            return ()
        said = user_said(messages)
        now = self.clock()
        if not said:
            deltas: tuple[MoodDelta, ...] = ()  # the origin rule: nobody's input moved it
        elif given is not None:
            deltas = given
        else:
            try:
                deltas = estimate_deltas(said, turn=turn, at=now)
            except Exception:  # the estimator's failure costs the delta, never the Session
                _log.warning("session.mood_estimate_failed", turn=turn, exc_info=True)
                deltas = ()
        if not deltas:
            await self.recorder.commit(MoodRecord(turn=turn))
            self.latest = turn
            return deltas
        self.deltas.extend(deltas)
        self.current = state = self._fold(self.current, deltas)
        key = style_key(state.user, self.seed.threshold, self.key)
        style: str | None = None
        if key != self.key:
            self.key = key
            if self._restyle():
                style = self.context.system.style
        # Journal-backed: ``MoodChanged`` is made from the record (replayed after a kill).
        record = MoodRecord(
            turn=turn, deltas=deltas, user=state.user, agent=state.agent, style=style
        )
        self.hub.announce(record, await self.recorder.commit(record))
        self.latest = turn
        _log.debug(
            "session.mood_changed",
            turn=turn,
            valence=round(state.user.valence, 3),
            source=deltas[0].source,
            style=key,
        )
        return deltas
