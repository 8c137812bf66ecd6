"""The journal file format: round trip, torn tails, corruption."""

from __future__ import annotations

from pathlib import Path

import msgspec
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
    JOURNAL_FILE,
    FsyncPolicy,
    JournalTotals,
    JournalView,
    Session,
    SessionConfig,
    SystemPrompt,
    read_journal,
)
from xai.session._journal import Journal, append_records
from xai.session._recorder import SAVE_EVERY
from xai.session._records import (
    AcceptedRecord,
    ClosedRecord,
    ClosingRecord,
    CompactedRecord,
    DroppedRecord,
    HeaderRecord,
    InputRecord,
    MessageRecord,
    Record,
    TurnEndRecord,
    TurnStartRecord,
    UsageRecord,
    decode_record,
)
from xai.session._totals import TOTALS_FILE, write_totals
from xai.testing import Reply, ScriptedProvider


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


# -- the read model: JournalView, and the totals kept as the journal is written ------------

DAY = 86_400.0
MONDAY = 1_700_006_400.0  # 2023-11-15 00:00 UTC


def spent(prompt: int, completion: int) -> Usage:
    return Usage(prompt_tokens=prompt, completion_tokens=completion, requests=1)


def counting_decodes(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many journal lines ``read_totals`` decodes (it must not re-parse what its
    totals already account for)."""
    calls = [0]

    def counted(line: bytes) -> Record:
        calls[0] += 1
        return decode_record(line)

    monkeypatch.setattr("xai.session._totals.decode_record", counted)
    return calls


@pytest.mark.anyio
async def test_a_sessions_totals_are_kept_as_its_journal_is_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The writer keeps the totals as it appends and saves them at the close; a reader then
    gets them without parsing one line of the journal, and they are what a full replay
    adds up to."""
    provider = ScriptedProvider(
        [
            Reply(text="one", usage={"prompt_tokens": 10, "completion_tokens": 2}),
            Reply(text="two", usage={"prompt_tokens": 20, "completion_tokens": 3}),
        ]
    )
    today = [MONDAY]
    async with Session(provider, directory=tmp_path, clock=lambda: today[0]) as session:
        await session.send("Hello there")
        today[0] = MONDAY + DAY
        await session.send("Next day", origin="agent")
        live = JournalView.read_totals(tmp_path)  # not saved yet: folded from the journal
        assert live == JournalView.read(tmp_path / JOURNAL_FILE).totals
        assert live is not None and live.turns == 2 and live.closed is None
    calls = counting_decodes(monkeypatch)
    totals = JournalView.read_totals(tmp_path)
    assert calls == [0], "the totals were re-read from the journal"
    assert totals is not None and (tmp_path / TOTALS_FILE).is_file()
    assert totals == JournalView.read(tmp_path / JOURNAL_FILE).totals
    assert totals.session_id == session.id and totals.closed == "closed"
    assert (totals.origin, totals.label, totals.turns) == ("user", "Hello there", 2)
    assert totals.usage == session.usage and totals.usage.prompt_tokens == 30
    assert totals.days == {"2023-11-15": spent(10, 2), "2023-11-16": spent(20, 3)}


@pytest.mark.anyio
@pytest.mark.parametrize("fsync", ["turn", "off"])
async def test_a_long_running_session_saves_its_totals_as_its_journal_grows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fsync: FsyncPolicy
) -> None:
    """A reader of a Session that runs for long decodes at most the last ``SAVE_EVERY``
    bytes of its journal, never all of it."""
    answer = "x" * (SAVE_EVERY // 3)
    provider = ScriptedProvider([Reply(text=answer)] * 8)
    config = SessionConfig(fsync=fsync)
    async with Session(provider, directory=tmp_path, config=config) as session:
        for number in range(8):
            await session.send(f"turn {number}")
            calls = counting_decodes(monkeypatch)
            totals = JournalView.read_totals(tmp_path)
            assert totals == JournalView.read(tmp_path / JOURNAL_FILE).totals
            assert totals is not None and totals.turns == number + 1
            unsaved = totals.journal_bytes - json_length(tmp_path)
            assert unsaved < SAVE_EVERY + len(answer) * 2, "the totals were not saved"
            assert calls[0] <= 3 * 4, "more than the unsaved turns were decoded"


def json_length(directory: Path) -> int:
    """The journal length the saved totals account for (0 when none are saved)."""
    path = directory / TOTALS_FILE
    if not path.is_file():
        return 0
    return msgspec.json.decode(path.read_bytes(), type=JournalTotals).journal_bytes


def test_totals_fold_only_what_the_journal_gained_since(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A record appended after the last save (an acknowledgement after the close, a kill
    before the next turn's end) is folded from the journal's tail, and only it."""
    path = tmp_path / JOURNAL_FILE
    journal = write_basic(path)
    journal.close()
    write_totals(tmp_path, JournalView.read(path).totals or pytest.fail("no totals"))
    append_records(
        path,
        UsageRecord(usage=spent(7, 1), purpose="extraction"),
        ClosedRecord(reason="closed", at=9.0),
    )
    calls = counting_decodes(monkeypatch)
    totals = JournalView.read_totals(tmp_path)
    assert calls == [2]
    assert totals == JournalView.read(path).totals
    assert totals is not None and totals.closed == "closed" and totals.usage.prompt_tokens == 10


def test_totals_without_a_matching_sidecar_are_folded_from_the_whole_journal(
    tmp_path: Path,
) -> None:
    path = tmp_path / JOURNAL_FILE
    journal = write_basic(path)
    expected = JournalView.read(path).totals
    assert JournalView.read_totals(tmp_path) == expected  # no sidecar at all
    assert expected is not None
    write_totals(tmp_path, msgspec.structs.replace(expected, journal_bytes=10**9))  # not this one
    assert JournalView.read_totals(tmp_path) == expected
    (tmp_path / TOTALS_FILE).write_text("{not json")
    assert JournalView.read_totals(tmp_path) == expected
    with path.open("ab") as f:
        f.write(b'{"kind": "usage", "usa')  # a record being written (or torn by a kill)
    assert JournalView.read_totals(tmp_path) == expected
    journal.close()
    assert JournalView.read_totals(tmp_path / "nothing here") is None


def test_each_usage_counts_on_the_day_its_last_message_was_said(tmp_path: Path) -> None:
    path = tmp_path / JOURNAL_FILE
    append_records(
        path,
        HeaderRecord(session_id="s1", created_at=MONDAY, system=SystemPrompt()),
        InputRecord(turn=1, message=UserMessage(content="Hi there", at=MONDAY + 5)),
        MessageRecord(turn=1, message=AssistantMessage(content="Hello", at=MONDAY + 6)),
        TurnEndRecord(outcome=TurnOutcome(turn=1, status=TurnStatus.COMPLETED, usage=spent(10, 2))),
        InputRecord(turn=2, message=UserMessage(content="Next day", at=MONDAY + DAY)),
        TurnEndRecord(outcome=TurnOutcome(turn=2, status=TurnStatus.CANCELLED, usage=spent(7, 1))),
        UsageRecord(usage=spent(30, 4), purpose="extraction"),
    )
    totals = JournalView.read_totals(tmp_path)
    assert totals is not None and totals.turns == 2 and totals.closed is None
    assert totals.days == {"2023-11-15": spent(10, 2), "2023-11-16": spent(7, 1) + spent(30, 4)}


def test_the_view_keeps_every_turn_as_recorded_compaction_and_repairs_included(
    tmp_path: Path,
) -> None:
    path = tmp_path / JOURNAL_FILE
    call = ToolCall(id="c1", name="lookup", arguments="{}")
    journal = write_basic(path)
    journal.append(InputRecord(turn=2, message=UserMessage(content="look", id="u2")))
    journal.append(
        MessageRecord(turn=2, message=AssistantMessage(content="", tool_calls=(call,), id="a2"))
    )
    journal.append(CompactedRecord(summary="earlier", removed=3, method="summary"))
    # the process died here; the reopened Session repaired the call and ended the turn
    repaired = ToolMessage(tool_call_id="c1", tool_name="lookup", content="x", synthetic=True)
    journal.append(MessageRecord(turn=2, message=repaired))
    journal.append(TurnEndRecord(outcome=TurnOutcome(turn=2, status=TurnStatus.INTERRUPTED)))
    journal.append(TurnStartRecord(turn=3))
    journal.close()
    view = JournalView.read(path)
    assert view.session_id == "s1" and view.system.persona == "p" and view.summary == "earlier"
    assert [t.turn for t in view.turn_log] == [1, 2, 3]
    first, second, third = view.turn_log
    assert first.input is not None and first.input.id == "u1"
    assert [m.id for m in first.messages] == ["a1"]
    assert first.outcome is not None and first.outcome.status is TurnStatus.COMPLETED
    assert [m.id for m in second.messages] == ["a2", repaired.id]
    assert [o.status for o in second.outcomes] == [TurnStatus.INTERRUPTED]
    assert third.input is None and third.status is None and view.open_turn == 3
    assert second.status is TurnStatus.INTERRUPTED
    assert [m.id for m in view.record] == ["u1", "a1", "u2", "a2", repaired.id]
    assert [m.id for m in view.inputs] == ["u1", "u2"]
    assert len(view.history) == 2  # what the next request sees: after the compaction
    assert msgspec.json.decode(msgspec.json.encode(view), type=JournalView) == view


def test_salvage_reads_what_it_can_of_a_damaged_journal(tmp_path: Path) -> None:
    directory = tmp_path / "s9"
    path = directory / JOURNAL_FILE
    journal = write_basic(path)
    journal.close()
    with path.open("ab") as f:
        f.write(b"garbage in the middle\n")
    append_records(path, InputRecord(turn=2, message=UserMessage(content="more", id="u2")))
    with pytest.raises(JournalError):
        JournalView.read(path)
    view = JournalView.salvage(path)
    assert view.session_id == "s1" and [m.id for m in view.inputs] == ["u1", "u2"]
    headless = tmp_path / "s10" / JOURNAL_FILE
    append_records(headless, InputRecord(turn=1, message=UserMessage(content="x", id="u9")))
    assert JournalView.salvage(headless).session_id == "s10"
