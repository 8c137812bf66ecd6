"""The journal file format: round trip, torn tails, corruption."""

from __future__ import annotations

from pathlib import Path

import pytest
from structlog.testing import capture_logs

from xai.exceptions import JournalError
from xai.messages import (
    AssistantMessage,
    ToolCall,
    ToolMessage,
    TurnOutcome,
    TurnStatus,
    Usage,
    UserMessage,
)
from xai.session import (
    AcceptedRecord,
    ClosedRecord,
    ClosingRecord,
    CompactedRecord,
    DroppedRecord,
    HeaderRecord,
    InputRecord,
    MessageRecord,
    SystemPrompt,
    TurnEndRecord,
    TurnStartRecord,
    read_journal,
)
from xai.session._journal import Journal, append_records


def write_basic(path: Path) -> Journal:
    journal = Journal(path, fsync="off")
    journal.append(HeaderRecord(session_id="s1", created_at=1.0, system=SystemPrompt(persona="p")))
    journal.append(InputRecord(turn=1, message=UserMessage(content="hi", id="u1")))
    journal.append(MessageRecord(turn=1, message=AssistantMessage(content="hello", id="a1")))
    journal.append(
        TurnEndRecord(
            outcome=TurnOutcome(
                turn=1, status=TurnStatus.COMPLETED, usage=Usage(prompt_tokens=3, requests=1)
            )
        )
    )
    return journal


def test_round_trip(tmp_path: Path) -> None:
    path = tmp_path / "journal.jsonl"
    journal = write_basic(path)
    journal.append(InputRecord(turn=2, message=UserMessage(content="again", id="u2")))
    journal.append(CompactedRecord(summary="they said hi", removed=2, method="summary"))
    journal.close()
    state = read_journal(path)
    assert state.header.session_id == "s1" and state.header.system.persona == "p"
    assert [m.id for m in state.history] == ["u2"] and state.summary == "they said hi"
    assert state.usage == Usage(prompt_tokens=3, requests=1)
    assert state.turns == 2 and state.open_turn == 2


