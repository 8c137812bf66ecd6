"""Mood carried across Sessions (issue 30): one test per step of the protocol, on both backends.

Injection (a Session starts from a copy of the Agent's mood), the per-turn delta (journaled
with its turn, from the extraction request when the model gives one: no extra request),
the final digest (one ledger line per Session), decay (computed when read), and the origin
rule (only the user's own messages move the user's mood). The kill -9 step is in
tests/test_kill_campaign.py (mood counts) and below (a digest is never applied twice).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.session_helpers import drain, extraction_responder, is_side_request, last_content
from xai.agent import Agent, AgentConfig, FakeClock, OnEvent, Persona, Wakeup
from xai.agent._mood import read_mood_ledger
from xai.events import MoodChanged, WakeupFired
from xai.memory import JUDGE_MARKER
from xai.messages import Origin
from xai.mood import (
    MOOD_LOW_EVENT,
    Mood,
    MoodConfig,
    MoodDelta,
    MoodState,
    decayed,
    direction,
    estimate_deltas,
    fold,
)
from xai.providers import OpenAIProvider
from xai.session import EXTRACTION_MARKER, JournalView, Session, SessionConfig
from xai.testing import OpenAIWireServer, Reply

pytestmark = pytest.mark.anyio

SAD = "This is awful, everything I try fails and I feel terrible about it."
HAPPY = "Wonderful, thank you so much, that fixed it and I love it!"


def echo(body: Mapping[str, Any]) -> Reply | None:
    if is_side_request(body) or last_content(body).startswith(JUDGE_MARKER):
        return None
    return Reply(text="I hear you.")


def judge_adds(body: Mapping[str, Any]) -> Reply | None:
    if last_content(body).startswith(JUDGE_MARKER):
        return Reply(text='{"decision": "add", "reason": "new"}')
    return None


@pytest.fixture
def scripted(openai_server: OpenAIWireServer) -> OpenAIWireServer:
    openai_server.script.add_responder(extraction_responder)  # candidates, no mood: lexicon
    openai_server.script.add_responder(judge_adds)
    openai_server.script.add_responder(echo)
    return openai_server


async def say(session: Session, text: str, origin: Origin = "user") -> None:
    """Send ``text`` and wait until the turn and what follows it (extraction, mood) are over."""
    await session.send(text, origin=origin)
    with anyio.fail_after(30):  # a guard against a hang, not a wait
        while not session.idle:
            await anyio.wait_all_tasks_blocked()


def moods(events: list[Any]) -> list[MoodChanged]:
    return [e.event for e in events if isinstance(e.event, MoodChanged)]


async def test_a_session_starts_from_a_copy_of_the_agents_mood(
    tmp_path: Path, scripted: OpenAIWireServer, provider: OpenAIProvider
) -> None:
    clock = FakeClock()
    persona = Persona(name="Fern", temperament="cheerful")
    async with Agent(tmp_path, provider, persona=persona, clock=clock) as agent:
        assert agent.mood.agent.valence == pytest.approx(0.3)  # the temperament's baseline
        session = await agent.open_session("chat")
        seed = session.system.mood
        assert seed is not None and seed.state == agent.mood  # a copy, at creation
        assert session.mood == agent.mood
        await say(session, SAD)
        # The Session's copy moved; the Agent's mood waits for the digest.
        assert session.mood is not None and session.mood.user.valence < 0
        assert agent.mood.user.valence == 0.0
        # The copy is in the journal's header: a reopen starts from the same seed.
        view = JournalView.read(session.directory / "journal.jsonl")  # type: ignore[operator]
        assert view.system.mood == seed


async def test_each_turn_reports_a_delta_journaled_with_its_turn(
    tmp_path: Path, scripted: OpenAIWireServer, provider: OpenAIProvider
) -> None:
    async with Agent(tmp_path, provider, clock=FakeClock()) as agent:
        session = await agent.open_session("chat")
        events = agent.events()
        await say(session, SAD)
        await say(
            session, "Let me check the logs."
        )  # neutral: no delta, still a record for the turn
        await say(session, HAPPY)
        changed = moods(drain(events))
        assert [c.turn for c in changed] == [1, 3]
        (user1,) = [d for d in changed[0].deltas if d.who == "user"]
        assert user1.valence < 0 and user1.turn == 1 and user1.source == "lexicon"
        assert user1.evidence == (session.history[0].id,)
        (user3,) = [d for d in changed[1].deltas if d.who == "user"]
        assert user3.valence > 0
        view = JournalView.read(session.directory / "journal.jsonl")  # type: ignore[operator]
        assert view.mood_turns == {1, 2, 3}
        assert [d.turn for d in view.mood] == [1, 1, 3, 3]
        # No extra request: one answer and one extraction per turn.
        requests = scripted.chat_requests()
        extraction = [r for r in requests if last_content(r.body).startswith(EXTRACTION_MARKER)]
        assert len(extraction) == 3 and len(requests) == 6


async def test_the_model_gives_the_delta_in_the_extraction_request(
    tmp_path: Path, openai_server: OpenAIWireServer, provider: OpenAIProvider
) -> None:
    def extract_with_mood(body: Mapping[str, Any]) -> Reply | None:
        if not last_content(body).startswith(EXTRACTION_MARKER):
            return None
        mood = {
            "user": {"valence": 0.4, "arousal": 0.2, "emotions": {"relief": 0.7}, "confidence": 1},
            "assistant": {"valence": 0.1, "arousal": 0, "confidence": 0.5},
        }
        return Reply(text=json.dumps({"candidates": [], "mood": mood}))

    openai_server.script.add_responder(extract_with_mood)
    openai_server.script.add_responder(echo)
    config = SessionConfig(extract_memory=True)
    async with Agent(
        tmp_path, provider, clock=FakeClock(), config=AgentConfig(session=config)
    ) as agent:
        session = await agent.open_session("chat")
        await say(session, SAD)  # the lexicon would say worse: the model's word wins
        state = session.mood
        assert state is not None
        assert state.user.valence == pytest.approx(0.4)
        assert state.user.emotions == {"relief": pytest.approx(0.7)}
        assert state.agent.valence == pytest.approx(0.05)
        assert len(openai_server.chat_requests()) == 2  # the answer and the extraction


async def test_a_failed_or_moodless_extraction_falls_back_to_the_lexicon(
    tmp_path: Path, openai_server: OpenAIWireServer, provider: OpenAIProvider
) -> None:
    def broken(body: Mapping[str, Any]) -> Reply | None:
        if last_content(body).startswith(EXTRACTION_MARKER):
            return Reply(text="I am not JSON")
        return None

    openai_server.script.add_responder(broken)
    openai_server.script.add_responder(echo)
    async with Agent(tmp_path, provider, clock=FakeClock()) as agent:
        session = await agent.open_session("chat")
        await say(session, HAPPY)
        assert session.mood is not None and session.mood.user.valence > 0


async def test_the_final_digest_is_one_ledger_decision_per_session(
    tmp_path: Path, scripted: OpenAIWireServer, provider: OpenAIProvider
) -> None:
    clock = FakeClock()
    async with Agent(tmp_path, provider, clock=clock) as agent:
        events = agent.events()
        one = await agent.open_session("a")
        await say(one, SAD)
        await say(one, "I really hate this, it is so frustrating.")
        await one.close()
        assert agent.mood.user.valence < 0
        two = await agent.open_session("b")
        assert two.system.mood is not None
        assert two.system.mood.state.user == agent.mood.user  # carried over: no cold start
        await say(two, HAPPY)
        await two.close()
        digests = [m for m in moods(drain(events)) if m.scope == "agent"]
        assert len(digests) == 2
    ledger = read_mood_ledger(tmp_path)
    assert [e.session_id for e in ledger] == [one.id, two.id]
    assert len(ledger[0].deltas) == 4 and ledger[1].before == ledger[0].after
    # The next start reads the mood back from the ledger.
    async with Agent(tmp_path, provider, clock=clock) as again:
        assert again.mood == ledger[-1].after


async def test_a_session_closed_again_after_a_restart_is_not_digested_twice(
    tmp_path: Path, scripted: OpenAIWireServer, provider: OpenAIProvider
) -> None:
    clock = FakeClock()
    async with Agent(tmp_path, provider, clock=clock) as agent:
        session = await agent.open_session("a")
        await say(session, SAD)
        await agent.suspend()  # its journal stays open: no digest yet
    assert read_mood_ledger(tmp_path) == []
    async with Agent(tmp_path, provider, clock=clock) as agent:
        (reopened,) = agent.sessions.values()
        assert reopened.mood is not None and reopened.mood.user.valence < 0  # from its journal
        await reopened.close()
        after = agent.mood
    # As if the kill fell between the ledger line and the journal's `closed`: the journal
    # is cut back before its close, so the restart closes the Session (hook) once more.
    unclose(tmp_path / "sessions" / session.id)
    async with Agent(tmp_path, provider, clock=clock) as agent:
        for open_one in list(agent.sessions.values()):
            await open_one.close()
        assert agent.mood == after
    assert [e.session_id for e in read_mood_ledger(tmp_path)] == [session.id]
    # Reopened so, it may go on: only the turns it has since are digested then.
    unclose(tmp_path / "sessions" / session.id)
    async with Agent(tmp_path, provider, clock=clock) as agent:
        (reopened,) = agent.sessions.values()
        await say(reopened, HAPPY)
        await reopened.close()
    first, second = read_mood_ledger(tmp_path)
    assert first.session_id == second.session_id == session.id
    assert {d.turn for d in second.deltas} == {2} and second.before == first.after


def unclose(directory: Path) -> None:
    """Cut a Session's journal back to before its ``closed`` record."""
    journal = directory / "journal.jsonl"
    lines = journal.read_bytes().splitlines(keepends=True)
    journal.write_bytes(b"".join(line for line in lines if b'"kind":"closed"' not in line))
    (directory / "totals.json").unlink(missing_ok=True)
    (directory.parent / "closed.list").unlink(missing_ok=True)


