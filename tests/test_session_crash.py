"""Kill -9 a process running a Session at several points, reopen it, carry on."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import anyio
import pytest

from tests.crash_helpers import kill_when
from tests.session_helpers import wire_problems
from xai.messages import AssistantMessage, ToolMessage, TurnStatus, UserMessage
from xai.providers import OpenAIProvider
from xai.session import Session, read_journal
from xai.session._records import JOURNAL_FILE
from xai.testing import Delay, OpenAIWireServer, Reply, ScriptedCall

pytestmark = pytest.mark.anyio


def lines(path: Path) -> list[str]:
    return path.read_text().split() if path.exists() else []


def run_child_until(
    tmp_path: Path, server: OpenAIWireServer, ready: Callable[[], bool], mode: str = "tools"
) -> None:
    """Start the child, wait until ``ready()``, then SIGKILL it."""
    kill_when("crash_child", [str(tmp_path), server.base_url, mode], ready, timeout=60)


async def reopen_and_continue(
    tmp_path: Path, provider: OpenAIProvider, server: OpenAIWireServer, answer: str
) -> Session:
    acked = lines(tmp_path / "acked.log")
    session = Session.reopen(tmp_path / "session", provider)
    restored = {m.id for m in session.history}
    assert set(acked) <= restored, "a message announced as committed was lost"
    server.push(Reply(text=answer))
    async with session:
        assert session.interrupted_turn
        outcome = await session.continue_turn()
    assert outcome.status is TurnStatus.COMPLETED and outcome.text == answer
    return session


@pytest.mark.backend_agnostic
async def test_kill_mid_stream(
    tmp_path: Path, openai_server: OpenAIWireServer, provider: OpenAIProvider
) -> None:
    openai_server.push(Reply(text="partial " * 200, chunk_chars=4, chunk_delay=0.01))

    def streaming_for_a_while() -> bool:
        requests = openai_server.chat_requests()
        return bool(requests) and time.time() - requests[0].received_at > 0.3

    await anyio.to_thread.run_sync(run_child_until, tmp_path, openai_server, streaming_for_a_while)
    session = await reopen_and_continue(tmp_path, provider, openai_server, "answer after the crash")
    history = session.history
    assert isinstance(history[0], UserMessage) and history[0].content == "go"
    # the partial stream was never announced as final, so it is not in the history
    assert [type(m).__name__ for m in history] == ["UserMessage", "AssistantMessage"]
    state = read_journal(tmp_path / "session" / JOURNAL_FILE)
    assert state.turns == 2 and state.open_turn is None


@pytest.mark.backend_agnostic
async def test_kill_mid_tool(
    tmp_path: Path, openai_server: OpenAIWireServer, provider: OpenAIProvider
) -> None:
    openai_server.push(
        Reply(
            text="running both",
            tool_calls=(
                ScriptedCall(name="fast", arguments={"n": 1}, id="call_fast"),
                ScriptedCall(name="slow", arguments={"n": 2}, id="call_slow"),
            ),
        )
    )

    def both_started() -> bool:
        return bool(lines(tmp_path / "slow.log")) and len(lines(tmp_path / "acked.log")) >= 2

    await anyio.to_thread.run_sync(run_child_until, tmp_path, openai_server, both_started)
    session = await reopen_and_continue(tmp_path, provider, openai_server, "done despite the crash")
    results = {m.tool_call_id: m for m in session.history if isinstance(m, ToolMessage)}
    assert results["call_fast"].content == "fast 1" and not results["call_fast"].synthetic
    assert results["call_slow"].synthetic and "interrupted" in results["call_slow"].content
    assert lines(tmp_path / "fast.log") == ["1"]  # the finished tool was not run again
    assert lines(tmp_path / "slow.log") == ["2"]
    # the request after the reopen was valid: every call had its result
    sent = openai_server.chat_requests()[-1].body["messages"]
    assert [m["role"] for m in sent] == ["user", "assistant", "tool", "tool"]


@pytest.mark.backend_agnostic
async def test_kill_between_rounds(
    tmp_path: Path, openai_server: OpenAIWireServer, provider: OpenAIProvider
) -> None:
    openai_server.push(
        Reply(tool_calls=(ScriptedCall(name="fast", arguments={"n": 7}, id="call_7"),)),
        Reply(fault=Delay(seconds=30)),  # holds the second request until the kill
    )
    await anyio.to_thread.run_sync(
        run_child_until, tmp_path, openai_server, lambda: len(openai_server.chat_requests()) >= 2
    )
    session = await reopen_and_continue(tmp_path, provider, openai_server, "final answer")
    assert [type(m).__name__ for m in session.history] == [
        "UserMessage",
        "AssistantMessage",
        "ToolMessage",
        "AssistantMessage",
    ]
    tool_result = session.history[2]
    assert isinstance(tool_result, ToolMessage) and not tool_result.synthetic
    assert lines(tmp_path / "fast.log") == ["7"]
    final = session.history[-1]
    assert isinstance(final, AssistantMessage) and final.content == "final answer"


async def test_kill_during_a_continued_turn(
    tmp_path: Path, openai_server: OpenAIWireServer, provider: OpenAIProvider
) -> None:
    """Killed in the first turn's tool, restarted, killed again in the continued turn's
    tool: the reopened Session answers both calls and every request it sends is valid
    (old: the continued turn left no record of its start, so nothing repaired it)."""
    openai_server.push(Reply(tool_calls=(ScriptedCall(name="slow", arguments={"n": 1}, id="s1"),)))
    await anyio.to_thread.run_sync(
        run_child_until, tmp_path, openai_server, lambda: lines(tmp_path / "slow.log") == ["1"]
    )
    openai_server.push(Reply(tool_calls=(ScriptedCall(name="slow", arguments={"n": 2}, id="s2"),)))
    await anyio.to_thread.run_sync(
        run_child_until,
        tmp_path,
        openai_server,
        lambda: lines(tmp_path / "slow.log") == ["1", "2"],
        "continue",
    )
    openai_server.push(Reply(text="after two crashes"))
    async with Session.reopen(tmp_path / "session", provider) as session:
        outcome = await session.send("still there?")
    for request in openai_server.chat_requests():
        assert wire_problems(request.body["messages"]) == []
    assert outcome.text == "after two crashes" and outcome.turn == 3
    answers = {m.tool_call_id: m for m in session.history if isinstance(m, ToolMessage)}
    assert answers["s1"].synthetic and answers["s2"].synthetic
    assert lines(tmp_path / "slow.log") == ["1", "2"]  # neither ran again


@pytest.mark.backend_agnostic
async def test_kill_with_inputs_waiting(
    tmp_path: Path, openai_server: OpenAIWireServer, provider: OpenAIProvider
) -> None:
    """Every input ``send()`` accepted before the kill is answered after the restart, once
    (old: the two waiting inputs were lost)."""
    openai_server.push(
        Reply(tool_calls=(ScriptedCall(name="slow", arguments={"n": 1}, id="s1"),)),
        Reply(text="second answered"),
        Reply(text="third answered"),
    )
    await anyio.to_thread.run_sync(
        run_child_until,
        tmp_path,
        openai_server,
        lambda: bool(lines(tmp_path / "slow.log")) and len(lines(tmp_path / "accepted.log")) == 3,
        "inputs",
    )
    accepted = lines(tmp_path / "accepted.log")
    session = Session.reopen(tmp_path / "session", provider)
    async with session:
        outcomes = [await handle for handle in session.requeued]
    assert [o.text for o in outcomes] == ["second answered", "third answered"]
    inputs = [m.id for m in session.history if isinstance(m, UserMessage)]
    assert inputs == accepted  # each acknowledged input, once, in order
    for request in openai_server.chat_requests():
        assert wire_problems(request.body["messages"]) == []
