"""The mood view a host answers ``GetMood`` with: the mood now, and the digests that moved it."""

from __future__ import annotations

from typing import TYPE_CHECKING

import anyio
import msgspec

from xai.agent._mood import MoodEntry, read_mood_ledger
from xai.mood import Mood

if TYPE_CHECKING:
    from xai.agent._agent import Agent

__all__ = ["MoodView", "SessionMoodView", "mood_view"]


class SessionMoodView(msgspec.Struct, frozen=True, kw_only=True):
    """An open Session's copy of the mood, as its turns moved it (not digested yet)."""

    session_id: str
    user: Mood
    agent: Mood


class MoodView(msgspec.Struct, frozen=True, kw_only=True):
    """The user's and the Agent's mood now (decayed), the Agent's baseline, the last
    ``history`` digests (oldest first: each one Session's deltas and the mood after them)
    and the open Sessions' copies."""

    agent_id: str
    enabled: bool
    at: float
    user: Mood
    agent: Mood
    baseline: Mood
    half_life: float
    history: list[MoodEntry] = msgspec.field(default_factory=list)
    sessions: list[SessionMoodView] = msgspec.field(default_factory=list)


async def mood_view(agent: Agent, limit: int) -> MoodView:
    """``agent``'s mood and its last ``limit`` digests (the ledger read in a worker thread)."""
    entries = await anyio.to_thread.run_sync(read_mood_ledger, agent.directory)
    now = agent.mood
    sessions = [
        SessionMoodView(session_id=session_id, user=state.user, agent=state.agent)
        for session_id, session in agent.sessions.items()
        if (state := session.mood) is not None
    ]
    config = agent.config.mood
    return MoodView(
        agent_id=agent.id,
        enabled=config.enabled,
        at=now.at,
        user=now.user,
        agent=now.agent,
        baseline=agent.persona.baseline(),
        half_life=config.half_life,
        history=entries[-limit:] if limit > 0 else [],
        sessions=sessions,
    )
