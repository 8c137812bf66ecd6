"""A streamed Session's events log: written before readers get an event, continued by the
next stream on it (a restart, a reopen), bounded, and never a source of a silent gap."""

from __future__ import annotations

import os
import time
from collections.abc import AsyncIterator
from contextlib import aclosing, asynccontextmanager
from pathlib import Path

import anyio
import msgspec
import pytest

from xai.agent import SessionStream
from xai.agent._eventlog import (
    CLOSED_LOG_GRACE,
    boot_id,
    open_log,
    read_log,
    sweep_logs,
)
from xai.events import SessionClosed, SessionEvent, TextDelta, TurnStarted
from xai.exceptions import EventsExpiredError
from xai.session import JournalEvent

pytestmark = pytest.mark.anyio


def turn(n: int) -> TurnStarted:
    return TurnStarted(turn=n, input=None)


@asynccontextmanager
async def writing(path: Path, capacity: int = 100) -> AsyncIterator[SessionStream]:
    """A stream that has taken up the log at ``path``; stopped (sealed) at the end."""
    stream = SessionStream("s", capacity, log=path)
    await stream.load()
    try:
        yield stream
    finally:
        await stream.stop()


async def take(stream: SessionStream, after: int, n: int) -> list[SessionEvent]:
    got: list[SessionEvent] = []
    with anyio.fail_after(30):  # a guard against a hang, not a wait
        async with aclosing(stream.since(after)) as events:
            async for event in events:
                got.append(event)
                if len(got) == n:
                    break
    return got


def turns(events: list[SessionEvent]) -> list[int]:
    return [e.event.turn for e in events if isinstance(e.event, TurnStarted)]


