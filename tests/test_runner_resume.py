"""``--resume`` after a crash: the checkpoint is a real Session journal copied at the moment
a kill would have left it (fsync on every commit, so the file is what the disk holds).

The resumed run continues only a turn the crash interrupted, never sends the model an
unanswered tool call, and its trace says what happened: a turn a crash interrupted
counts its ``interruptions``, results xai made up are ``synthetic``, and a turn with a
tool call that never got a result is not reported as a success."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import anyio
import pytest

from xai.messages import TurnStatus
from xai.providers import OpenAIProvider
from xai.runner import run_input, validate_input
from xai.session import JOURNAL_FILE, Session, SessionConfig, SystemPrompt
from xai.testing import HttpError, OpenAIWireServer, RecordedRequest, Reply, ScriptedCall
from xai.tools import tool

pytestmark = pytest.mark.anyio

CONFIG = SessionConfig(fsync="commit", extract_memory=False)


def checkpoint(tmp_path: Path) -> Path:
    return tmp_path / "out" / ".checkpoint" / "session"


async def crash_during_tool(
    source: Path, target: Path, provider: OpenAIProvider, server: OpenAIWireServer, text: str | None
) -> None:
    """Run a turn (``text``, or a continuation of the journal in ``source`` when None) whose
    tool blocks, and copy the journal to ``target`` while the tool runs: a kill there."""
    started, release = anyio.Event(), anyio.Event()

    @tool
    async def slow_lookup() -> str:
        """Look something up slowly."""
        started.set()
        await release.wait()
        return "found"

    server.push(Reply(tool_calls=(ScriptedCall(name="slow_lookup"),)), Reply(text="(unused)"))
    if text is None:
        session = Session.reopen(source, provider, tools=[slow_lookup], config=CONFIG)
    else:
        session = Session(
            provider,
            tools=[slow_lookup],
            config=CONFIG,
            system=SystemPrompt(instructions="You look things up."),
            directory=source,
            session_id="c1",
        )
    async with session:
        handle = session.send(text) if text is not None else session.continue_turn()
        await started.wait()  # the Session waits in the tool: the journal stays as it is
        await anyio.to_thread.run_sync(shutil.copytree, source, target)
        release.set()
        await handle


def unanswered_calls(request: RecordedRequest) -> list[str]:
    """Tool calls in a request that no tool message answers (an invalid request)."""
    called: list[str] = []
    answered: set[str] = set()
    for message in request.body["messages"]:
        called += [c["id"] for c in message.get("tool_calls") or []]
        if message.get("role") == "tool":
            answered.add(message["tool_call_id"])
    return [c for c in called if c not in answered]


async def resume(
    tmp_path: Path, provider: OpenAIProvider, inputs: list[str]
) -> tuple[dict[str, Any], Any]:
    inp = validate_input(
        {"conversation_id": "c1", "user_inputs": inputs, "toolset": "none"}, tmp_path
    )
    report = await run_input(inp, tmp_path / "out", resume=True, home=tmp_path, provider=provider)
    return json.loads((tmp_path / "out" / "trace.json").read_text()), report


async def test_a_crash_during_a_tool_call_is_repaired_and_reported(
    tmp_path: Path, openai_server: OpenAIWireServer, provider: OpenAIProvider
) -> None:
    await crash_during_tool(tmp_path / "live", checkpoint(tmp_path), provider, openai_server, "q")
    before = len(openai_server.chat_requests())
    openai_server.push(Reply(text="The answer."))
    trace, report = await resume(tmp_path, provider, ["q"])
    after = openai_server.chat_requests()[before:]
    assert len(after) == 1 and unanswered_calls(after[0]) == []
    assert report.status == "success" and trace["checkpoint"]["interrupted_turns"] == [1]
    (turn,) = trace["turns"]
    assert turn["status"] == "completed" and turn["interruptions"] == 1
    assert turn["answer"] == "The answer."
    (call,) = turn["tool_calls"]
    assert call["name"] == "slow_lookup" and call["synthetic"] is True
    assert call["success"] is False and "interrupted" in call["result"]


async def test_a_crash_in_a_continued_turn_is_never_reported_as_a_clean_success(
    tmp_path: Path, openai_server: OpenAIWireServer, provider: OpenAIProvider
) -> None:
    first, second = tmp_path / "first", tmp_path / "second"
    await crash_during_tool(tmp_path / "live", first, provider, openai_server, "q")
    # The first resume continued the turn, and the process died again during a tool call.
    await crash_during_tool(first, second, provider, openai_server, None)
    shutil.copytree(second, checkpoint(tmp_path))
    before = len(openai_server.chat_requests())
    openai_server.push(Reply(text="The answer."))
    trace, report = await resume(tmp_path, provider, ["q"])
    after = openai_server.chat_requests()[before:]
    assert all(unanswered_calls(r) == [] for r in after), "a request carried an unanswered call"
    (turn,) = trace["turns"]
    if report.status == "success":  # the Session repaired the continued turn and went on
        assert turn["interruptions"] == 2 and turn["answer"] == "The answer."
        assert all(c["result"] is not None for c in turn["tool_calls"])
    else:  # the call was left unanswered: the trace says so
        assert turn["status"] == TurnStatus.INTERRUPTED.value
        assert "never got a result" in turn["error"]
        assert trace["status"] == "failed"


async def test_a_turn_that_ended_in_an_error_is_not_run_again(
    tmp_path: Path, openai_server: OpenAIWireServer, provider: OpenAIProvider
) -> None:
    """The process died after turn 1 ended (with an error), before turn 2 began: resume sends
    turn 2's input and nothing else."""
    source = tmp_path / "live"
    openai_server.push(Reply(fault=HttpError(status=400, message="bad request")))
    session = Session(provider, config=CONFIG, directory=source, session_id="c1")
    async with session:
        outcome = await session.send("first")
        assert outcome.status is TurnStatus.ERROR
        shutil.copytree(source, checkpoint(tmp_path))
    assert (checkpoint(tmp_path) / JOURNAL_FILE).is_file()
    before = len(openai_server.chat_requests())
    openai_server.push(Reply(text="second answer"))
    trace, _ = await resume(tmp_path, provider, ["first", "second"])
    after = openai_server.chat_requests()[before:]
    assert [r.body["messages"][-1]["content"] for r in after] == ["second"]
    assert trace["checkpoint"]["resumed_from_turn"] == 1
    assert [t["status"] for t in trace["turns"]] == ["error", "completed"]
    assert trace["status"] == "failed" and "bad request" in trace["error"]