async def test_decay_is_computed_when_read(
    tmp_path: Path, scripted: OpenAIWireServer, provider: OpenAIProvider
) -> None:
    clock = FakeClock()
    half_life = 3_600.0
    config = AgentConfig(mood=MoodConfig(half_life=half_life))
    persona = Persona(temperament="calm")  # baseline valence 0.2, arousal -0.3
    async with Agent(tmp_path, provider, clock=clock, config=config, persona=persona) as agent:
        session = await agent.open_session("a")
        await say(session, SAD)
        await session.close()
        now = agent.mood
        await clock.advance(half_life)
        later = agent.mood
        assert later.user.valence == pytest.approx(now.user.valence / 2)
        assert later.agent.valence - 0.2 == pytest.approx((now.agent.valence - 0.2) / 2)
        await clock.advance(50 * half_life)
        assert agent.mood.agent.valence == pytest.approx(0.2, abs=1e-6)
    # Nothing was written while time passed: decay is arithmetic on read.
    assert len(read_mood_ledger(tmp_path)) == 1


@pytest.mark.backend_agnostic
def test_decay_and_fold_arithmetic() -> None:
    base = Mood(valence=0.2)
    mood = Mood(valence=-0.6, arousal=0.4, emotions={"anger": 0.8})
    half = decayed(mood, base, 10.0, 10.0)
    assert half.valence == pytest.approx(-0.2) and half.arousal == pytest.approx(0.2)
    assert half.emotions == {"anger": pytest.approx(0.4)}
    delta = MoodDelta(who="user", valence=2.0, confidence=1.0, at=5.0)
    state = fold(
        MoodState(at=0.0), [delta], user_baseline=Mood(), agent_baseline=Mood(), half_life=10
    )
    assert state.user.valence == 1.0  # clamped to the range


