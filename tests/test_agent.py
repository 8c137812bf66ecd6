"""The Agent over the local OpenAI-wire server, real chromadb and the offline embedding model."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import anyio
import anyio.lowlevel
import msgspec
import pytest

from tests.session_helpers import drain, extraction_responder, is_side_request, last_content
from xai.agent import Agent, AgentConfig, AgentHost, OpenSession, Persona
from xai.agent._jobs import Job
from xai.events import AgentEvent, MemoryDecided, SessionEnded, SessionOpened
from xai.exceptions import SessionClosedError
from xai.memory import JUDGE_MARKER, MemoryConfig
from xai.messages import MemoryCandidate, ToolMessage, TurnStatus
from xai.providers import OpenAIProvider
from xai.session import Session, SessionConfig
from xai.testing import OpenAIWireServer, Reply, ScriptedCall

pytestmark = pytest.mark.anyio


def echo(body: Mapping[str, Any]) -> Reply | None:
    if is_side_request(body) or last_content(body).startswith(JUDGE_MARKER):
        return None
    return Reply(text=f"echo: {last_content(body)}")


def judge_adds(body: Mapping[str, Any]) -> Reply | None:
    if last_content(body).startswith(JUDGE_MARKER):
        return Reply(text='{"decision": "add", "reason": "different enough"}')
    return None


@pytest.fixture
def scripted(openai_server: OpenAIWireServer) -> OpenAIWireServer:
    openai_server.script.add_responder(extraction_responder)
    openai_server.script.add_responder(judge_adds)
    openai_server.script.add_responder(echo)
    return openai_server


def of(events: list[AgentEvent], kind: type) -> list[Any]:
    return [e.event for e in events if isinstance(e.event, kind)]


async def test_sessions_get_persona_and_a_prefix_for_their_purpose(
    tmp_path: Path, scripted: OpenAIWireServer, provider: OpenAIProvider
) -> None:
    persona = Persona(name="Fern", role="a gardening assistant", tone="warm")
    config = AgentConfig(memory=MemoryConfig(promote_after_sessions=2))
    async with Agent(tmp_path, provider, persona=persona, config=config) as agent:
        for text in (
            "My garden is in Porto",
            "I grow tomatoes",
            "I grow tomatoes",
            "My car is red",
        ):
            session = await agent.open_session("small talk")
            await session.send(text)
            await session.close()
        stable = agent.memory.facts(tier="L2")
        assert [f.text for f in stable] == ["The user said: I grow tomatoes"]
        garden = await agent.open_session("plan the vegetable garden", prefix_tokens=40)
        await garden.send("what should I plant?")
    prefix = garden.system.memory_prefix
    assert prefix.startswith("Stable facts:\n- The user said: I grow tomatoes")
    assert "garden is in Porto" in prefix and "car is red" not in prefix
    sent = next(
        r for r in scripted.chat_requests() if last_content(r.body) == "what should I plant?"
    )
    system = sent.body["messages"][0]["content"]
    assert system.startswith("You are Fern, a gardening assistant.") and "I grow tomatoes" in system
    assert [t["function"]["name"] for t in sent.body["tools"]] == ["search_memory", "delegate"]


async def test_candidates_are_adjudicated_as_they_come_and_at_close(
    tmp_path: Path, scripted: OpenAIWireServer, provider: OpenAIProvider
) -> None:
    async with Agent(tmp_path, provider) as agent:
        events = agent.events()
        session = await agent.open_session("chat")
        await session.send("I am a nurse")
        await session.send("I work night shifts")
        await session.close()  # returns once the remaining candidates are decided
        assert {f.text for f in agent.memory.facts()} == {
            "The user said: I am a nurse",
            "The user said: I work night shifts",
        }
        seen = drain(events)
    decided = of(seen, MemoryDecided)
    assert [d.decision for d in decided] == ["add", "add"]
    assert all(e.session_id == session.id for e in seen if isinstance(e.event, MemoryDecided))
    assert (
        of(seen, SessionOpened)[0].purpose == "chat"
        and of(seen, SessionEnded)[0].reason == "closed"
    )
    ledger = agent.memory.ledger()
    assert [d.session_id for d in ledger] == [session.id, session.id]
    state = session.candidates
    assert len(state) == 2  # and all acknowledged: a reopen would not hand them over again
    from xai.session import read_journal

    journal = read_journal(tmp_path / "sessions" / session.id / "journal.jsonl")
    assert journal.reported == {c.id for c in state}


async def test_two_sessions_reporting_the_same_fact_at_once_make_one_fact_seen_twice(
    tmp_path: Path, scripted: OpenAIWireServer, provider: OpenAIProvider
) -> None:
    async with Agent(tmp_path, provider) as agent:
        first = await agent.open_session("a")
        second = await agent.open_session("b")
        async with anyio.create_task_group() as group:
            for session in (first, second):
                group.start_soon(session.send("I have two dogs").result)
        await first.close()
        await second.close()
        (fact,) = agent.memory.facts()
    assert fact.count == 2 and set(fact.sessions) == {first.id, second.id}
    assert [d.kind for d in agent.memory.ledger()] == ["add", "reinforce"]


async def test_agent_origin_input_never_becomes_a_user_fact(
    tmp_path: Path, scripted: OpenAIWireServer, provider: OpenAIProvider
) -> None:
    async with Agent(tmp_path, provider) as agent:
        session = await agent.open_session("morning greeting")
        await session.send(
            "Good morning! Yesterday the user said they were exhausted.", origin="agent"
        )
        wake_up = session.history[0]
        # Even a candidate that claims that input as evidence is dropped by the Agent.
        forged = MemoryCandidate(
            text="The user is exhausted.", evidence=(wake_up.id,), session_id=session.id
        )
        done = anyio.Event()
        assert await agent.adjudication.enqueue(Job(session.id, (forged,), session, done))
        await done.wait()
        await session.close()
        assert agent.memory.facts() == []
    (decision,) = agent.memory.ledger()
    assert decision.kind == "drop" and decision.reason == "no user evidence"


async def test_the_memory_search_tool(
    tmp_path: Path, scripted: OpenAIWireServer, provider: OpenAIProvider
) -> None:
    async with Agent(tmp_path, provider) as agent:
        session = await agent.open_session("x")
        await session.send("My favourite colour is green")
        await session.close()
        scripted.push(
            Reply(
                tool_calls=(
                    ScriptedCall(name="search_memory", arguments={"query": "favourite colour"}),
                )
            ),
            Reply(text="It is green."),
        )
        scripted.script.reset()
        scripted.push(
            Reply(
                tool_calls=(
                    ScriptedCall(name="search_memory", arguments={"query": "favourite colour"}),
                )
            ),
            Reply(text="It is green."),
        )
        config = AgentConfig(session=SessionConfig(extract_memory=False))
        asking = await agent.open_session("colours", config=config.session)
        outcome = await asking.send("What is my favourite colour?")
        assert outcome.text == "It is green."
        result = next(m for m in asking.history if isinstance(m, ToolMessage))
    found = msgspec.json.decode(result.content)
    assert (
        found[0]["fact"] == "The user said: My favourite colour is green"
        and found[0]["times_seen"] == 1
    )


async def test_delegation_creates_a_child_owned_by_the_agent(
    tmp_path: Path, openai_server: OpenAIWireServer, provider: OpenAIProvider
) -> None:
    def child(body: Mapping[str, Any]) -> Reply | None:
        if "helper working on one delegated task" in body["messages"][0]["content"]:
            return Reply(text="42 stars")
        return None

    openai_server.script.add_responder(child)
    openai_server.push(
        Reply(tool_calls=(ScriptedCall(name="delegate", arguments={"task": "count stars"}),)),
        Reply(text="done"),
    )
    config = AgentConfig(session=SessionConfig(delegation=True))
    async with Agent(tmp_path, provider, config=config) as agent:
        events = agent.events()
        parent = await agent.open_session("astronomy")
        outcome = await parent.send("delegate it")
        assert outcome.status is TurnStatus.COMPLETED
        seen = drain(events)
    opened = of(seen, SessionOpened)
    assert [o.parent_id for o in opened] == [None, parent.id]
    child_id = next(
        e.session_id
        for e in seen
        if isinstance(e.event, SessionOpened) and e.event.parent_id and e.session_id
    )
    assert (
        tmp_path / "sessions" / child_id / "journal.jsonl"
    ).exists()  # the Agent's, under its directory
    assert any(isinstance(e.event, SessionEnded) and e.session_id == child_id for e in seen)
    assert next(m for m in parent.history if isinstance(m, ToolMessage)).content == "42 stars"


async def test_host_reaches_agents_by_id_with_plain_values(
    tmp_path: Path, scripted: OpenAIWireServer, provider: OpenAIProvider
) -> None:
    async with AgentHost(tmp_path, lambda agent_id: provider) as host:
        info = await host.open_session("ada", OpenSession(purpose="hello"))
        outcome = await host.send("ada", info.session_id, "I live near the sea")
        assert outcome.text == "echo: I live near the sea"
        await host.close_session("ada", info.session_id)
        other = await host.open_session("bob", OpenSession(purpose="hello"))
        assert host.agent_ids == ["ada", "bob"] and other.agent_id == "bob"
        facts = await host.facts("ada")
        assert [f.text for f in facts] == ["The user said: I live near the sea"]
        assert await host.facts("bob") == []
        hits = await host.search_memory("ada", "ocean", k=1)
        for value in (info, outcome, facts, hits):  # everything crossing the host is serialisable
            assert msgspec.json.decode(msgspec.json.encode(value)) is not None
    async with AgentHost(
        tmp_path, lambda agent_id: provider
    ) as host:  # a new process, same directory
        assert [f.text for f in await host.facts("ada")] == ["The user said: I live near the sea"]


async def test_opening_a_session_while_the_agent_closes_never_hangs(
    tmp_path: Path, scripted: OpenAIWireServer, provider: OpenAIProvider
) -> None:
    from xai.exceptions import AgentNotRunningError

    agent = Agent(tmp_path, provider)
    async with anyio.create_task_group() as group:
        await group.start(agent.run)
        await agent.open_session("one")
        group.start_soon(agent.close)
        await anyio.lowlevel.checkpoint()
        with pytest.raises(AgentNotRunningError):
            await agent.open_session("too late")
    assert agent.sessions == {}


async def test_maintenance_and_forgetting_are_announced(
    tmp_path: Path, scripted: OpenAIWireServer, provider: OpenAIProvider
) -> None:
    async with Agent(tmp_path, provider) as agent:
        session = await agent.open_session("x")
        await session.send("I keep bees")
        await session.close()
        events = agent.events()
        (fact,) = agent.memory.facts()
        await agent.forget(fact.id)
        assert await agent.maintain() == []
        (forgotten,) = of(drain(events), MemoryDecided)
    assert forgotten.decision == "forget" and forgotten.fact_ids == (fact.id,)


async def test_an_adopted_session_is_owned_like_an_opened_one(
    tmp_path: Path, scripted: OpenAIWireServer, provider: OpenAIProvider
) -> None:
    async with Agent(tmp_path / "agent", provider) as agent:
        session = Session(
            provider,
            config=SessionConfig(extract_memory=True),
            directory=tmp_path / "elsewhere",
        )
        await agent.adopt(session, purpose="built elsewhere")
        assert agent.session(session.id) is session
        await session.send("I keep bees on the roof")
        await session.close()
        assert [f.text for f in agent.memory.facts()] == ["The user said: I keep bees on the roof"]
        with pytest.raises(SessionClosedError, match="already run"):
            await agent.adopt(session)
