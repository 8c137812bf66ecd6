"""A Session's fixed costs (issue 35): what it does not do when nobody needs it."""

from __future__ import annotations

from typing import Any

import pytest

import xai.session._transcript as transcript_module
from xai.messages import Episode
from xai.session import FinalizingContext, Session, SessionConfig
from xai.testing import Reply, Script, ScriptedProvider

pytestmark = pytest.mark.anyio


@pytest.fixture
def made(monkeypatch: pytest.MonkeyPatch) -> list[Episode]:
    """Every ``Episode`` the transcript makes."""
    episodes: list[Episode] = []

    def counted(*args: Any, **kwargs: Any) -> Episode:
        episode = Episode(*args, **kwargs)
        episodes.append(episode)
        return episode

    monkeypatch.setattr(transcript_module, "Episode", counted)
    return episodes


async def test_a_session_without_memory_makes_no_episodes(made: list[Episode]) -> None:
    provider = ScriptedProvider(Script(default=Reply(text="hello")))
    async with Session(provider) as session:
        for text in ("one", "two", "three"):
            outcome = await session.send(text)
            assert outcome.text == "hello"
    assert made == []


async def test_a_finalising_hook_still_gets_every_episode_in_order(made: list[Episode]) -> None:
    provider = ScriptedProvider(Script(default=Reply(text="hello")))
    seen: list[FinalizingContext] = []
    async with Session(provider) as session:
        session.on_session_finalizing.append(seen.append)
        for text in ("one", "two"):
            await session.send(text)
    (context,) = seen
    said = [(e.turn, e.seq, e.speaker, e.text) for e in context.episodes]
    assert said == [
        (1, 0, "user", "one"),
        (1, 1, "assistant", "hello"),
        (2, 2, "user", "two"),
        (2, 3, "assistant", "hello"),
    ]
    assert len(made) == 4


def test_fsync_per_turn_stays_the_default() -> None:
    assert SessionConfig().fsync == "turn"