def test_torn_last_line_is_skipped_and_cut(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "journal.jsonl"
    write_basic(path).close()
    good = path.read_bytes()
    with path.open("ab") as f:
        f.write(b'{"kind":"message","turn":2,"message":{"role":"assis')  # killed mid-write
    with capture_logs() as logs:
        state = read_journal(path)
    assert [m.id for m in state.history] == ["u1", "a1"]
    assert path.read_bytes() == good  # cut back to the last whole record
    assert [entry["event"] for entry in logs] == ["journal.torn_tail_skipped"]
    journal = Journal(path, fsync="off")
    journal.append(InputRecord(turn=2, message=UserMessage(content="next", id="u2")))
    journal.close()
    assert [m.id for m in read_journal(path).history] == ["u1", "a1", "u2"]


def test_corrupt_line_in_the_middle_names_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "journal.jsonl"
    write_basic(path).close()
    text = path.read_text().splitlines()
    text[1] = text[1][:20] + "#garbage#"
    path.write_text("\n".join(text) + "\n")
    with pytest.raises(JournalError, match=r"journal.jsonl:2: corrupt record") as info:
        read_journal(path)
    assert info.value.line == 2 and info.value.path == str(path)


def test_a_journal_without_a_header_is_rejected(tmp_path: Path) -> None:
    path = tmp_path / "journal.jsonl"
    journal = Journal(path, fsync="off")
    journal.append(InputRecord(turn=1, message=UserMessage(content="hi")))
    journal.close()
    with pytest.raises(JournalError, match="header"):
        read_journal(path)


def test_a_record_missing_only_its_newline_is_finished(tmp_path: Path) -> None:
    path = tmp_path / "journal.jsonl"
    write_basic(path).close()
    path.write_bytes(path.read_bytes()[:-1])  # killed just before the last newline
    assert read_journal(path).turns == 1
    journal = Journal(path, fsync="off")
    journal.append(InputRecord(turn=2, message=UserMessage(content="next", id="u2")))
    journal.close()
    assert [m.id for m in read_journal(path).history] == ["u1", "a1", "u2"]


def test_replay_places_a_late_tool_result_after_its_call_before_a_compaction(
    tmp_path: Path,
) -> None:
    """A repair journals a synthetic result at the end of the file; replay puts it right
    after its call's results, so a later compaction removes the same messages it removed
    in the live Session."""
    path = tmp_path / "journal.jsonl"
    journal = write_basic(path)  # u1, a1: turn 1
    calls = (ToolCall(id="c1", name="t"), ToolCall(id="c2", name="t"))
    journal.append(InputRecord(turn=2, message=UserMessage(content="go", id="u2")))
    journal.append(MessageRecord(turn=2, message=AssistantMessage(tool_calls=calls, id="a2")))
    journal.append(
        MessageRecord(
            turn=2, message=ToolMessage(tool_call_id="c2", tool_name="t", content="", id="t2")
        )
    )
    journal.append(MessageRecord(turn=2, message=AssistantMessage(content="done", id="a3")))
    journal.append(TurnEndRecord(outcome=TurnOutcome(turn=2, status=TurnStatus.COMPLETED)))
    late = ToolMessage(tool_call_id="c1", tool_name="t", content="", synthetic=True, id="t1")
    journal.append(MessageRecord(turn=2, message=late))  # the repair after a reopen
    journal.append(CompactedRecord(summary="s", removed=6, method="summary"))
    journal.close()
    # live: u1 a1 u2 a2 t2 t1 | a3
    assert [m.id for m in read_journal(path).history] == ["a3"]


def test_accepted_inputs_wait_in_order_until_started_dropped_or_refused(tmp_path: Path) -> None:
    path = tmp_path / "journal.jsonl"
    journal = write_basic(path)
    ids = ["q1", "q2", "q3", "q4", "q5"]
    for id_ in ids[:3]:
        journal.append(AcceptedRecord(message=UserMessage(content=id_, id=id_)))
    journal.append(AcceptedRecord(message=UserMessage(content="q4", id="q4"), interrupt=True))
    journal.append(AcceptedRecord(message=UserMessage(content="q5", id="q5")))
    journal.append(InputRecord(turn=2, message=UserMessage(content="q4", id="q4")))
    refused = TurnOutcome(turn=2, status=TurnStatus.BUDGET_EXHAUSTED, input_id="q1")
    journal.append(TurnEndRecord(outcome=TurnOutcome(turn=2, status=TurnStatus.COMPLETED)))
    journal.append(TurnEndRecord(outcome=refused))
    journal.append(DroppedRecord(input_ids=("q3",)))
    journal.close()
    state = read_journal(path)
    assert [m.id for m in state.pending] == ["q2", "q5"]
    assert [m.id for m in state.history] == ["u1", "a1", "q4"] and state.turns == 2


def test_turn_numbers_are_never_reused(tmp_path: Path) -> None:
    path = tmp_path / "journal.jsonl"
    journal = write_basic(path)
    journal.append(TurnStartRecord(turn=2))
    journal.close()
    state = read_journal(path)
    assert state.turns == 2 and state.open_turn == 2
    # A journal written before turn_start existed: a continued turn shows by its messages.
    old = tmp_path / "old.jsonl"
    journal = write_basic(old)
    calls = (ToolCall(id="c9", name="t"),)
    journal.append(MessageRecord(turn=2, message=AssistantMessage(tool_calls=calls)))
    journal.close()
    state = read_journal(old)
    assert state.turns == 2 and state.open_turn == 2


def test_closing_until_closed(tmp_path: Path) -> None:
    path = tmp_path / "journal.jsonl"
    journal = write_basic(path)
    journal.append(ClosingRecord(reason="owner_shutdown", at=2.0))
    journal.close()
    assert read_journal(path).closing == "owner_shutdown" and read_journal(path).closed is None
    append_records(path, ClosedRecord(reason="owner_shutdown", at=3.0))
    state = read_journal(path)
    assert state.closing is None and state.closed == "owner_shutdown"
