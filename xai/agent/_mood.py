"""The Agent's mood: the user's and its own, carried from Session to Session.

``AgentMood`` holds the mood as it was last set (``MoodState``: values and when) and the
mood ledger, ``mood/ledger.jsonl`` under the Agent's directory: one line per Session
digested (``MoodEntry``: the deltas it reported, the mood before and after). That line is
the one decision per Session; it is written (and synced) before the Session's finalising
hook returns, so a Session recorded closed was digested, and one a kill left open is
digested when it closes after the restart. A turn already in the ledger is never digested
twice: a Session the kill caught between its ledger line and its journal's close is
reopened, and when it closes again only the turns it had since are digested (a second
line for it, the only case there is one).

Nothing here runs while the Agent is idle: the ledger is read when the mood is first
needed, and decay toward the baseline is computed when the mood is read. It is handed its
directory, config, a persona getter, a clock, a publish callback and the scheduler's
``notify``, never the Agent.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import msgspec

from xai._files import read_jsonl, space_checked
from xai.agent._persona import Persona
from xai.events import MoodChanged
from xai.logs import get_logger
from xai.mood import (
    MOOD_LOW_EVENT,
    Mood,
    MoodConfig,
    MoodDelta,
    MoodSeed,
    MoodState,
    fold,
)
from xai.session import FinalizingContext

__all__ = ["AgentMood", "MoodEntry", "read_mood_ledger"]

_log = get_logger("xai.agent._agent")

LEDGER = Path("mood") / "ledger.jsonl"
_DAY = 86_400.0


class MoodEntry(msgspec.Struct, frozen=True, kw_only=True):
    """One line of the mood ledger: a Session's deltas, digested at ``at``."""

    session_id: str
    at: float
    before: MoodState
    after: MoodState
    deltas: tuple[MoodDelta, ...] = ()
    low_notified: bool = False
    """The user's low spell (``after.low_since``) has raised ``MOOD_LOW_EVENT`` already."""


_encode = msgspec.json.Encoder().encode
_decode = msgspec.json.Decoder(MoodEntry).decode


def read_mood_ledger(directory: Path, *, repair: bool = False) -> list[MoodEntry]:
    """Every digest in the mood ledger of the Agent at ``directory`` (oldest first)."""
    path = directory / LEDGER
    if not path.exists():
        return []
    return read_jsonl(path, _decode, repair=repair, what="mood_ledger")


class AgentMood:
    """The mood an Agent carries, its ledger, and the seed each Session starts from."""

    __slots__ = ("_digested", "_last", "_lock", "clock", "config", "directory", "notify", "persona", "publish")  # fmt: skip

    def __init__(
        self,
        directory: Path,
        config: MoodConfig,
        persona: Callable[[], Persona],
        clock: Callable[[], float],
        publish: Callable[[str | None, Any], None],
        notify: Callable[[str, Any], int],
    ) -> None:
        self.directory, self.config, self.persona, self.clock = directory, config, persona, clock
        self.publish, self.notify = publish, notify
        self._last: MoodEntry | None = None
        self._digested: dict[str, set[int]] | None = None  # from the ledger, when first needed
        self._lock: anyio.Lock | None = None

    def _load(self) -> dict[str, set[int]]:
        """Session id -> the turns of it already digested."""
        if self._digested is None:
            entries = read_mood_ledger(self.directory, repair=True)
            self._last = entries[-1] if entries else None
            digested: dict[str, set[int]] = {}
            for entry in entries:
                digested.setdefault(entry.session_id, set()).update(d.turn for d in entry.deltas)
            self._digested = digested
        return self._digested

    def closed(self, session_id: str) -> None:
        """``session_id`` closed for good (nothing of it is left to decide): it is never
        digested again, so its turns are not kept (a long-running host would hold them for
        every Session it ever closed; a restart reads them back from the ledger)."""
        if self._digested is not None:
            self._digested.pop(session_id, None)

    def stored(self) -> MoodState:
        """The mood as last set (not decayed): the user's neutral, the Agent's at baseline."""
        self._load()
        if self._last is not None:
            return self._last.after
        return MoodState(agent=self.persona().baseline(), at=self.clock())

    def state(self, now: float | None = None) -> MoodState:
        """The mood now (or at ``now``): decayed toward the baselines since it was set."""
        return fold(
            self.stored(),
            (),
            user_baseline=Mood(),
            agent_baseline=self.persona().baseline(),
            half_life=self.config.half_life,
            now=self.clock() if now is None else now,
        )

    def seed(self) -> MoodSeed | None:
        """What a new Session starts from (``None`` with mood off)."""
        if not self.config.enabled:
            return None
        persona = self.persona()
        return MoodSeed(
            state=self.state(),
            agent_baseline=persona.baseline(),
            half_life=self.config.half_life,
            styles=persona.mood_styles(),
            threshold=self.config.style_threshold,
        )

    async def digest(self, context: FinalizingContext) -> None:
        """Fold a finishing Session's deltas into the mood: one ledger line, synced, then
        ``MoodChanged`` (``scope="agent"``). A Session digested before does nothing."""
        if not context.mood or not self.config.enabled:
            return
        if self._lock is None:
            self._lock = anyio.Lock()
        async with self._lock:
            digested = self._digested  # the ledger is read once, in a worker thread
            if digested is None:
                digested = await anyio.to_thread.run_sync(self._load)
            done = digested.setdefault(context.session_id, set())
            deltas = tuple(d for d in context.mood if d.turn not in done)
            if not deltas:
                return
            now, config = self.clock(), self.config
            before = self.stored()
            after = fold(
                before,
                deltas,
                user_baseline=Mood(),
                agent_baseline=self.persona().baseline(),
                half_life=config.half_life,
                now=now,
                low_valence=config.low_valence,
            )
            spell = self._last is not None and self._last.low_notified
            same_spell = spell and after.low_since == before.low_since
            low = after.low_since is not None and now - after.low_since >= config.low_days * _DAY
            entry = MoodEntry(
                session_id=context.session_id,
                at=now,
                before=before,
                after=after,
                deltas=deltas,
                low_notified=low or same_spell,
            )
            await anyio.to_thread.run_sync(self._append, entry)
            self._last = entry
            done.update(d.turn for d in deltas)
        self.publish(
            context.session_id,
            MoodChanged(scope="agent", user=after.user, agent=after.agent, deltas=deltas),
        )
        _log.info(
            "agent.mood_digested",
            session_id=context.session_id,
            deltas=len(deltas),
            user_valence=round(after.user.valence, 3),
            agent_valence=round(after.agent.valence, 3),
        )
        if low and not same_spell:
            days = round((now - (after.low_since or now)) / _DAY, 1)
            self.notify(MOOD_LOW_EVENT, {"valence": after.user.valence, "days": days})

    def _append(self, entry: MoodEntry) -> None:
        path = self.directory / LEDGER
        path.parent.mkdir(parents=True, exist_ok=True)
        with space_checked(path):
            fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            try:
                os.write(fd, _encode(entry) + b"\n")
                os.fsync(fd)
            finally:
                os.close(fd)
