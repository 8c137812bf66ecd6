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

from xai.messages import (
    AssistantMessage,
    ToolCall,
    TurnOutcome,
    TurnStatus,
    UserMessage,
)
from xai.providers import OpenAIProvider
from xai.runner import run_input, validate_input
from xai.runner._trace import turns_of
from xai.session import (
    JOURNAL_FILE,
    FinalizingContext,
    Session,
    SessionConfig,
    SystemPrompt,
    TurnView,
    read_journal,
)
from xai.testing import (
    HttpError,
    OpenAIWireServer,
    RecordedRequest,
    Reply,
    ScriptedCall,
    demo_model,
)
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
    # The continued turn's start is journaled: the Session repaired it and the run went on.
    assert len(after) == 1 and report.status == "success"
    assert trace["checkpoint"]["interrupted_turns"] == [1]
    (turn,) = trace["turns"]
    assert turn["status"] == "completed" and turn["interruptions"] == 2
    assert turn["answer"] == "The answer."
    assert [c["synthetic"] for c in turn["tool_calls"]] == [True, True]
    assert all(c["result"] is not None for c in turn["tool_calls"])


def test_an_unanswered_call_makes_the_turn_interrupted_and_the_run_failed() -> None:
    """Whatever journal the trace is built from, a call with no result is no success."""
    call = ToolCall(id="c1", name="slow_lookup", arguments="{}")
    recorded = TurnView(
        turn=1,
        input=UserMessage(content="q"),
        messages=[AssistantMessage(content="", tool_calls=(call,))],
        outcomes=[TurnOutcome(turn=1, status=TurnStatus.COMPLETED)],
    )
    (turn,) = turns_of([recorded])
    assert turn.status is TurnStatus.INTERRUPTED and turn.error is not None
    assert "c1" in turn.error and turn.tool_calls[0].success is False


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


async def test_a_session_that_was_closing_only_hands_over_its_candidates(
    tmp_path: Path, openai_server: OpenAIWireServer, provider: OpenAIProvider
) -> None:
    """The run stopped while its Session closed and nobody had taken its memory candidates
    (the journal says ``closing``): resume sends nothing, the Agent decides them, and the
    trace says which inputs were never sent."""
    openai_server.script.add_responder(demo_model)
    source = tmp_path / "live"

    def lost_owner(context: FinalizingContext) -> None:
        raise RuntimeError("the owner died before taking the candidates")

    session = Session(
        provider,
        config=SessionConfig(fsync="commit", extract_memory=True),
        directory=source,
        session_id="c1",
    )
    async with session:
        session.on_session_finalizing.append(lost_owner)
        await session.send("Hi, I'm Ada!")  # then the run was cancelled, before input 2
    assert read_journal(source / JOURNAL_FILE).closing == "closed"
    await anyio.to_thread.run_sync(shutil.copytree, source, checkpoint(tmp_path))
    before = len(openai_server.chat_requests())
    inp = validate_input(
        {
            "conversation_id": "c1",
            "user_inputs": ["Hi, I'm Ada!", "What is my name?"],
            "toolset": "none",
            "save_memory": "conversation",
        },
        tmp_path,
    )
    report = await run_input(inp, tmp_path / "out", resume=True, home=tmp_path, provider=provider)
    assert openai_server.chat_requests()[before:] == []  # nothing sent again
    trace = json.loads((tmp_path / "out" / "trace.json").read_text())
    assert [d["decision"] for d in trace["memory"]["decisions"]] == ["add"]
    assert report.status == "failed" and "input(s) 2 not sent" in (report.error or "")
    assert trace["multi_turn"] == {"inputs": 2, "processed": 1}
