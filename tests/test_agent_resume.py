"""What an Agent does with the journals it finds when it starts: resume the live ones, close
orphaned children, keep what a damaged journal still says, decide candidates left behind."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import anyio
import msgspec
import pytest

from tests.session_helpers import drain, extraction_responder
from tests.test_agent import echo, judge_adds, of
from xai.agent import Agent
from xai.events import AgentEvent, JournalQuarantined, SessionEnded
from xai.messages import new_id
from xai.providers import OpenAIProvider
from xai.session import JournalState, Session, SessionConfig, Subscription, read_journal
from xai.testing import OpenAIWireServer

pytestmark = pytest.mark.anyio


@pytest.fixture
def scripted(openai_server: OpenAIWireServer) -> OpenAIWireServer:
    for responder in (extraction_responder, judge_adds, echo):
        openai_server.script.add_responder(responder)
    return openai_server


async def conversation(
    agent_dir: Path,
    provider: OpenAIProvider,
    texts: Sequence[str],
    *,
    parent_id: str | None = None,
    crashed: bool = True,
) -> Path:
    """A Session of the Agent's that said ``texts`` (its candidates extracted, never handed
    to an Agent). ``crashed``: its journal as a kill -9 just before the close leaves it.
    Returns the journal."""
    session_id = new_id()
    directory = agent_dir / "sessions" / session_id
    config = SessionConfig(extract_memory=True)
    async with Session(
        provider, config=config, directory=directory, session_id=session_id, parent_id=parent_id
    ) as session:
        for text in texts:
            await session.send(text)
    journal = directory / "journal.jsonl"
    if crashed:
        lines = journal.read_bytes().splitlines(keepends=True)
        cut = next(i for i, line in enumerate(lines) if b'"kind":"closed"' in line)
        journal.write_bytes(b"".join(lines[:cut]))
    return journal


def said(*texts: str) -> set[str]:
    return {f"The user said: {text}" for text in texts}


async def ended(events: Subscription[AgentEvent], *session_ids: str) -> dict[str, SessionEnded]:
    """Wait until each of ``session_ids`` has ended, in any order."""
    out: dict[str, SessionEnded] = {}
    with anyio.fail_after(30):  # a guard against a hang, not a wait
        async for event in events:
            if isinstance(event.event, SessionEnded) and event.session_id in session_ids:
                out[event.session_id] = event.event
                if len(out) == len(session_ids):
                    return out
    raise AssertionError("the events ended first")


async def test_an_unreadable_journal_is_set_aside_and_what_it_says_is_kept(
    tmp_path: Path, scripted: OpenAIWireServer, provider: OpenAIProvider
) -> None:
    journal = await conversation(tmp_path, provider, ["My name is Ada", "I keep bees"])
    lines = journal.read_bytes().splitlines(keepends=True)
    bad = next(i for i, line in enumerate(lines) if b'"kind":"message"' in line)
    lines[bad] = b'{"kind":"message","turn":1,"mess\n'  # damaged mid-file: not a torn tail
    damaged = b"".join(lines)
    journal.write_bytes(damaged)
    agent = Agent(tmp_path, provider)
    events = agent.events()
    async with agent:
        assert {f.text for f in agent.memory.facts()} == said("My name is Ada", "I keep bees")
        assert agent.sessions == {}
    (quarantined,) = of(drain(events), JournalQuarantined)
    assert quarantined.path == str(journal) and quarantined.recovered_candidates == 2
    assert f"{journal}:{bad + 1}" in quarantined.error
    assert quarantined.moved_to == f"{journal}.quarantined"
    kept = await anyio.Path(quarantined.moved_to).read_bytes()
    assert not journal.exists() and kept == damaged
    async with Agent(tmp_path, provider) as agent:  # once: it is not found again
        assert agent.sessions == {} and len(agent.memory.ledger()) == 2


async def test_an_orphaned_child_is_closed_and_its_candidates_decided(
    tmp_path: Path, scripted: OpenAIWireServer, provider: OpenAIProvider
) -> None:
    parent = await conversation(tmp_path, provider, ["Please ask a helper"])
    child = await conversation(tmp_path, provider, ["I keep bees"], parent_id=parent.parent.name)
    orphan = await conversation(tmp_path, provider, ["I live in Porto"], parent_id="long-gone")
    agent = Agent(tmp_path, provider)
    events = agent.events()
    async with agent:
        gone = await ended(events, child.parent.name, orphan.parent.name)
        assert {e.reason for e in gone.values()} == {"cancelled"}
        assert list(agent.sessions) == [parent.parent.name]  # only the top-level one lives on
    facts = {f.text for f in agent.memory.facts()}  # the parent's are decided by its close
    assert facts == said("Please ask a helper", "I keep bees", "I live in Porto")
    for journal in (child, orphan):
        state = read_journal(journal)
        assert state.closed == "cancelled"
        assert state.reported == {c.id for c in state.candidates}


async def test_candidates_a_closed_journal_never_handed_over_are_decided(
    tmp_path: Path, scripted: OpenAIWireServer, provider: OpenAIProvider
) -> None:
    await conversation(tmp_path, provider, ["I am a nurse"], crashed=False)
    async with Agent(tmp_path, provider) as agent:
        assert {f.text for f in agent.memory.facts()} == said("I am a nurse")
        assert agent.sessions == {}
    async with Agent(tmp_path, provider) as agent:  # decided once, not at every start
        assert len(agent.memory.ledger()) == 1


def spy(monkeypatch: pytest.MonkeyPatch, target: str) -> list[tuple[Any, bool]]:
    """Record each call's first argument and whether it ran off the main thread."""
    module, name = target.rsplit(".", 1)
    real: Callable[..., Any] = getattr(__import__(module, fromlist=[name]), name)
    calls: list[tuple[Any, bool]] = []

    def record(*args: Any, **kwargs: Any) -> Any:
        calls.append((args[0], threading.current_thread() is not threading.main_thread()))
        return real(*args, **kwargs)

    monkeypatch.setattr(target, record)
    return calls


async def test_each_journal_is_parsed_once_in_a_worker_thread(
    tmp_path: Path,
    scripted: OpenAIWireServer,
    provider: OpenAIProvider,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    journals = [await conversation(tmp_path, provider, [text]) for text in ("one", "two")]
    parsed = spy(monkeypatch, "xai.session._journal.read_jsonl")
    async with Agent(tmp_path, provider) as agent:
        assert len(agent.sessions) == 2
    assert sorted(path for path, _ in parsed) == sorted(journals)
    assert all(off_the_loop for _, off_the_loop in parsed)


async def test_a_session_whose_close_had_begun_is_closed_for_that_reason(
    tmp_path: Path,
    scripted: OpenAIWireServer,
    provider: OpenAIProvider,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A journal read back with ``closing`` set (its close began, its candidates were not all
    acknowledged) is reopened and closed at once: its candidates are decided."""
    journal = await conversation(tmp_path, provider, ["I keep bees"])
    real = read_journal

    def closing(path: Path, **options: Any) -> JournalState:
        return msgspec.structs.replace(real(path, **options), closing="owner_shutdown")

    monkeypatch.setattr("xai.agent._resume.read_journal", closing)
    agent = Agent(tmp_path, provider)
    events = agent.events()
    async with agent:
        gone = await ended(events, journal.parent.name)
        assert gone[journal.parent.name].reason == "owner_shutdown" and agent.sessions == {}
        assert {f.text for f in agent.memory.facts()} == said("I keep bees")
    assert real(journal).closed == "owner_shutdown"
