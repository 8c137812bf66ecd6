"""AgentHost keeps at most ``max_agents`` Agents running: the least recently used idle one is
suspended (its Sessions stay open), and the next call for it reopens it transparently."""

from __future__ import annotations

from collections.abc import Mapping
from contextlib import aclosing
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.session_helpers import extraction_responder, is_side_request, last_content
from tests.test_agent import echo, judge_adds
from xai.agent import AgentConfig, AgentHost, FakeClock, OpenSession
from xai.events import AgentEvent, SessionClosed, SessionOpened, TurnDone, TurnStarted
from xai.exceptions import ConfigurationError
from xai.messages import TurnStatus, UserMessage
from xai.providers import OpenAIProvider
from xai.session import SessionConfig, read_journal
from xai.testing import OpenAIWireServer, Reply, ScriptedCall
from xai.tools import ToolSet

pytestmark = pytest.mark.anyio


def waits(body: Mapping[str, Any]) -> Reply | None:
    if not is_side_request(body) and last_content(body) == "wait for it":
        return Reply(tool_calls=(ScriptedCall(name="gate"),))
    return None


def delegates(body: Mapping[str, Any]) -> Reply | None:
    if not is_side_request(body) and last_content(body) == "delegate it":
        return Reply(tool_calls=(ScriptedCall(name="delegate", arguments={"task": "a sub-task"}),))
    return None


@pytest.fixture
def scripted(openai_server: OpenAIWireServer) -> OpenAIWireServer:
    for responder in (waits, delegates, extraction_responder, judge_adds, echo):
        openai_server.script.add_responder(responder)
    return openai_server


NAMES = ("ada", "bob", "cy", "dee")


async def test_a_capped_host_suspends_the_least_recently_used_and_reopens_it(
    tmp_path: Path, scripted: OpenAIWireServer, provider: OpenAIProvider
) -> None:
    async with AgentHost(tmp_path, lambda _: provider, max_agents=2) as host:
        sessions = {}
        for name in NAMES:
            info = await host.open_session(name, OpenSession())
            sessions[name] = info.session_id
            outcome = await host.send(name, info.session_id, f"I am {name}")
            assert outcome.text == f"echo: I am {name}"
            assert len(host.agent_ids) <= 2
        assert host.agent_ids == ["cy", "dee"] and host.evictions == 2
        for round_ in range(2):
            for name in NAMES:  # each call reopens an evicted Agent, its Session too
                outcome = await host.send(name, sessions[name], f"round {round_}")
                assert outcome.status is TurnStatus.COMPLETED
                assert len(host.agent_ids) <= 2
                info = await host.session_info(name, sessions[name])
                assert info.turns == round_ + 2
        assert host.agent_ids == ["cy", "dee"]
        for name in ("ada", "bob"):  # suspended, not closed
            journal = tmp_path / name / "sessions" / sessions[name] / "journal.jsonl"
            assert read_journal(journal).closed is None
        agent = await host.agent("ada")
        history = agent.session(sessions["ada"]).history
        assert [m.content for m in history if isinstance(m, UserMessage)] == [
            "I am ada",
            "round 0",
            "round 1",
        ]


async def test_eviction_never_interrupts_a_running_turn(
    tmp_path: Path, scripted: OpenAIWireServer, provider: OpenAIProvider
) -> None:
    entered, release = anyio.Event(), anyio.Event()

    async def gate() -> str:
        """Wait until released."""
        entered.set()
        await release.wait()
        return "released"

    # No memory extraction after the turn: the Session is idle as soon as its turn is done
    # (with it, the extraction would keep ada busy for a moment after `send` returns).
    config = AgentConfig(session=SessionConfig(extract_memory=False))
    host = AgentHost(tmp_path, lambda _: provider, max_agents=1, config=config)
    async with host, anyio.create_task_group() as group:
        agent = await host.agent("ada")
        agent._tools = ToolSet([*agent._tools, gate])  # a tool for this test's Sessions
        info = await host.open_session("ada", OpenSession())
        outcomes: list[Any] = []
        finished = anyio.Event()

        async def busy() -> None:
            outcomes.append(await host.send("ada", info.session_id, "wait for it"))
            finished.set()

        group.start_soon(busy)
        await entered.wait()
        await host.open_session("bob", OpenSession())  # over the cap: ada is busy, so it stays
        assert host.agent_ids == ["ada", "bob"] and host.evictions == 0
        release.set()
        await finished.wait()
        await host.open_session("cy", OpenSession())  # both idle now: back to the cap
        assert host.agent_ids == ["cy"] and host.evictions == 2
    (outcome,) = outcomes
    assert outcome.status is TurnStatus.COMPLETED and outcome.text == "echo: released"


