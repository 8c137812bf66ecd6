"""Episodes: an Agent keeps what was said in its Sessions (inputs and answers), as evidence.

Recorded when a Session closes, from its transcript (compacted turns included);
on start, from every closed journal the memory does not have yet (a kill before
the record, or a directory written before episodes existed).
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from tests.session_helpers import extraction_responder, is_side_request, last_content
from xai.agent import Agent, AgentConfig
from xai.memory import EpisodeStore
from xai.messages import Episode, UserMessage
from xai.providers import OpenAIProvider
from xai.session import read_journal
from xai.session._journal import append_records
from xai.session._records import CompactedRecord
from xai.testing import OpenAIWireServer, Reply

pytestmark = pytest.mark.anyio


def recommends(body: Mapping[str, Any]) -> Reply | None:
    if is_side_request(body):
        return None
    return Reply(text=f"I recommend green tea for: {last_content(body)}")


@pytest.fixture
def scripted(openai_server: OpenAIWireServer) -> OpenAIWireServer:
    openai_server.script.add_responder(extraction_responder)
    openai_server.script.add_responder(recommends)
    return openai_server


async def test_a_closed_session_leaves_every_input_and_answer_as_episodes(
    tmp_path: Path, scripted: OpenAIWireServer, provider: OpenAIProvider
) -> None:
    before = time.time()
    async with Agent(tmp_path, provider, config=AgentConfig(memory_tool=False)) as agent:
        session = await agent.open_session("drinks")
        await session.send(UserMessage(content="what should I drink tonight?", name="Ann"))
        await session.send("something without caffeine")
        await session.send(UserMessage(content="a story", at=1_000.0, origin="agent"))
        await session.close()
        episodes = agent.memory.episodes.in_session(session.id)
    assert [(e.origin, e.speaker, e.turn, e.seq) for e in episodes] == [
        ("user", "Ann", 1, 0),
        ("assistant", "assistant", 1, 1),
        ("user", "user", 2, 2),
        ("assistant", "assistant", 2, 3),
        ("agent", "agent", 3, 4),
        ("assistant", "assistant", 3, 5),
    ]
    assert episodes[1].text == "I recommend green tea for: what should I drink tonight?"
    assert episodes[4].at == 1_000.0  # a time given with the input is kept
    assert all(before <= e.at <= time.time() for i, e in enumerate(episodes) if i != 4)
    assert {e.session_id for e in episodes} == {session.id}
    # On disk, and read back the same by a new Agent.
    async with Agent(tmp_path, provider, config=AgentConfig(memory_tool=False)) as agent:
        assert agent.memory.episodes.in_session(session.id) == episodes


async def test_the_transcript_keeps_turns_compaction_removed(
    tmp_path: Path, scripted: OpenAIWireServer, provider: OpenAIProvider
) -> None:
    async with Agent(tmp_path, provider, config=AgentConfig(memory_tool=False)) as agent:
        session = await agent.open_session("long talk")
        for text in ("one", "two", "three"):
            await session.send(text)
        assert session.directory is not None
        journal = session.directory / "journal.jsonl"
        live = list(session._transcript.episodes)
        append_records(journal, CompactedRecord(summary="earlier", removed=4, method="summary"))
        state = read_journal(journal)
        assert len(state.history) == 2 and state.episodes == live
        await session.close()


async def test_episodes_missing_from_memory_are_recorded_from_the_journals_on_start(
    tmp_path: Path, scripted: OpenAIWireServer, provider: OpenAIProvider
) -> None:
    """A kill between a Session's close and the record, or a directory written before
    episodes existed: the journals are the truth, and the next start catches up."""
    async with Agent(tmp_path, provider, config=AgentConfig(memory_tool=False)) as agent:
        session = await agent.open_session("drinks")
        await session.send("what should I drink?")
        await session.close()
        kept = agent.memory.episodes.in_session(session.id)
    assert len(kept) == 2
    (tmp_path / "memory" / "episodes.jsonl").unlink()
    # (nor the list of Sessions completely done, which names it only once its episodes were in)
    (tmp_path / "sessions" / "closed.list").unlink()
    # A journal in the format of xai before episodes: messages without times.
    assert session.directory is not None
    journal = session.directory / "journal.jsonl"
    lines = [json.loads(line) for line in journal.read_text().splitlines()]
    for line in lines:
        if "message" in line:
            line["message"].pop("at", None)
    journal.write_text("".join(json.dumps(line) + "\n" for line in lines))
    async with Agent(tmp_path, provider, config=AgentConfig(memory_tool=False)) as agent:
        again = agent.memory.episodes.in_session(session.id)
        created = read_journal(journal).header.created_at
    assert [(e.id, e.text, e.origin) for e in again] == [(e.id, e.text, e.origin) for e in kept]
    assert {e.at for e in again} == {created}  # no time in the journal: the Session's start


async def test_a_torn_episode_line_is_cut_and_recording_is_idempotent(tmp_path: Path) -> None:
    path = tmp_path / "episodes.jsonl"
    one = Episode(
        id="m1", session_id="s", turn=1, seq=0, origin="user", speaker="user", text="hi", at=1.0
    )
    two = Episode(
        id="m2", session_id="s", turn=1, seq=1, origin="assistant", speaker="assistant",
        text="hello", at=2.0,
    )  # fmt: skip
    store = await EpisodeStore.open(path)
    assert [e.id for e in await store.record([one, two, one])] == ["m1", "m2"]
    assert await store.record([two]) == []
    store.close()
    with path.open("ab") as f:
        f.write(b'{"id": "m3", "session_id": "s", "tu')  # a kill mid-write
    store = await EpisodeStore.open(path)
    assert [e.id for e in store] == ["m1", "m2"] and len(store) == 2
    assert [e.id for e in await store.record([one, two])] == []
    store.close()
    assert path.read_bytes().endswith(b"}\n")
