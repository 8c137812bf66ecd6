"""Proactive wake-ups on a fake clock: every trigger kind, the policies, restarts."""

from __future__ import annotations

import random
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.session_helpers import extraction_responder, is_side_request, last_content
from xai.agent import (
    Agent,
    AgentConfig,
    At,
    Cron,
    Every,
    FakeClock,
    Idle,
    OnEvent,
    QuietHours,
    Wakeup,
)
from xai.events import AgentEvent, SessionEnded, WakeupFired, WakeupSkipped
from xai.exceptions import ConfigurationError, WakeupNotFoundError
from xai.memory import JUDGE_MARKER, LongTermMemory
from xai.messages import UserMessage
from xai.session import Subscription
from xai.testing import Reply, ScriptedProvider

pytestmark = pytest.mark.anyio

START = 1_800_000_000.0  # 2027-01-15 08:00:00 UTC
HOUR = 3600.0


def echo(body: Mapping[str, Any]) -> Reply | None:
    if is_side_request(body) or last_content(body).startswith(JUDGE_MARKER):
        return None
    return Reply(text=f"reply to: {last_content(body)}")


def provider() -> ScriptedProvider:
    scripted = ScriptedProvider()
    scripted.script.add_responder(extraction_responder)
    scripted.script.add_responder(echo)
    return scripted


async def expect(events: Subscription[AgentEvent], kind: type, **match: Any) -> Any:
    """The next event of ``kind`` whose fields match (30 s at most, real time)."""
    with anyio.fail_after(30):
        async for event in events:
            body = event.event
            if isinstance(body, kind) and all(getattr(body, k) == v for k, v in match.items()):
                return body
    raise AssertionError("the event stream ended")


def agent_at(tmp_path: Path, clock: FakeClock, scripted: ScriptedProvider | None = None) -> Agent:
    return Agent(tmp_path, scripted or provider(), clock=clock)


async def test_every_interval(tmp_path: Path) -> None:
    clock = FakeClock(START)
    async with agent_at(tmp_path, clock) as agent:
        events = agent.events()
        agent.scheduler.add(
            Wakeup(id="hourly", trigger=Every(seconds=HOUR), text="Hourly check-in")
        )
        await clock.advance(HOUR - 1)
        assert events.get_nowait() is None  # nothing yet
        await clock.advance(1)
        fired = await expect(events, WakeupFired)
        assert fired.wakeup_id == "hourly" and fired.input == "Hourly check-in"
        await expect(events, SessionEnded)
        await clock.advance(HOUR)
        await expect(events, WakeupFired, wakeup_id="hourly")
        (state,) = agent.scheduler.list()
        assert state.runs == 2 and state.next_at == START + 3 * HOUR


async def test_at_a_time_fires_once(tmp_path: Path) -> None:
    clock = FakeClock(START)
    async with agent_at(tmp_path, clock) as agent:
        events = agent.events()
        agent.scheduler.add(Wakeup(id="once", trigger=At(time=START + 90), text="One time"))
        await clock.advance(90)
        await expect(events, WakeupFired, wakeup_id="once")
        await expect(events, SessionEnded)
        await clock.advance(10 * HOUR)
        (state,) = agent.scheduler.list()
        assert state.finished and state.runs == 1


async def test_cron_in_a_time_zone(tmp_path: Path) -> None:
    clock = FakeClock(START - 60)  # 07:59 UTC = 08:59 in Paris (winter)
    async with agent_at(tmp_path, clock) as agent:
        events = agent.events()
        agent.scheduler.add(
            Wakeup(
                id="morning",
                trigger=Cron(expression="0 9 * * *", timezone="Europe/Paris"),
                text="Good morning",
            )
        )
        await clock.advance(60)
        fired = await expect(events, WakeupFired)
        assert fired.wakeup_id == "morning" and fired.reason == "scheduled time"
        (state,) = agent.scheduler.list()
        assert state.next_at == START + 24 * HOUR
    with pytest.raises(ConfigurationError, match="not a cron expression"):
        Wakeup(id="bad", trigger=Cron(expression="every day at nine"), text="x")


