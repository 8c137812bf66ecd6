"""An idle Agent costs what its open Sessions cost: a start reads only the journals not listed
as done in ``sessions/closed.list``, and ``suspend`` stops an Agent without closing its Sessions
(the next start reopens them as they were)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.session_helpers import drain, extraction_responder, is_side_request, last_content
from tests.test_agent import echo, judge_adds, of
from tests.test_agent_resume import conversation, said, scripted, spy
from xai.agent import Agent
from xai.events import JournalQuarantined, SessionEnded
from xai.exceptions import AgentBusyError, SessionClosedError
from xai.messages import TurnStatus
from xai.providers import OpenAIProvider
from xai.session import Session, read_journal
from xai.testing import OpenAIWireServer, Reply, ScriptedCall

pytestmark = pytest.mark.anyio

__all__ = ["scripted"]  # the fixture, imported


def listed(agent_dir: Path) -> list[str]:
    path = agent_dir / "sessions" / "closed.list"
    return [line for line in path.read_text().split("\n") if line] if path.exists() else []


async def until_idle(session: Session) -> None:
    """Until the turn and the memory extraction after it are over."""
    with anyio.fail_after(30):  # a guard against a hang, not a wait
        while not session.idle:
            await anyio.wait_all_tasks_blocked()


async def test_a_journal_listed_as_done_is_not_read_again(
    tmp_path: Path, scripted: OpenAIWireServer, provider: OpenAIProvider
) -> None:
    async with Agent(tmp_path, provider) as agent:
        session = await agent.open_session()
        await session.send("I keep bees")
        await session.close()
        done = session.id
    assert listed(tmp_path) == [done]  # closed, its candidate decided, its episodes recorded
    # Never listed: a closed journal whose candidates were never handed to an Agent.
    other = await conversation(tmp_path, provider, ["I am a nurse"], crashed=False)
    for journal in (tmp_path / "sessions" / done / "journal.jsonl", other):
        journal.write_bytes(b"not a journal\n")  # a read would quarantine it
    agent = Agent(tmp_path, provider)
    events = agent.events()
    async with agent:
        assert agent.sessions == {}
    (quarantined,) = of(drain(events), JournalQuarantined)
    assert quarantined.path == str(other)  # the listed one was not read
    assert (tmp_path / "sessions" / done / "journal.jsonl").exists()


async def test_a_close_whose_list_line_was_lost_loses_nothing(
    tmp_path: Path,
    scripted: OpenAIWireServer,
    provider: OpenAIProvider,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A kill between the close and its ``closed.list`` line: the journal is read again,
    found done (nothing decided or recorded twice) and listed."""
    async with Agent(tmp_path, provider) as agent:
        session = await agent.open_session()
        await session.send("I keep bees")
        await session.close()
    journal = tmp_path / "sessions" / session.id / "journal.jsonl"
    (tmp_path / "sessions" / "closed.list").write_bytes(b"")  # the line never made it
    parsed = spy(monkeypatch, "xai.session._journal.read_jsonl")
    async with Agent(tmp_path, provider) as agent:
        assert {f.text for f in agent.memory.facts()} == said("I keep bees")
        assert len(agent.memory.ledger()) == 1 and agent.sessions == {}
    assert [path for path, _ in parsed] == [journal]
    assert listed(tmp_path) == [session.id]
    parsed.clear()
    async with Agent(tmp_path, provider):
        pass
    assert parsed == []


async def test_closed_journals_found_at_start_are_listed_once_handled(
    tmp_path: Path, scripted: OpenAIWireServer, provider: OpenAIProvider
) -> None:
    """A directory from before ``closed.list``: its closed journals are read once, then listed."""
    left_over = await conversation(tmp_path, provider, ["I am a nurse"], crashed=False)
    live = await conversation(tmp_path, provider, ["I keep bees"])
    async with Agent(tmp_path, provider) as agent:
        assert list(agent.sessions) == [live.parent.name]
        assert listed(tmp_path) == [left_over.parent.name]
    # The live one closed with the Agent: listed too.
    assert sorted(listed(tmp_path)) == sorted([left_over.parent.name, live.parent.name])


async def test_suspend_keeps_sessions_open_and_a_restart_continues_them(
    tmp_path: Path, scripted: OpenAIWireServer, provider: OpenAIProvider
) -> None:
    agent = Agent(tmp_path, provider)
    events = agent.events()
    async with agent:
        session = await agent.open_session()
        await session.send("My name is Ada")
        await until_idle(session)
        waiting = session.send("I keep bees")  # accepted (journaled), not started
        await agent.suspend()
        assert session.state == "suspended" and agent.sessions == {}
        outcome = await waiting.result()
        assert outcome.status is TurnStatus.INTERRUPTED
        assert outcome.error is not None and outcome.error.type == "SessionSuspended"
        with pytest.raises(SessionClosedError):
            session.send("too late")
        with pytest.raises(SessionClosedError):
            await session.close()
    assert of(drain(events), SessionEnded) == []  # nothing closed
    journal = tmp_path / "sessions" / session.id / "journal.jsonl"
    state = read_journal(journal)
    assert state.closed is None and state.closing is None
    assert [m.content for m in state.pending] == ["I keep bees"]
    assert listed(tmp_path) == []
    decided_before = len(agent.memory.ledger())
    assert decided_before == 1  # "My name is Ada", decided while it ran

    async with Agent(tmp_path, provider) as again:
        (resumed,) = again.sessions.values()
        assert resumed.id == session.id
        assert [m.content for m in resumed.history[:2]] == [
            "My name is Ada",
            "echo: My name is Ada",
        ]
        (handle,) = resumed.requeued
        assert (await handle.result()).text == "echo: I keep bees"
        await resumed.close()
        ledger = again.memory.ledger()
    ids = [d.candidate.id for d in ledger if d.candidate is not None]
    assert len(ids) == len(set(ids)) == 2  # each candidate decided once
    assert {f.text for f in again.memory.facts()} == said("My name is Ada", "I keep bees")
    assert read_journal(journal).closed == "closed"


def waits(body: Mapping[str, Any]) -> Reply | None:
    if not is_side_request(body) and last_content(body) == "wait for it":
        return Reply(tool_calls=(ScriptedCall(name="gate"),))
    return None


async def test_suspend_never_interrupts_a_running_turn(
    tmp_path: Path, openai_server: OpenAIWireServer, provider: OpenAIProvider
) -> None:
    for responder in (waits, extraction_responder, judge_adds, echo):
        openai_server.script.add_responder(responder)
    entered, release = anyio.Event(), anyio.Event()

    async def gate() -> str:
        """Wait until released."""
        entered.set()
        await release.wait()
        return "released"

    async with Agent(tmp_path, provider, tools=[gate]) as agent:
        session = await agent.open_session()
        handle = session.send("wait for it")
        await entered.wait()
        with pytest.raises(AgentBusyError) as refused:
            await agent.suspend()
        assert refused.value.session_ids == (session.id,)
        release.set()
        assert (await handle.result()).status is TurnStatus.COMPLETED
        await until_idle(session)
        await agent.suspend()
        assert session.state == "suspended"
    assert read_journal(tmp_path / "sessions" / session.id / "journal.jsonl").closed is None
