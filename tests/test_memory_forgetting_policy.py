"""Forgetting by policy (issue 29): what went neither recalled (found by a search, put in a
prefix) nor reinforced for ``demote_unused_days`` is demoted (stable -> tentative), and for
``forget_unused_days`` forgotten; each step is a ledger decision saying why, made by
``maintain``. An injected clock; real chromadb and MiniLM."""

from __future__ import annotations

from pathlib import Path

import pytest

from xai.exceptions import ConfigurationError
from xai.memory import LongTermMemory, MemoryConfig, ScoredFact
from xai.messages import Episode, MemoryCandidate

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(120)]

DAY = 86_400.0
START = 1_780_000_000.0


class Clock:
    def __init__(self) -> None:
        self.now = START

    def __call__(self) -> float:
        return self.now

    def day(self, n: float) -> None:
        self.now = START + n * DAY


async def say(memory: LongTermMemory, session: str, text: str) -> None:
    """``text`` said by the user in ``session`` and proposed as a fact citing it."""
    episode = Episode(
        id=f"{session}-{text[:8]}", session_id=session, turn=0, seq=len(text), origin="user",
        speaker="user", text=text, at=memory.clock(),
    )  # fmt: skip
    await memory.record_episodes([episode])
    candidate = MemoryCandidate(
        id=f"c-{episode.id}", text=text, kind="fact", confidence=0.8, evidence=(episode.id,),
        session_id=session, created_at=episode.at,
    )  # fmt: skip
    await memory.adjudicate([candidate], session_id=session)


POLICY = MemoryConfig(
    use_judge=False, promote_after_sessions=2, demote_unused_days=30, forget_unused_days=60
)


async def test_unused_facts_are_demoted_then_forgotten_and_recall_keeps_them(
    tmp_path: Path,
) -> None:
    clock = Clock()
    async with LongTermMemory(tmp_path, config=POLICY, clock=clock) as memory:
        for session in ("s1", "s2"):  # said in two Sessions: stable (L2)
            await say(memory, session, "I play the cello.")
        await say(memory, "s3", "My car is a red Fiat.")
        await say(memory, "s3", "My dentist is Dr Silva.")
        by_text = {f.text: f for f in memory.facts()}
        cello, car, dentist = (
            by_text["I play the cello."],
            by_text["My car is a red Fiat."],
            by_text["My dentist is Dr Silva."],
        )
        assert cello.tier == "L2" and car.tier == dentist.tier == "L1"

        clock.day(20)  # the dentist is recalled: a search finds it
        hits = await memory.search("Who is my dentist?", 1)
        assert isinstance(hits[0], ScoredFact) and hits[0].fact.id == dentist.id
        clock.day(29)
        assert await memory.maintain() == []  # nothing idle long enough

    async with LongTermMemory(tmp_path, config=POLICY, clock=clock) as memory:  # recalls kept
        clock.day(31)
        (demoted,) = await memory.maintain()
        assert demoted.kind == "demote" and demoted.facts[0].id == cello.id
        assert demoted.facts[0].tier == "L1" and demoted.facts[0].status == "active"
        assert "not recalled or reinforced for 31 days" in demoted.reason

        clock.day(61)
        forgotten = await memory.maintain()
        assert {d.facts[0].id for d in forgotten} == {cello.id, car.id}  # the dentist stays
        assert all(d.kind == "forget" and "61 days" in d.reason for d in forgotten)
        assert memory.get(dentist.id).status == "active"  # type: ignore[union-attr]
        assert [f.id for f in memory.facts()] == [dentist.id]
        found = await memory.search("cello", 5)
        assert not any(isinstance(h, ScoredFact) and h.fact.id == cello.id for h in found)
    kinds = [(d.kind, d.facts[0].id) for d in memory.ledger() if d.kind in ("demote", "forget")]
    assert kinds[0] == ("demote", cello.id) and len(kinds) == 3


async def test_reinforcement_keeps_a_fact_and_the_policy_is_off_by_default(
    tmp_path: Path,
) -> None:
    clock = Clock()
    policy = MemoryConfig(use_judge=False, forget_unused_days=10)
    async with LongTermMemory(tmp_path, config=policy, clock=clock) as memory:
        await say(memory, "s1", "I play the cello.")
        clock.day(8)
        await say(memory, "s2", "I play the cello.")
        clock.day(15)  # 7 days since it was reinforced
        assert await memory.maintain() == []
        memory.config = MemoryConfig(use_judge=False)
        clock.day(400)
        assert [d.kind for d in await memory.maintain()] == ["decay"]  # only decay, as before


def test_the_forget_delay_must_be_longer_than_the_demote_delay() -> None:
    with pytest.raises(ConfigurationError, match="longer"):
        MemoryConfig(demote_unused_days=30, forget_unused_days=30)
    with pytest.raises(ConfigurationError, match="positive"):
        MemoryConfig(forget_unused_days=0)
