"""A reopened Session repairs every tool call left without a result, wherever it is in the
history, and never sends a request that carries one.

The crashes here are made in-process the way the docs show: a tool copies the Session's
directory while the Session is mid-turn, which is exactly what a kill -9 at that moment
leaves on disk (the kill -9 versions are in ``test_session_crash.py``).
"""

from __future__ import annotations

import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import anyio
import msgspec
import pytest
from structlog.testing import capture_logs

from tests.session_helpers import (
    history_problems,
    is_side_request,
    journal_as_written,
    last_content,
    summary_responder,
)
from xai.messages import AssistantMessage, ToolMessage, TurnStatus, UserMessage
from xai.session import JOURNAL_FILE, Session, SessionConfig, read_journal
from xai.session._journal import read_records
from xai.session._records import CompactedRecord, MessageRecord, TurnStartRecord
from xai.testing import Reply, ScriptedCall, ScriptedProvider
from xai.tools import Tool, tool

pytestmark = pytest.mark.anyio


def snapshotting(live: Path, copies: Path) -> tuple[Tool, list[anyio.Event]]:
    """A tool ``freeze(name)`` that copies ``live`` to ``copies/name`` and never returns."""
    taken: list[anyio.Event] = [anyio.Event()]

    @tool
    async def freeze(name: str) -> str:
        """Copies the journal, then waits for ever."""
        await anyio.to_thread.run_sync(shutil.copytree, live, copies / name)
        taken[-1].set()
        await anyio.sleep_forever()
        return "never"

    return freeze, taken


def freeze_call(name: str, call_id: str) -> Reply:
    return Reply(tool_calls=(ScriptedCall(name="freeze", arguments={"name": name}, id=call_id),))


def answer_everything(body: Mapping[str, Any]) -> Reply | None:
    if is_side_request(body):
        return None
    return Reply(text=f"answer to {last_content(body)[:20]}")


async def run_until_frozen(session: Session, taken: list[anyio.Event], start: Any) -> None:
    """Start a turn (``start(session)``), wait until the tool took its copy, then stop the
    Session (the copy is the "crashed" state)."""
    async with session:
        start(session)
        await taken[-1].wait()
        taken.append(anyio.Event())
        await session.close("cancelled")


async def test_a_crash_during_a_continued_turn_is_repaired(tmp_path: Path) -> None:
    """Old: a continued turn journaled no start, so after a crash in it the reopened history
    kept the call unanswered and every later request carried it."""
    live = tmp_path / "live"
    freeze, taken = snapshotting(live, tmp_path)
    provider = ScriptedProvider([freeze_call("first", "c1")])
    await run_until_frozen(
        Session(provider, tools=[freeze], directory=live), taken, lambda s: s.send("go")
    )

    # The first crash: reopen it, continue the turn, and crash again inside the continued turn.
    shutil.rmtree(live)
    shutil.copytree(tmp_path / "first", live)
    provider = ScriptedProvider([freeze_call("second", "c2")])
    reopened = Session.reopen(live, provider, tools=[freeze])
    await run_until_frozen(reopened, taken, lambda s: s.continue_turn())
    records = read_records(tmp_path / "second" / JOURNAL_FILE)
    assert TurnStartRecord(turn=2) in records  # the continued turn's start is on disk

    provider = ScriptedProvider()
    provider.script.add_responder(answer_everything)
    crashed = Session.reopen(tmp_path / "second", provider, tools=[freeze])
    async with crashed:
        outcome = await crashed.send("and now?")
    (request,) = provider.requests
    assert history_problems(request.messages) == []
    assert outcome.status is TurnStatus.COMPLETED and outcome.turn == 3  # no turn number reused
    answers = {m.tool_call_id: m for m in crashed.history if isinstance(m, ToolMessage)}
    assert answers["c1"].synthetic and answers["c2"].synthetic
    state = read_journal(tmp_path / "second" / JOURNAL_FILE)
    assert history_problems(state.history) == [] and state.history == list(crashed.history)
    assert state.turns == 3 and state.open_turn is None