async def test_only_user_origin_messages_move_the_users_mood(
    tmp_path: Path, scripted: OpenAIWireServer, provider: OpenAIProvider
) -> None:
    async with Agent(tmp_path, provider, clock=FakeClock()) as agent:
        session = await agent.open_session("wake", origin="agent")
        events = agent.events()
        await say(session, "The user is miserable and hates everything, awful!", origin="agent")
        assert moods(drain(events)) == []
        assert session.mood is not None and session.mood.user == Mood()
        await say(session, "I am miserable today.")  # the user's own words
        assert session.mood.user.valence < 0
        (changed,) = moods(drain(events))
        assert {d.evidence for d in changed.deltas} == {(session.history[2].id,)}
        await session.close()
    (entry,) = read_mood_ledger(tmp_path)
    assert all(d.turn == 2 for d in entry.deltas)


async def test_a_session_without_an_agent_keeps_no_mood(
    scripted: OpenAIWireServer, provider: OpenAIProvider
) -> None:
    async with Session(provider) as session:
        await say(session, SAD)
        assert session.mood is None
        assert session.system_message() is None


async def test_mood_off_injects_nothing_and_writes_no_ledger(
    tmp_path: Path, scripted: OpenAIWireServer, provider: OpenAIProvider
) -> None:
    config = AgentConfig(mood=MoodConfig(enabled=False))
    async with Agent(tmp_path, provider, config=config) as agent:
        session = await agent.open_session("a")
        assert session.system.mood is None
        await say(session, SAD)
        assert session.mood is None
        await session.close()
    assert not (tmp_path / "mood").exists()