async def test_idle_fires_once_per_idle_spell(tmp_path: Path) -> None:
    clock = FakeClock(START)
    async with agent_at(tmp_path, clock) as agent:
        events = agent.events()
        agent.scheduler.add(
            Wakeup(id="bored", trigger=Idle(seconds=600), text="Anything I can do?")
        )
        session = await agent.open_session("user chat")  # not idle any more
        await clock.advance(1200)
        assert not [e for e in _drain(events) if isinstance(e.event, WakeupFired)]
        await session.close()  # idle from now
        await clock.advance(599)
        assert not [e for e in _drain(events) if isinstance(e.event, WakeupFired)]
        await clock.advance(1)
        await expect(events, WakeupFired, wakeup_id="bored")
        await expect(events, SessionEnded)  # the wake-up's own Session closed ...
        await clock.advance(3 * 600)
        assert not [
            e for e in _drain(events) if isinstance(e.event, WakeupFired)
        ]  # ... no new spell


async def test_named_event_with_a_builder_that_reads_memory(tmp_path: Path) -> None:
    clock = FakeClock(START)
    seen: list[Any] = []

    def greet(memory: LongTermMemory, payload: Any) -> str:
        seen.append(payload)
        return f"The user came home ({payload['door']}); I know {len(memory.facts())} facts."

    async with agent_at(tmp_path, clock) as agent:
        events = agent.events()
        agent.scheduler.register_builder("greet", greet)
        agent.scheduler.add(Wakeup(id="home", trigger=OnEvent(name="door_opened"), builder="greet"))
        assert agent.notify("door_opened", {"door": "front"}) == 1
        assert agent.notify("unrelated") == 0
        fired = await expect(events, WakeupFired, wakeup_id="home")
    assert fired.input == "The user came home (front); I know 0 facts."
    assert seen == [{"door": "front"}]


async def test_overlap_skip_and_queue(tmp_path: Path) -> None:
    clock = FakeClock(START)
    async with agent_at(tmp_path, clock) as agent:
        events = agent.events()
        agent.scheduler.add(
            Wakeup(id="skip", trigger=Every(seconds=60), text="ping", close_after=False)
        )
        await clock.advance(60)
        fired = await expect(events, WakeupFired, wakeup_id="skip")
        await clock.advance(60)  # the first run's Session is still open
        skipped = await expect(events, WakeupSkipped, wakeup_id="skip")
        assert skipped.reason == "the previous run is still going"
        agent.scheduler.remove("skip")
        for session in agent.sessions.values():
            await session.close()

        agent.scheduler.add(
            Wakeup(
                id="queue",
                trigger=Every(seconds=60),
                text="pong",
                overlap="queue",
                close_after=False,
            )
        )
        await clock.advance(60)
        await expect(events, WakeupFired, wakeup_id="queue")
        await clock.advance(60)  # queued behind the open one
        assert not [e for e in _drain(events) if isinstance(e.event, WakeupFired)]
        (first,) = agent.sessions.values()
        await first.close()
        await expect(
            events, WakeupFired, wakeup_id="queue", reason="queued behind the previous run"
        )
    assert fired.input == "ping"


async def test_quiet_hours_max_runs_and_jitter(tmp_path: Path) -> None:
    clock = FakeClock(START)  # 08:00 UTC
    async with agent_at(tmp_path, clock) as agent:
        agent.scheduler._rng = random.Random(7)
        events = agent.events()
        quiet = QuietHours(start="08:30", end="07:00", timezone="UTC")  # wraps midnight
        agent.scheduler.add(
            Wakeup(id="q", trigger=Every(seconds=HOUR), text="hi", quiet_hours=quiet)
        )
        await clock.advance(HOUR)  # 09:00: quiet
        assert (await expect(events, WakeupSkipped, wakeup_id="q")).reason == "quiet hours"
        agent.scheduler.remove("q")

        agent.scheduler.add(Wakeup(id="twice", trigger=Every(seconds=60), text="x", max_runs=2))
        for _ in range(2):
            await clock.advance(60)
            await expect(events, WakeupFired, wakeup_id="twice")
            await expect(events, SessionEnded)  # done before the next firing is due
        await clock.advance(600)
        state = next(s for s in agent.scheduler.list() if s.wakeup.id == "twice")
        assert state.runs == 2 and state.finished

        now = clock.now()
        state = agent.scheduler.add(
            Wakeup(id="jittery", trigger=Every(seconds=100), text="j", jitter=30)
        )
        assert state.next_at is not None and now + 100 <= state.next_at <= now + 130


