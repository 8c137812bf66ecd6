"""An Agent process killed with -9 comes back with its memory and its open Sessions."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from tests.crash_helpers import kill_when
from tests.session_helpers import extraction_responder
from tests.test_agent import echo, judge_adds
from xai.agent import Agent
from xai.messages import UserMessage
from xai.providers import OpenAIProvider
from xai.testing import OpenAIWireServer

pytestmark = [pytest.mark.anyio, pytest.mark.backend_agnostic]


async def test_restart_restores_memory_and_resumable_sessions(
    tmp_path: Path, openai_server: OpenAIWireServer, provider: OpenAIProvider
) -> None:
    for responder in (extraction_responder, judge_adds, echo):
        openai_server.script.add_responder(responder)
    await anyio.to_thread.run_sync(run_child_until_it_learned, tmp_path, openai_server.base_url)
    session_id = (tmp_path / "learned").read_text()

    async with Agent(tmp_path / "agent", provider) as agent:
        assert [f.text for f in agent.memory.facts()] == ["The user said: My name is Ada"]
        session = agent.session(session_id)  # reopened from its journal
        assert [m.content for m in session.history if isinstance(m, UserMessage)] == [
            "My name is Ada"
        ]
        outcome = await session.send("And again")
        assert outcome.text == "echo: And again"
        assert session.turns == 2


def run_child_until_it_learned(tmp_path: Path, base_url: str) -> None:
    kill_when("agent_crash_child", [str(tmp_path), base_url], (tmp_path / "learned").exists)