async def test_the_style_line_changes_only_past_the_threshold(
    tmp_path: Path, scripted: OpenAIWireServer, provider: OpenAIProvider
) -> None:
    async with Agent(tmp_path, provider, clock=FakeClock()) as agent:
        session = await agent.open_session("a")
        plain = session.system_message()
        assert plain is not None and "seems" not in plain.content
        await say(session, "What time is it in Lisbon?")  # too small to move anything
        assert session.system_message() is plain  # the same prefix: cache-friendly
        await say(session, SAD)
        await say(session, "I hate this, it is terrible and awful.")
        low = session.system_message()
        assert low is not None and "The user seems" in low.content
        prompt = [r for r in scripted.chat_requests() if not is_side_request(r.body)][-1].body
        assert "The user seems" not in prompt["messages"][0]["content"]  # asked before it moved
        await say(session, "meh, slightly better I suppose")
        assert session.system_message() == low  # inside the hysteresis: unchanged
        await session.close()


async def test_mood_low_for_days_raises_the_wakeup_event(
    tmp_path: Path, scripted: OpenAIWireServer, provider: OpenAIProvider
) -> None:
    clock = FakeClock()
    config = AgentConfig(mood=MoodConfig(low_days=2, half_life=30 * 86_400))
    async with Agent(tmp_path, provider, clock=clock, config=config) as agent:
        wakeup = Wakeup(id="check-in", trigger=OnEvent(name=MOOD_LOW_EVENT), text="How are you?")
        agent.scheduler.add(wakeup)
        events = agent.events()
        for day in range(4):
            session = await agent.open_session(f"day {day}")
            await say(session, SAD)
            await say(session, "I hate this, it is terrible and awful.")
            await session.close()
            await clock.advance(86_400)
        await clock.settle()
        fired = [e.event for e in drain(events) if isinstance(e.event, WakeupFired)]
    ledger = read_mood_ledger(tmp_path)
    assert [e.low_notified for e in ledger] == [False, False, True, True]  # once per spell
    assert len(fired) == 1 and fired[0].wakeup_id == "check-in"


@pytest.mark.backend_agnostic
def test_the_offline_estimators_direction_on_the_reported_half() -> None:
    """tests/data/mood_exchanges.jsonl: the dead zone was chosen on the ``tune`` half only
    (bench/mood.py); on the ``report`` half the direction must be right 85 % of the time."""
    path = Path(__file__).parent / "data" / "mood_exchanges.jsonl"
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    assert len(rows) >= 60 and Counter(r["label"] for r in rows).keys() == {
        "better",
        "worse",
        "same",
    }
    report = [r for r in rows if r["split"] == "report"]
    assert len(report) * 2 == len(rows)
    right = sum(
        direction(estimate_deltas([("u", r["user"])], turn=1, at=0.0)) == r["label"] for r in report
    )
    assert right / len(report) >= 0.85, f"{right} of {len(report)}"


@pytest.mark.backend_agnostic
def test_the_query_knows_nothing_of_mood() -> None:
    """The hardest rule (seed 003, 8.4): no Agent feature reaches the Query layer."""
    import xai.query

    source = Path(xai.query.__file__).read_text()
    assert "mood" not in source.lower()


async def test_a_turn_whose_mood_record_a_kill_lost_is_estimated_on_reopen(
    tmp_path: Path, scripted: OpenAIWireServer, provider: OpenAIProvider
) -> None:
    """The kill fell between the turn's end and its ``mood`` record: the reopened Session
    estimates that turn (offline), once; the turns that have their record are left alone."""
    clock = FakeClock()
    async with Agent(tmp_path, provider, clock=clock) as agent:
        session = await agent.open_session("a")
        await say(session, HAPPY)
        await say(session, SAD)
        await agent.suspend()
    journal = tmp_path / "sessions" / session.id / "journal.jsonl"
    lines = journal.read_bytes().splitlines(keepends=True)
    last_mood = max(i for i, line in enumerate(lines) if b'"kind":"mood"' in line)
    journal.write_bytes(b"".join(lines[:last_mood] + lines[last_mood + 1 :]))
    assert JournalView.read(journal).mood_turns == {1}
    async with Agent(tmp_path, provider, clock=clock) as agent:
        (reopened,) = agent.sessions.values()
        view = JournalView.read(journal)
        assert view.mood_turns == {1, 2}
        assert [(d.turn, d.who) for d in view.mood] == [
            (1, "user"),
            (1, "agent"),
            (2, "user"),
            (2, "agent"),
        ]
        assert reopened.mood is not None and reopened.mood.user.valence < 0.3
        await reopened.close()
    (entry,) = read_mood_ledger(tmp_path)
    assert sorted({d.turn for d in entry.deltas}) == [1, 2]
