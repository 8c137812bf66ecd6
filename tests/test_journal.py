"""The journal file format: round trip, torn tails, corruption."""

from __future__ import annotations

from pathlib import Path

import pytest
from structlog.testing import capture_logs

from xai.exceptions import JournalError
from xai.messages import AssistantMessage, TurnOutcome, TurnStatus, Usage, UserMessage
from xai.session import SystemPrompt, read_journal
from xai.session._journal import (
    CompactedRecord,
    HeaderRecord,
    InputRecord,
    Journal,
    MessageRecord,
    TurnEndRecord,
)


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
