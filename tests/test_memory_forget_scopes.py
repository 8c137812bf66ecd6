"""Selective forgetting (issue 29): ``forget`` takes a scope. ``fact``: the fact leaves search
and the prefix; ``evidence``: what was said goes with it (its evidence episodes leave the
search index), through the Agent, MCP and a restart. Real chromadb and MiniLM."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import msgspec
import pytest
from mcp import Client
from mcp_types import CallToolResult

from tests.session_helpers import extraction_responder, is_side_request, last_content
from xai._files import erased_mark
from xai.agent import Agent, AgentConfig
from xai.exceptions import FactForgottenError
from xai.mcp import agent_mcp_server
from xai.memory import (
    JUDGE_MARKER,
    LongTermMemory,
    MemoryConfig,
    MemoryHit,
    ScoredEpisode,
    ScoredFact,
)
from xai.messages import Episode, MemoryCandidate
from xai.providers import OpenAIProvider
from xai.testing import OpenAIWireServer, Reply, ScriptedProvider

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(120)]

SISTER = "My sister's name is Ana."
CAT = "My cat is called Miso."
OTHER = ["I had soup for lunch.", "The weather was rainy today.", "I am reading a novel."]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # the MCP SDK's in-memory transport


def echo(body: Mapping[str, Any]) -> Reply | None:
    if is_side_request(body) or last_content(body).startswith(JUDGE_MARKER):
        return None
    return Reply(text=f"You said: {last_content(body)}")


def rules() -> AgentConfig:
    return AgentConfig(memory=MemoryConfig(use_judge=False))


def data(result: CallToolResult) -> Any:
    assert not result.is_error, result.content
    structured = result.structured_content
    assert structured is not None
    return structured.get("result", structured)


def texts(hits: list[MemoryHit]) -> list[str]:
    return [h.fact.text if isinstance(h, ScoredFact) else h.episode.text for h in hits]


async def tell(memory: LongTermMemory, session: str, text: str) -> str:
    """``text`` said in ``session`` among small talk, proposed as a fact; the fact's id."""
    said = [
        Episode(id=f"{session}-{n}", session_id=session, turn=n, seq=n, origin="user",
                speaker="user", text=t, at=1_780_000_000.0 + n)
        for n, t in enumerate([*OTHER, text])
    ]  # fmt: skip
    await memory.record_episodes(said)
    candidate = MemoryCandidate(
        id=f"c-{session}", text=text, kind="fact", confidence=0.8, evidence=(said[-1].id,),
        session_id=session, created_at=said[-1].at,
    )  # fmt: skip
    (decision,) = await memory.adjudicate([candidate], session_id=session)
    return decision.facts[0].id


async def test_forget_with_evidence_removes_what_was_said(tmp_path: Path) -> None:
    async with Agent(tmp_path, ScriptedProvider([]), config=rules()) as agent:
        sister = await tell(agent.memory, "s1", SISTER)
        cat = await tell(agent.memory, "s2", CAT)
        assert SISTER in texts(await agent.memory.search("What is my sister's name?", 5))

        async with Client(agent_mcp_server(agent)) as client:
            reply = await client.call_tool("forget", {"fact_id": sister, "scope": "evidence"})
            assert data(reply)["decision"] == "forget"
            shown = data(await client.call_tool("search_memory", {"query": "sister's name"}))
            assert not any("Ana" in h["text"] for h in shown), shown
            history = {"query": "sister's name", "history": True, "k": 20}
            assert not any(
                "Ana" in h["text"] for h in data(await client.call_tool("search_memory", history))
            )
        await agent.forget(cat)  # the fact only: what was said stays searchable
        found = texts(await agent.memory.search("What is my sister's name?", 20))
        assert not any("Ana" in t for t in found), found
        cat_found = texts(await agent.memory.search("What is my cat called?", 5))
        assert CAT in cat_found  # the episode, not the fact
        assert not any(isinstance(h, ScoredFact) for h in await agent.memory.search("cat", 5))
        assert "Ana" not in await agent.memory.prefix("family")

    async with Agent(tmp_path, ScriptedProvider([]), config=rules()) as agent:  # a restart
        found = texts(await agent.memory.search("What is my sister's name?", 20))
        assert not any("Ana" in t for t in found), found
        forgets = [d for d in agent.memory.ledger() if d.kind == "forget"]
        assert [(d.facts[0].id, d.facts[0].forget_scope) for d in forgets] == [
            (sister, "evidence"),
            (cat, "fact"),
        ]