async def test_a_missing_tool_result_line_is_repaired_where_it_belongs(tmp_path: Path) -> None:
    """A journal whose tool-result line is gone (valid JSON elsewhere): the reopened Session
    says so and answers the call right after its sibling result, before the next message;
    the repair is journaled, so every later replay (compaction included) agrees."""
    provider = ScriptedProvider(
        [
            Reply(
                tool_calls=(
                    ScriptedCall(name="echo_tool", arguments={"text": "a"}, id="ca"),
                    ScriptedCall(name="echo_tool", arguments={"text": "b"}, id="cb"),
                )
            ),
            Reply(text="both done"),
            Reply(text="second turn"),
        ]
    )

    @tool
    def echo_tool(text: str) -> str:
        """Echoes."""
        return text

    async with Session(provider, tools=[echo_tool], directory=tmp_path) as session:
        await session.send("use the tool twice")
        await session.send("thanks")
    path = tmp_path / JOURNAL_FILE
    lines = path.read_bytes().splitlines(keepends=True)
    (lost,) = [
        i
        for i, line in enumerate(lines)
        if b'"role":"tool"' in line and b'"tool_call_id":"ca"' in line
    ]
    path.write_bytes(b"".join(lines[:lost] + lines[lost + 1 :]))

    provider = ScriptedProvider()
    provider.script.add_responder(summary_responder())
    provider.script.add_responder(answer_everything)
    config = SessionConfig(context_window=2_000, keep_recent_tokens=100, compact_at=0.1)
    with capture_logs() as logs:
        reopened = Session.reopen(tmp_path, provider, tools=[echo_tool], config=config)
        async with reopened:
            repaired = list(reopened.history)
            await reopened.send("one more " + "x" * 2000)  # compacts first
    assert [e["event"] for e in logs if e["log_level"] == "warning"][:1] == [
        "session.history_repaired"
    ]
    roles = [(type(m).__name__, getattr(m, "tool_call_id", "")) for m in repaired]
    assert roles == [
        ("UserMessage", ""),
        ("AssistantMessage", ""),
        ("ToolMessage", "cb"),
        ("ToolMessage", "ca"),  # the synthetic answer, before the turn's final message
        ("AssistantMessage", ""),
        ("UserMessage", ""),
        ("AssistantMessage", ""),
    ]
    synthetic = repaired[3]
    assert isinstance(synthetic, ToolMessage) and synthetic.synthetic and synthetic.is_error
    for request in provider.requests:
        assert history_problems(request.messages) == []
    assert any(isinstance(r, CompactedRecord) for r in read_records(path))
    # the replayed journal (repair and compaction) is the live history, and valid
    assert read_journal(path).history == list(reopened.history)
    assert history_problems(read_journal(path).history) == []
    # and a second reopen finds nothing left to repair
    with capture_logs() as logs:
        async with Session.reopen(tmp_path, provider, tools=[echo_tool], config=config):
            pass
    assert "session.history_repaired" not in [e["event"] for e in logs]


async def test_orphan_and_duplicate_tool_results_are_left_out_of_the_replay(
    tmp_path: Path,
) -> None:
    async with Session(ScriptedProvider([Reply(text="hi")]), directory=tmp_path) as session:
        await session.send("hello")
    path = tmp_path / JOURNAL_FILE
    orphan = ToolMessage(tool_call_id="nobody", tool_name="x", content="?")
    with path.open("ab") as f:
        f.write(msgspec.json.encode(MessageRecord(turn=1, message=orphan)) + b"\n")
    with capture_logs() as logs:
        state = read_journal(path)
    assert [type(m) for m in state.history] == [UserMessage, AssistantMessage]
    assert "journal.tool_result_left_out" in [e["event"] for e in logs]
    assert journal_as_written(path)[-1] == orphan  # the file itself is kept as it was
