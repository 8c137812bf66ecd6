"""An AgentHost fires the wake-ups of Agents that are not running: suspended ones, and ones
not started since the host began; a firing missed while no host ran follows ``misfire``."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.session_helpers import is_side_request, last_content
from xai.agent import AgentConfig, AgentHost, At, Every, FakeClock, Wakeup
from xai.session import SessionConfig
from xai.testing import Reply, ScriptedProvider

pytestmark = pytest.mark.anyio

START = 1_800_000_000.0
HOUR = 3600.0
CONFIG = AgentConfig(session=SessionConfig(extract_memory=False))


class Model:
    """A scripted model that notes each wake-up's first input it is asked to answer."""

    def __init__(self) -> None:
        self.provider = ScriptedProvider()
        self.provider.script.add_responder(self.answer)
        self.said: list[str] = []
        self.woke = anyio.Event()

    def answer(self, body: Mapping[str, Any]) -> Reply | None:
        text = last_content(body)
        if not is_side_request(body) and text.startswith("wake up"):
            self.said.append(text)
            self.woke.set()
        return Reply(text=f"reply to: {text}")

    async def wait(self) -> None:
        with anyio.fail_after(30):  # a guard against a hang, not a wait
            await self.woke.wait()

    def host(self, root: Path, clock: FakeClock, **options: Any) -> AgentHost:
        return AgentHost(root, lambda _: self.provider, clock=clock, config=CONFIG, **options)


async def test_an_evicted_agents_wakeup_fires_without_any_call(tmp_path: Path) -> None:
    model, clock = Model(), FakeClock(START)
    async with model.host(tmp_path, clock, max_agents=1) as host:
        ada = await host.agent("ada")  # added while it runs: the host hears of it at suspend
        ada.scheduler.add(
            Wakeup(id="hourly", trigger=Every(seconds=HOUR), text="wake up", misfire="skip")
        )
        await host.agent("bob")  # over the cap: ada is suspended
        assert host.agent_ids == ["bob"]
        await clock.advance(HOUR)
        await model.wait()
        assert host.agent_ids == ["ada"]  # started by its wake-up (bob made way: the cap)
        (state,) = (await host.agent("ada")).scheduler.list()
    assert model.said == ["wake up"]  # on time, so fired (misfire="skip" would skip it)
    assert state.runs == 1 and state.next_at == START + 2 * HOUR


async def test_an_agent_not_started_since_the_host_began_fires(tmp_path: Path) -> None:
    model = Model()
    async with model.host(tmp_path, FakeClock(START)) as host:
        (await host.agent("ada")).scheduler.add(
            Wakeup(id="once", trigger=At(time=START + HOUR), text="wake up", misfire="skip")
        )
    clock = FakeClock(START + 60)  # a new host (a restart) before the wake-up is due
    async with model.host(tmp_path, clock, owns=lambda agent_id: agent_id != "ada") as other:
        assert other.wakeups.next_at("ada") is None  # not its Agent: it never starts it
    async with model.host(tmp_path, clock) as host:
        assert host.agent_ids == [] and host.wakeups.next_at("ada") == START + HOUR
        await clock.advance(HOUR)
        await model.wait()
        assert host.agent_ids == ["ada"]
        (state,) = (await host.agent("ada")).scheduler.list()
    assert model.said == ["wake up"]
    assert state.runs == 1 and state.finished


async def test_a_firing_missed_while_no_host_ran_follows_its_misfire_policy(
    tmp_path: Path,
) -> None:
    model = Model()
    async with model.host(tmp_path, FakeClock(START)) as host:
        ada = await host.agent("ada")
        for wakeup_id, misfire in (("catch-up", "run_once"), ("forget", "skip")):
            ada.scheduler.add(
                Wakeup(
                    id=wakeup_id,
                    trigger=Every(seconds=HOUR),
                    text=f"wake up: {wakeup_id}",
                    misfire=misfire,  # type: ignore[arg-type]
                )
            )
    clock = FakeClock(START + 5 * HOUR + 30)  # the host was down for five hours
    async with model.host(tmp_path, clock) as host:
        await model.wait()  # started at once: its wake-ups were due
        assert host.agent_ids == ["ada"]
        states = {s.wakeup.id: s for s in (await host.agent("ada")).scheduler.list()}
    assert model.said == ["wake up: catch-up"]  # once, not five times; "forget" skipped
    assert states["catch-up"].runs == 1 and states["forget"].runs == 0
    for state in states.values():
        assert state.next_at is not None and clock.now() < state.next_at <= clock.now() + HOUR


async def test_a_wakeup_run_that_is_starting_keeps_its_agent_from_eviction(
    tmp_path: Path,
) -> None:
    model, clock = Model(), FakeClock(START)
    building, release = anyio.Event(), anyio.Event()

    async def slow_text(memory: Any, payload: Any) -> str:
        building.set()
        await release.wait()
        return "wake up"

    async with model.host(tmp_path, clock, max_agents=1) as host:
        ada = await host.agent("ada")
        ada.scheduler.register_builder("slow", slow_text)
        ada.scheduler.add(Wakeup(id="hourly", trigger=Every(seconds=HOUR), builder="slow"))
        await clock.advance(HOUR)
        with anyio.fail_after(30):  # a guard against a hang, not a wait
            await building.wait()  # fired; no Session open yet
        await host.agent("bob")  # over the cap, but ada's run is starting: it stays
        assert host.agent_ids == ["ada", "bob"] and host.evictions == 0
        release.set()
        await model.wait()
    assert model.said == ["wake up"]