async def test_a_wider_scope_forgets_again_a_narrower_one_does_not(tmp_path: Path) -> None:
    async with LongTermMemory(tmp_path, config=MemoryConfig(use_judge=False)) as memory:
        fact = await tell(memory, "s1", SISTER)
        await memory.forget(fact)
        assert any(isinstance(h, ScoredEpisode) for h in await memory.search("sister", 20))
        await memory.forget(fact, scope="evidence")  # what was said goes now
        assert not any("Ana" in t for t in texts(await memory.search("sister", 20)))
        with pytest.raises(FactForgottenError):
            await memory.forget(fact, scope="evidence")
        with pytest.raises(FactForgottenError):
            await memory.forget(fact)
    assert [d.kind for d in memory.ledger()] == ["add", "forget", "forget"]


def files_holding(directory: Path, text: str) -> list[str]:
    """Every file under ``directory`` whose bytes hold ``text`` (binary files too: chromadb's
    sqlite, its ``-wal``, the HNSW segments), as it is or JSON-escaped."""
    forms = [text.encode(), msgspec.json.encode(text)[1:-1], json.dumps(text)[1:-1].encode()]
    return [
        str(p.relative_to(directory))
        for p in sorted(directory.rglob("*"))
        if p.is_file() and any(f in p.read_bytes() for f in forms)
    ]


SECRET = "My sister's name is Anastasia Quux, she lives in Ghent."


async def test_erase_leaves_the_sentence_in_no_file_of_the_agent(
    tmp_path: Path, openai_server: OpenAIWireServer, provider: OpenAIProvider
) -> None:
    openai_server.script.add_responder(extraction_responder)
    openai_server.script.add_responder(echo)
    async with Agent(tmp_path, provider, config=rules()) as agent:
        session = await agent.open_session("family")
        await session.send(SECRET)
        await session.send("I had soup for lunch.")
        await session.close()
        await agent.memory.flush_index()  # (else the Agent writes what its pass deferred ~2 s on)
        held = files_holding(tmp_path, SECRET)
        assert "memory/index/chroma.sqlite3" in held and "memory/ledger.jsonl" in held, held
        (fact,) = [f for f in agent.memory.facts() if "Anastasia" in f.text]
        decision = await agent.forget(fact.id, "the user asked", scope="erase")
        assert decision.facts[0].text == erased_mark(fact.text)
        assert decision.reason == "the user asked"
        assert files_holding(tmp_path, SECRET) == []
        assert files_holding(tmp_path, "Anastasia") == []
        found = texts(await agent.memory.search("What is my sister's name?", 20))
        assert not any("Anastasia" in t for t in found), found
        assert any("soup" in t for t in texts(await agent.memory.search("lunch", 5)))
        with pytest.raises(FactForgottenError):
            await agent.forget(fact.id, scope="evidence")
        later = await agent.open_session("more")  # the memory still writes after it
        await later.send("My cat is called Miso.")
        await later.close()
    assert files_holding(tmp_path, "Anastasia") == []
    async with Agent(tmp_path, provider, config=rules()) as agent:  # a restart replays it
        (erased,) = [d for d in agent.memory.ledger() if d.kind == "forget"]
        assert erased.facts[0].forget_scope == "erase"
        assert erased.facts[0].text.startswith("[erased sha256:")
        assert any("Miso" in f.text for f in agent.memory.facts())
        found = texts(await agent.memory.search("What is my sister's name?", 20))
        assert not any("Anastasia" in t for t in found), found
    assert files_holding(tmp_path, "Anastasia") == []


async def test_erase_through_mcp(tmp_path: Path) -> None:
    async with Agent(tmp_path, ScriptedProvider([]), config=rules()) as agent:
        sister = await tell(agent.memory, "s1", SISTER)
        async with Client(agent_mcp_server(agent)) as client:
            reply = await client.call_tool("forget", {"fact_id": sister, "scope": "erase"})
            assert data(reply)["decision"] == "forget"
            again = await client.call_tool("forget", {"fact_id": sister, "scope": "evidence"})
            assert data(again)["decision"] != "forget"  # already, with a wider scope
            shown = data(await client.call_tool("search_memory", {"query": "sister", "k": 20}))
            assert not any("Ana" in h["text"] for h in shown), shown
    assert files_holding(tmp_path, SISTER) == []