async def test_an_agent_idle_for_idle_seconds_is_suspended(
    tmp_path: Path, scripted: OpenAIWireServer, provider: OpenAIProvider
) -> None:
    clock = FakeClock()
    async with AgentHost(tmp_path, lambda _: provider, idle_seconds=60, clock=clock) as host:
        info = await host.open_session("ada", OpenSession())
        stopped = (await host.agent("ada")).events()  # ends when ada stops
        await clock.advance(30)
        await host.send("bob", (await host.open_session("bob", OpenSession())).session_id, "hi")
        await clock.advance(31)  # ada: 61 s idle; bob: 31 s
        with anyio.fail_after(30):  # a guard against a hang, not a wait
            async for _ in stopped:
                pass
        assert host.agent_ids == ["bob"]
        outcome = await host.send("ada", info.session_id, "still here?")  # reopened
        assert outcome.text == "echo: still here?"
        assert sorted(host.agent_ids) == ["ada", "bob"]


async def test_the_options_are_checked(tmp_path: Path, provider: OpenAIProvider) -> None:
    with pytest.raises(ConfigurationError):
        AgentHost(tmp_path, lambda _: provider, max_agents=0)
    with pytest.raises(ConfigurationError):
        AgentHost(tmp_path, lambda _: provider, idle_seconds=0)


async def test_a_submit_repeated_with_its_input_id_is_queued_once(
    tmp_path: Path, scripted: OpenAIWireServer, provider: OpenAIProvider
) -> None:
    async with AgentHost(tmp_path, lambda _: provider) as host:
        info = await host.open_session("ada", OpenSession())
        for _ in range(2):  # a client retrying a call whose answer it lost
            given = await host.submit("ada", info.session_id, "hi", input_id="input-1")
            assert given == "input-1"
        done = 0
        async for event in await host.events("ada", info.session_id):  # until it closes
            if isinstance(event.event, TurnDone):
                done += 1
                again = await host.submit("ada", info.session_id, "hi", input_id="input-1")
                assert again == "input-1"
                assert (await host.session_info("ada", info.session_id)).turns == 1
                assert not (await host.agent("ada")).sessions[info.session_id].pending_inputs
                await host.close_session("ada", info.session_id)
        assert done == 1
        agent = await host.agent("ada")
        journal = agent.directory / "sessions" / info.session_id / "journal.jsonl"
        history = read_journal(journal).history
        assert [m.content for m in history if isinstance(m, UserMessage)] == ["hi"]


async def test_another_host_that_takes_a_suspended_agent_over_goes_on_with_its_streams(
    tmp_path: Path, scripted: OpenAIWireServer, provider: OpenAIProvider
) -> None:
    """Hosts on a shared root (a cluster): the stream's numbers are the log's, not a host's."""

    async def until_done(host: AgentHost, session: str, after: int) -> list[int]:
        seqs = []
        with anyio.fail_after(30):  # a guard against a hang, not a wait
            async with aclosing(await host.events("ada", session, after)) as events:
                async for event in events:
                    seqs.append(event.seq)
                    if isinstance(event.event, TurnDone):
                        return seqs
        raise AssertionError("the stream ended before the turn did")

    async with (
        AgentHost(tmp_path, lambda _: provider, max_agents=1) as first,
        AgentHost(tmp_path, lambda _: provider) as second,
    ):
        session = (await first.open_session("ada", OpenSession())).session_id
        await first.submit("ada", session, "one")
        before = await until_done(first, session, 0)
        await first.open_session("bob", OpenSession())  # ada is suspended: her lock is free
        assert first.agent_ids == ["bob"]
        await second.submit("ada", session, "two")  # the second host starts her
        after = await until_done(second, session, before[-1])
        assert after[0] == before[-1] + 1  # (events after the first turn's end come too)
        assert (await until_done(second, session, 0))[: len(before)] == before


async def test_a_helper_of_a_streamed_session_is_streamed_from_its_first_event(
    tmp_path: Path, scripted: OpenAIWireServer, provider: OpenAIProvider
) -> None:
    """A reader that comes back once the helper has closed (a reloaded web page) reads its
    whole stream, as it reads its parent's."""
    async with AgentHost(tmp_path, lambda _: provider) as host:
        agent = await host.agent("ada")
        helpers: list[str | None] = []

        def heard(event: AgentEvent) -> None:
            if isinstance(event.event, SessionOpened) and event.event.parent_id is not None:
                helpers.append(event.session_id)

        stop = agent.listen(heard)
        info = await host.open_session("ada", OpenSession())  # streamed
        outcome = await host.send("ada", info.session_id, "delegate it")
        stop()
        assert outcome.status is TurnStatus.COMPLETED and outcome.text == "echo: echo: a sub-task"
        [helper] = helpers
        assert helper is not None
        with anyio.fail_after(30):  # a guard against a hang, not a wait
            events = [e.event async for e in await host.events("ada", helper)]  # until closed
        assert isinstance(events[0], TurnStarted) and isinstance(events[-1], SessionClosed)
        done = [e.outcome.text for e in events if isinstance(e, TurnDone)]
        assert done == ["echo: a sub-task"]