async def test_builder_failure_is_reported_and_the_scheduler_goes_on(tmp_path: Path) -> None:
    clock = FakeClock(START)
    calls = 0

    def flaky(memory: LongTermMemory, payload: Any) -> str:
        nonlocal calls
        calls += 1
        if calls == 1:
            raise RuntimeError("weather service down")
        return "Second time lucky"

    async with agent_at(tmp_path, clock) as agent:
        events = agent.events()
        agent.scheduler.register_builder("flaky", flaky)
        agent.scheduler.add(Wakeup(id="w", trigger=Every(seconds=60), builder="flaky"))
        await clock.advance(60)
        skipped = await expect(events, WakeupSkipped, wakeup_id="w")
        assert skipped.reason == "builder failed: RuntimeError: weather service down"
        await clock.settle()
        await clock.advance(60)
        assert (await expect(events, WakeupFired, wakeup_id="w")).input == "Second time lucky"


async def test_pause_resume_and_remove_while_running(tmp_path: Path) -> None:
    clock = FakeClock(START)
    async with agent_at(tmp_path, clock) as agent:
        events = agent.events()
        agent.scheduler.add(Wakeup(id="p", trigger=Every(seconds=60), text="p", close_after=False))
        agent.scheduler.pause("p")
        await clock.advance(120)
        assert not [e for e in _drain(events) if isinstance(e.event, WakeupFired)]
        agent.scheduler.resume("p")
        await clock.advance(60)
        await expect(events, WakeupFired, wakeup_id="p")
        agent.scheduler.remove("p")  # while its Session is open
        (running,) = agent.sessions.values()
        await clock.advance(600)
        assert not [e for e in _drain(events) if isinstance(e.event, WakeupFired)]
        assert running.state == "running"  # the run in progress was left alone
        await running.close()
        with pytest.raises(WakeupNotFoundError):
            agent.scheduler.remove("p")


async def test_misfires_after_a_restart(tmp_path: Path) -> None:
    clock = FakeClock(START)
    async with agent_at(tmp_path, clock) as agent:
        agent.scheduler.add(
            Wakeup(id="catch-up", trigger=Every(seconds=HOUR), text="catch up", misfire="run_once")
        )
        agent.scheduler.add(
            Wakeup(id="forget", trigger=Every(seconds=HOUR), text="forget", misfire="skip")
        )
    clock = FakeClock(START + 5 * HOUR + 30)  # the process was down for five hours
    async with agent_at(tmp_path, clock) as agent:
        states = {s.wakeup.id: s for s in agent.scheduler.list()}
        assert set(states) == {"catch-up", "forget"}  # re-armed from schedules.json
        await clock.settle()
        states = {s.wakeup.id: s for s in agent.scheduler.list()}
    assert states["catch-up"].runs == 1  # once, not five times
    assert states["forget"].runs == 0
    for state in states.values():
        assert (
            state.next_at is not None and START + 5 * HOUR < state.next_at <= START + 6 * HOUR + 30
        )
    sessions = [d for d in (tmp_path / "sessions").iterdir() if d.is_dir()]
    assert len(sessions) == 1  # the catch-up run's Session


async def test_agent_origin_first_input_yields_no_user_facts(tmp_path: Path) -> None:
    clock = FakeClock(START)
    scripted = provider()
    async with Agent(tmp_path, scripted, clock=clock, config=AgentConfig()) as agent:
        events = agent.events()
        agent.scheduler.add(
            Wakeup(
                id="w", trigger=Every(seconds=60), text="The user said they were tired yesterday."
            )
        )
        await clock.advance(60)
        await expect(events, SessionEnded)
        assert agent.memory.facts() == []
    first_inputs = [m for r in scripted.requests for m in r.messages if isinstance(m, UserMessage)]
    assert {m.origin for m in first_inputs} == {"agent"}
    assert not any(m.content.startswith("[xai:memory-extraction]") for m in first_inputs)


def _drain(subscription: Subscription[AgentEvent]) -> list[AgentEvent]:
    out: list[AgentEvent] = []
    while (event := subscription.get_nowait()) is not None:
        out.append(event)
    return out