async def test_a_new_stream_on_the_log_goes_on_from_its_last_number(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    async with writing(path) as first:
        for n in range(3):
            first.add(turn(n))
        seen = await take(first, 0, 2)  # a reader that got two, then lost its connection
        assert seen[1].seq == seen[0].seq + 1 and first.memory_events == 3
    assert first.memory_events == 0  # stopped: nothing kept in memory
    async with writing(path) as second:  # the process restarted, say
        assert (second.start, second.written) == (first.start, first.written)
        second.add(turn(3))
        resumed = await take(second, seen[-1].seq, 2)
        assert turns(resumed) == [2, 3]
        assert [e.seq for e in seen + resumed] == list(range(first.start + 1, first.start + 5))
        assert turns(await take(second, 0, 4)) == [0, 1, 2, 3]  # (after=0: from the first)


async def test_a_torn_tail_is_cut_off_and_the_numbering_goes_on_after_the_last_whole_event(
    tmp_path: Path,
) -> None:
    path = tmp_path / "s.jsonl"
    async with writing(path) as first:
        for n in range(3):
            first.add(turn(n))
        await take(first, 0, 3)
    whole = path.read_bytes()
    torn = msgspec.json.encode(SessionEvent("s", first.written + 1, turn(9)))
    path.write_bytes(whole + torn[:20])  # a kill in the middle of a write
    async with writing(path) as second:
        assert second.written == first.written
        second.add(turn(3))
        assert turns(await take(second, 0, 4)) == [0, 1, 2, 3]
    after = path.read_bytes()
    assert after.startswith(whole) and after[len(whole) :].startswith(b'["opened"')  # cut


async def test_a_log_an_unsealed_writer_left_on_another_boot_starts_a_new_stream(
    tmp_path: Path,
) -> None:
    """Its tail may be lost (a machine crash): a reader's number past it must not be
    taken for a new event's, so the old numbers are refused."""
    path = tmp_path / "s.jsonl"
    async with writing(path) as first:
        first.add(turn(0))
        await take(first, 0, 1)
    lines = path.read_bytes().split(b"\n")
    kept = [line for line in lines if line and line != b'["sealed"]']
    other = msgspec.json.encode(["opened", "another-boot", first.start])
    path.write_bytes(b"\n".join([kept[0], *kept[1:], other]) + b"\n")
    log, found, how = open_log(path)
    log.release()
    assert how == "restarted" and found.start > first.written
    async with writing(path) as second:
        assert second.start > first.written
        with pytest.raises(EventsExpiredError):
            second.check(first.written)
    # the same log, left unsealed by a process of this boot (a kill -9): it goes on
    path.write_bytes(b"\n".join([*kept, msgspec.json.encode(["opened", boot_id(), 7])]) + b"\n")
    log, _, how = open_log(path)
    log.release()
    assert how == "continued"


async def test_the_log_keeps_the_window_and_a_reader_reads_past_memory_from_it(
    tmp_path: Path,
) -> None:
    path = tmp_path / "s.jsonl"
    async with writing(path, capacity=300) as stream:
        for n in range(700):
            stream.add(turn(n))
        last = stream.start + 700
        got = await take(stream, last - 300, 300)  # the window: more than memory holds
        assert turns(got) == list(range(400, 700))
        with pytest.raises(EventsExpiredError) as refused:
            stream.check(last - 301)
        assert (refused.value.first, refused.value.last) == (last - 299, last)
        found, _ = read_log(path, last)
        assert found is not None and found.events <= 600  # compacted past twice the window
        stream.add(SessionClosed(reason="closed"))
        assert [e.event for e in await take(stream, last, 1)] == [SessionClosed(reason="closed")]
    closed = await SessionStream.of_closed("s", path, 300)  # after a restart, say
    assert [e.seq for e in await take(closed, last - 1, 2)] == [last, last + 1]


def test_the_logs_of_sessions_no_longer_open_go_once_their_grace_has_passed(
    tmp_path: Path,
) -> None:
    now = time.time()
    for name, age in (("closed", 700), ("open", 700), ("recent", 10), ("note.txt", 700)):
        (tmp_path / (name if "." in name else f"{name}.jsonl")).write_text("x\n")
        os.utime(tmp_path / (name if "." in name else f"{name}.jsonl"), (now - age, now - age))
    assert sweep_logs(tmp_path, {"open"}, now - CLOSED_LOG_GRACE) == ["closed"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["note.txt", "open.jsonl", "recent.jsonl"]
    assert sweep_logs(tmp_path / "none", set(), now) == []


async def test_deltas_are_written_in_one_go_when_a_reader_wants_them_or_the_next_event_comes(
    tmp_path: Path,
) -> None:
    path = tmp_path / "s.jsonl"

    def on_disk() -> int:
        found, _ = read_log(path, 0)
        assert found is not None
        return found.events

    async with writing(path) as stream:
        for word in ("a", "b", "c"):
            stream.add(TextDelta(query_id="q", round=1, text=word))
        assert on_disk() == 0 and stream.written == stream.start  # nobody was given them
        got = await take(stream, 0, 3)  # the reader's wake-up writes all three
        assert [e.event.text for e in got if isinstance(e.event, TextDelta)] == ["a", "b", "c"]
        assert on_disk() == 3
        stream.add(TextDelta(query_id="q", round=1, text="d"))
        stream.add(turn(1))  # any other event: written at once, the delta before it
        assert on_disk() == 5 and stream.written == stream.start + 5


async def test_the_log_knows_how_far_in_the_journal_it_has_announced_also_once_compacted(
    tmp_path: Path,
) -> None:
    """A restart compares that place with the journal (``Found.journal``, a record's
    position): what the log lacks is announced first; so it must be known however the log
    was cut."""
    path = tmp_path / "s.jsonl"
    log, found, how = open_log(path, 400)  # made for a Session that announced up to 400
    log.release()
    assert how == "new" and found.journal == 400
    assert read_log(path, 0)[0] == found._replace(good=path.stat().st_size)
    async with writing(path, capacity=3) as stream:
        stream.add(JournalEvent(512, turn(5)))  # a journal-backed event, with its position
        for word in "abcdefgh":  # past twice the window: compacted, turn 5's start gone
            stream.add(TextDelta(query_id="q", round=1, text=word))
        stream.flush()
        kept, events = read_log(path, 0)
        assert kept is not None and kept.journal == 512
        assert turns(events) == []
