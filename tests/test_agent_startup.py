"""Starting and stopping an Agent: what it owns, what it writes and when, and the errors a
caller sees."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import msgspec
import pytest

from tests.memory_helpers import text_of
from tests.session_helpers import extraction_responder
from tests.test_agent import echo, judge_adds
from xai.agent import Agent, AgentHost, Every, OpenSession, Persona, Wakeup
from xai.config import EmbeddingConfig
from xai.exceptions import AgentLockedError, ConfigurationError, JournalError
from xai.memory import OpenAIEmbedder
from xai.providers import OpenAIProvider
from xai.testing import OpenAIWireServer, ScriptedProvider

pytestmark = pytest.mark.anyio


@pytest.fixture
def scripted(openai_server: OpenAIWireServer) -> OpenAIWireServer:
    for responder in (extraction_responder, judge_adds, echo):
        openai_server.script.add_responder(responder)
    return openai_server


async def learn(host: AgentHost, agent_id: str, text: str) -> None:
    info = await host.open_session(agent_id, OpenSession(purpose="hello"))
    await host.send(agent_id, info.session_id, text)
    await host.close_session(agent_id, info.session_id)


async def test_agents_sharing_an_embedder_never_close_it(
    tmp_path: Path, scripted: OpenAIWireServer, provider: OpenAIProvider
) -> None:
    config = EmbeddingConfig(model="embed", base_url=scripted.base_url, max_retries=0)
    embedder = OpenAIEmbedder(config)
    try:
        async with AgentHost(tmp_path, lambda _: provider, embedder=embedder) as host:
            await learn(host, "ada", "I live near the sea")
            await learn(host, "bob", "I keep bees")
            await (await host.agent("ada")).close()  # one Agent stops
            (hit,) = await host.search_memory("bob", "honey", k=1)  # the other still searches
            assert "I keep bees" in text_of(hit)
            await host.close_agent("bob")
            assert host.agent_ids == ["ada"]
        assert len(await embedder.embed(["still mine"])) == 1  # the caller's, still open
    finally:
        await embedder.aclose()


async def test_nothing_is_written_before_run_and_the_id_is_known_at_once(tmp_path: Path) -> None:
    directory = tmp_path / "fern"
    agent = Agent(directory, ScriptedProvider(), persona=Persona(name="Fern"))
    assert agent.id and not directory.exists()
    async with agent:
        info = msgspec.json.decode((directory / "agent.json").read_bytes())
        assert info["agent_id"] == agent.id
        assert "name: Fern" in (directory / "persona.md").read_text()
    again = Agent(directory, ScriptedProvider())
    assert again.id == agent.id and again.persona.name == "Fern"


async def test_a_second_agent_on_the_same_directory_is_refused(tmp_path: Path) -> None:
    provider = ScriptedProvider()
    async with Agent(tmp_path, provider) as first:
        second = Agent(tmp_path, provider)
        assert second.id == first.id
        with pytest.raises(AgentLockedError) as caught:
            async with second:
                pass
        error = caught.value
        assert isinstance(error, ConfigurationError)
        assert error.directory == str(tmp_path) and error.pid == os.getpid()
        assert str(tmp_path) in str(error) and str(os.getpid()) in str(error)
        assert first.sessions == {}  # the refused one touched nothing
        await first.open_session("still mine")
    async with second:  # free again once the first stopped
        assert second.memory.facts() == []


def damage(path: Path) -> None:
    path.write_bytes(path.read_bytes()[:-7])  # cut short, as a full disk or a bad copy does


async def test_a_damaged_agent_json_names_the_file(tmp_path: Path) -> None:
    async with Agent(tmp_path, ScriptedProvider()):
        pass
    damage(tmp_path / "agent.json")
    with pytest.raises(ConfigurationError, match=str(tmp_path / "agent.json")):
        Agent(tmp_path, ScriptedProvider())


async def test_a_damaged_schedules_json_names_the_file(tmp_path: Path) -> None:
    async with Agent(tmp_path, ScriptedProvider()) as agent:
        agent.scheduler.add(Wakeup(id="w", trigger=Every(seconds=60), text="hi"))
    damage(tmp_path / "schedules.json")
    with pytest.raises(ConfigurationError, match=str(tmp_path / "schedules.json")):
        async with Agent(tmp_path, ScriptedProvider()):
            pass


async def damage_the_ledger(directory: Path, scripted: OpenAIWireServer) -> bytes:
    """An Agent that learned three facts, then its ledger's second line garbled; returns
    the ledger as it was."""
    provider = scripted.provider(timeout=5.0)
    async with provider, Agent(directory, provider) as agent:
        session = await agent.open_session("facts")
        for text in ("I am a nurse", "I live in Porto", "I keep bees"):
            await session.send(text)
        await session.close()
    ledger = directory / "memory" / "ledger.jsonl"
    whole = ledger.read_bytes()
    lines = whole.splitlines(keepends=True)
    ledger.write_bytes(lines[0] + b"{garbled\n" + b"".join(lines[2:]))
    return whole


async def test_start_up_errors_reach_the_caller_as_themselves(
    tmp_path: Path, scripted: OpenAIWireServer, provider: OpenAIProvider
) -> None:
    await damage_the_ledger(tmp_path, scripted)
    ledger = str(tmp_path / "memory" / "ledger.jsonl")
    with pytest.raises(JournalError) as caught:  # as `except JournalError`: not in a group
        async with Agent(tmp_path, provider):
            pass
    assert caught.value.path == ledger and caught.value.line == 2
    agent = Agent(tmp_path, provider)
    async with anyio.create_task_group() as group:
        with pytest.raises(JournalError, match=ledger):
            await group.start(agent.run)


async def test_run_can_be_retried_after_a_failed_start(
    tmp_path: Path, scripted: OpenAIWireServer, provider: OpenAIProvider
) -> None:
    whole = await damage_the_ledger(tmp_path, scripted)
    agent = Agent(tmp_path, provider)
    async with anyio.create_task_group() as group:
        with pytest.raises(JournalError):
            await group.start(agent.run)
    (tmp_path / "memory" / "ledger.jsonl").write_bytes(whole)  # restored from a backup
    async with agent:  # the same object starts now: lock released, memory reopened
        assert len(agent.memory.facts()) == 3
        session = await agent.open_session("more")
        assert (await session.send("hello")).text == "echo: hello"


def on_threads(monkeypatch: pytest.MonkeyPatch, target: str) -> list[bool]:
    """Spy on the function at ``target``: each call records whether it ran off the loop's
    thread (the real function still runs)."""
    module, name = target.rsplit(".", 1)
    real: Callable[..., Any] = getattr(__import__(module, fromlist=[name]), name)
    calls: list[bool] = []

    def spy(*args: Any, **kwargs: Any) -> Any:
        calls.append(threading.current_thread() is not threading.main_thread())
        return real(*args, **kwargs)

    monkeypatch.setattr(target, spy)
    return calls


async def test_persona_and_schedule_files_are_written_off_the_event_loop(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    personas = on_threads(monkeypatch, "xai.agent._agent.save_persona")
    schedules = on_threads(monkeypatch, "xai.agent._scheduler.write_atomic")
    async with Agent(tmp_path, ScriptedProvider()) as agent:
        await agent.set_persona(Persona(name="Fern", language="German"))
        assert "language: German" in (tmp_path / "persona.md").read_text()
        agent.scheduler.add(Wakeup(id="w", trigger=Every(seconds=3600), text="hi"))
        agent.scheduler.add(Wakeup(id="v", trigger=Every(seconds=7200), text="ho"))
        await agent.scheduler.flush()
        saved = msgspec.json.decode((tmp_path / "schedules.json").read_bytes())
        assert {s["wakeup"]["id"] for s in saved} == {"w", "v"}
        agent.scheduler.remove("v")
    saved = msgspec.json.decode((tmp_path / "schedules.json").read_bytes())
    assert [s["wakeup"]["id"] for s in saved] == ["w"]  # saved before the Agent stopped
    assert personas == [True] and schedules and all(schedules)
