"""Every request xai sends has an output cap, so a runaway model cannot run for minutes.

A small model behind llama.cpp, asked with no ``max_tokens``, wrote 16k
characters over 400 s in one Agent turn; memory extraction after it then broke.
An Agent's turns are capped by default (``AGENT_TURN_MAX_TOKENS``), and the
extraction, judge and summary requests each have a cap of their own.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from tests.session_helpers import (
    extraction_responder,
    is_side_request,
    last_content,
    summary_responder,
)
from xai.agent import AGENT_TURN_MAX_TOKENS, Agent, AgentConfig
from xai.memory import JUDGE_MARKER, MemoryConfig
from xai.providers import OpenAIProvider
from xai.query import QueryConfig
from xai.session import COMPACTION_MARKER, EXTRACTION_MARKER, Session, SessionConfig
from xai.testing import OpenAIWireServer, Reply, Rule

pytestmark = pytest.mark.anyio

RUNAWAY = Reply(text="and then " * 2_000, chunk_chars=400)  # a long streamed answer


def judge_adds(body: Mapping[str, Any]) -> Reply | None:
    if last_content(body).startswith(JUDGE_MARKER):
        return Reply(text='{"decision": "add", "reason": "new"}')
    return None


def caps(server: OpenAIWireServer) -> dict[str, set[Any]]:
    """The ``max_tokens`` each kind of request carried."""
    found: dict[str, set[Any]] = {}
    for request in server.chat_requests():
        text = last_content(request.body)
        kind = next(
            (
                name
                for name, marker in (
                    ("extraction", EXTRACTION_MARKER),
                    ("judge", JUDGE_MARKER),
                    ("summary", COMPACTION_MARKER),
                )
                if text.startswith(marker)
            ),
            "turn",
        )
        found.setdefault(kind, set()).add(request.body.get("max_tokens"))
    return found


async def test_an_agent_turn_extraction_and_judge_each_carry_a_cap(
    tmp_path: Path, openai_server: OpenAIWireServer, provider: OpenAIProvider
) -> None:
    openai_server.add_rule(Rule(contains="tell me everything", reply=RUNAWAY, times=1))
    openai_server.script.add_responder(extraction_responder)
    openai_server.script.add_responder(judge_adds)
    openai_server.script.add_responder(
        lambda body: None if is_side_request(body) else Reply(text="Noted.")
    )
    # Every second fact goes to the judge; the Session config is the Agent's default.
    config = AgentConfig(memory=MemoryConfig(novel_similarity=0.01, duplicate_similarity=0.999))
    async with Agent(tmp_path, provider, config=config) as agent:
        session = await agent.open_session("chat")
        await session.send("I keep bees; tell me everything about them")
        await session.send("I also keep hens")
        await session.close()
    found = caps(openai_server)
    assert found["turn"] == {AGENT_TURN_MAX_TOKENS}
    assert found["extraction"] == {SessionConfig().extraction_max_tokens}
    assert found["judge"] == {MemoryConfig().judge_max_tokens}


async def test_a_compaction_summary_carries_its_cap(
    openai_server: OpenAIWireServer, provider: OpenAIProvider
) -> None:
    openai_server.script.add_responder(summary_responder("short summary"))
    openai_server.script.add_responder(
        lambda body: None if is_side_request(body) else Reply(text="ok " + "w" * 300)
    )
    config = SessionConfig(context_window=400, keep_recent_tokens=100)
    async with Session(provider, config=config) as session:
        for i in range(4):
            await session.send(f"message {i} " + "v" * 200)
    assert caps(openai_server)["summary"] == {config.summary_max_tokens}


async def test_every_session_an_agent_runs_has_a_turn_cap(
    tmp_path: Path, openai_server: OpenAIWireServer, provider: OpenAIProvider
) -> None:
    # `xai mcp serve` and the eval's `xai` backend built `SessionConfig(extract_memory=True)`,
    # which has no cap: their turns ran uncapped. The Agent now caps whatever it is given.
    openai_server.script.add_responder(
        lambda body: None if is_side_request(body) else Reply(text="Noted.")
    )
    config = AgentConfig(session=SessionConfig(extract_memory=False))
    assert config.session.query.max_tokens == AGENT_TURN_MAX_TOKENS
    async with Agent(tmp_path, provider, config=config) as agent:
        first = await agent.open_session("chat")
        await first.send("hello")
        second = await agent.open_session("chat", config=SessionConfig(extract_memory=False))
        await second.send("hello again")
        chosen = SessionConfig(query=QueryConfig(max_tokens=64), extract_memory=False)
        third = await agent.open_session("chat", config=chosen)
        await third.send("and again")
    assert [r.body.get("max_tokens") for r in openai_server.chat_requests()] == [
        AGENT_TURN_MAX_TOKENS,
        AGENT_TURN_MAX_TOKENS,
        64,
    ]
