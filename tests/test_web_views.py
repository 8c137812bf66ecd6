"""What the web page shows, computed without a browser: usage per Session and per day from
the journals, a fact's ledger history, wake-up triggers in words."""

from __future__ import annotations

from pathlib import Path

import msgspec

from xai.agent import At, Cron, Every, Idle, OnEvent
from xai.agent._host_views import _history, _read_usage, describe_trigger
from xai.memory import Decision, Fact
from xai.messages import AssistantMessage, TurnOutcome, TurnStatus, Usage, UserMessage
from xai.session import JOURNAL_FILE, SystemPrompt
from xai.session._records import (
    ClosedRecord,
    HeaderRecord,
    InputRecord,
    MessageRecord,
    Record,
    TurnEndRecord,
    UsageRecord,
)

DAY = 86_400.0
MONDAY = 1_800_000_000.0  # 2027-01-15 08:00 UTC


def write(path: Path, *records: Record) -> None:
    path.parent.mkdir(parents=True)
    path.write_bytes(b"".join(msgspec.json.encode(r) + b"\n" for r in records))


def spent(prompt: int, completion: int) -> Usage:
    return Usage(prompt_tokens=prompt, completion_tokens=completion, requests=1)


def test_usage_counts_each_turn_on_the_day_it_was_said(tmp_path: Path) -> None:
    write(
        tmp_path / "sessions" / "s1" / JOURNAL_FILE,
        HeaderRecord(session_id="s1", created_at=MONDAY, system=SystemPrompt()),
        InputRecord(turn=1, message=UserMessage(content="Hi there", at=MONDAY + 5)),
        MessageRecord(turn=1, message=AssistantMessage(content="Hello", at=MONDAY + 6)),
        TurnEndRecord(outcome=TurnOutcome(turn=1, status=TurnStatus.COMPLETED, usage=spent(10, 2))),
        InputRecord(turn=2, message=UserMessage(content="Next day", at=MONDAY + DAY)),
        TurnEndRecord(outcome=TurnOutcome(turn=2, status=TurnStatus.CANCELLED, usage=spent(7, 1))),
        UsageRecord(usage=spent(30, 4), purpose="extraction"),
        ClosedRecord(reason="closed", at=MONDAY + DAY + 9),
    )
    write(
        tmp_path / "sessions" / "s2" / JOURNAL_FILE,
        HeaderRecord(session_id="s2", created_at=MONDAY + 1, system=SystemPrompt(), parent_id="s1"),
        InputRecord(turn=1, message=UserMessage(content="A task", origin="agent", at=MONDAY + 2)),
        TurnEndRecord(outcome=TurnOutcome(turn=1, status=TurnStatus.COMPLETED, usage=spent(5, 5))),
    )
    report = _read_usage(tmp_path)
    first, helper = sorted(report.sessions, key=lambda s: s.session_id)
    assert (first.label, first.origin, first.turns, first.closed) == ("Hi there", "user", 2, True)
    assert (first.usage.prompt_tokens, first.usage.completion_tokens) == (47, 7)
    assert (helper.parent_id, helper.origin, helper.closed) == ("s1", "agent", False)
    days = [(d.day, d.prompt_tokens, d.completion_tokens, d.requests) for d in report.days]
    assert days == [("2027-01-15", 15, 7, 2), ("2027-01-16", 37, 5, 2)]
    assert report.total.total_tokens == 64
    assert _read_usage(tmp_path / "nobody").sessions == []


def test_a_facts_history_follows_what_superseded_it() -> None:
    old = Fact(id="f1", text="Lives in Paris", first_seen=MONDAY, last_seen=MONDAY)
    gone = Fact(
        id="f1", text=old.text, first_seen=MONDAY, last_seen=MONDAY, status="superseded",
        superseded_by="f2", version=2, valid_to=MONDAY + DAY,
    )  # fmt: skip
    new = Fact(id="f2", text="Moved to Berlin", first_seen=MONDAY + DAY, last_seen=MONDAY + DAY)
    other = Fact(id="f3", text="Likes tea", first_seen=MONDAY, last_seen=MONDAY)
    ledger = [
        Decision(seq=1, kind="add", reason="new", at=MONDAY, session_id="a", facts=(old,)),
        Decision(seq=2, kind="add", reason="new", at=MONDAY, session_id="a", facts=(other,)),
        Decision(
            seq=3,
            kind="supersede",
            reason="moved",
            at=MONDAY + DAY,
            session_id="b",
            facts=(gone, new),
            judge=True,
        ),
    ]
    story = _history(gone, ledger)
    assert [(h.seq, h.kind, h.session_id, h.version) for h in story] == [
        (1, "add", "a", 1),
        (3, "supersede", "b", 2),
    ]
    assert story[1].judge and story[1].reason == "moved"
    newer = msgspec.structs.replace(new, supersedes=("f1",))
    assert [h.version for h in _history(newer, ledger)] == [None, 1]  # f1's add, then its own


def test_triggers_in_words() -> None:
    assert describe_trigger(Every(seconds=3600)) == "every 3600 s"
    assert describe_trigger(At(time=MONDAY)) == "once at 2027-01-15 08:00:00 UTC"
    assert describe_trigger(Cron(expression="0 9 * * *")) == "cron 0 9 * * * (UTC)"
    assert describe_trigger(Idle(seconds=90)) == "after 90 s idle"
    assert describe_trigger(OnEvent(name="ping")) == "on event ping"
