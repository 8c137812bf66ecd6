"""One commit point: after a kill, the stream a reader resumes with its last event id
announces what the journal recorded, every journal-backed event (turn starts and ends,
committed messages, ...) exactly once, in journal order, with its journal position."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from contextlib import aclosing
from pathlib import Path

import anyio
import httpx
import msgspec
import pytest
from httpx_sse import aconnect_sse

from tests.crash_helpers import ROOT
from tests.serve_helpers import listening
from tests.session_helpers import extraction_responder
from tests.stream_crash_child import line
from tests.test_agent import echo, judge_adds
from xai.agent import AgentHost
from xai.agent._eventlog import read_log
from xai.events import MessageCommitted, SessionEvent, TurnDone, TurnStarted
from xai.providers import OpenAIProvider
from xai.serve import LocalBackend, create_app
from xai.session import JOURNAL_FILE, journal_events
from xai.testing import OpenAIWireServer

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/fd"),
]


def run_child_until_it_dies(root: Path, base_url: str) -> None:
    child = subprocess.run(
        [sys.executable, "-m", "tests.stream_crash_child", str(root), base_url],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        timeout=120,
        check=False,
    )
    assert child.returncode == -signal.SIGKILL, child.stderr.decode()[-2000:]


def marks(events: list[SessionEvent]) -> list[tuple[str, int]]:
    out: list[tuple[str, int]] = []
    for event in events:
        body = event.event
        if isinstance(body, TurnStarted):
            out.append(("started", body.turn))
        elif isinstance(body, TurnDone):
            out.append(("done", body.outcome.turn))
    return out


async def read_until_turn_done(
    host: AgentHost, session_id: str, after: int, turn: int
) -> list[SessionEvent]:
    got: list[SessionEvent] = []
    with anyio.fail_after(60):  # a guard against a hang (the bug), not a wait
        async with aclosing(await host.events("ada", session_id, after)) as events:
            async for event in events:
                got.append(event)
                body = event.event
                if isinstance(body, TurnDone) and body.outcome.turn == turn:
                    return got
    raise AssertionError("the stream ended first")


async def test_a_kill_in_the_end_of_turn_fsync_loses_no_turn_event(
    tmp_path: Path, openai_server: OpenAIWireServer, provider: OpenAIProvider
) -> None:
    for responder in (extraction_responder, judge_adds, echo):
        openai_server.script.add_responder(responder)
    await anyio.to_thread.run_sync(run_child_until_it_dies, tmp_path, openai_server.base_url)
    session_id = (tmp_path / "session").read_text()
    log = tmp_path / "agents" / "ada" / "streams" / f"{session_id}.jsonl"
    found, before = read_log(log, 0)
    assert found is not None
    # The journal says turn 1 ended; the stream had not announced it when the process died.
    assert marks(before) == [("started", 1)]
    last_seen = before[-1].seq  # the reader's Last-Event-ID

    async with AgentHost(tmp_path / "agents", lambda _: provider) as host:
        resumed = await read_until_turn_done(host, session_id, last_seen, 2)
        assert resumed[0].seq == last_seen + 1
        # the end of turn 1 (from the journal), then turn 2 (the input accepted before)
        assert marks(resumed) == [("done", 1), ("started", 2), ("done", 2)]
        done = next(e.event for e in resumed if isinstance(e.event, TurnDone))
        assert done.outcome.text == "echo: first"
        whole = await read_until_turn_done(host, session_id, 0, 2)  # from the start
        assert marks(whole) == [("started", 1), ("done", 1), ("started", 2), ("done", 2)]
        seqs = [e.seq for e in whole]
        assert seqs == list(range(seqs[0], seqs[0] + len(seqs)))  # no gap, stable ids
        assert [e.seq for e in whole[-len(resumed) :]] == [e.seq for e in resumed]

    async with AgentHost(tmp_path / "agents", lambda _: provider) as host:  # once only
        again = await read_until_turn_done(host, session_id, 0, 2)
        assert again == whole


def run_life(root: Path, base_url: str, mode: str) -> None:
    """One life of the child (``stream_crash_child``), which dies by SIGKILL where ``mode``
    says."""
    child = subprocess.run(
        [sys.executable, "-m", "tests.stream_crash_child", str(root), base_url, mode],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        timeout=120,
        check=False,
    )
    assert child.returncode == -signal.SIGKILL, child.stderr.decode()[-2000:]


def told(lines: list[str]) -> tuple[list[int], list[tuple[str, int]]]:
    """A reader's record (``seq type position`` lines): every number it was given, and the
    journal-backed events among them (type, journal position)."""
    seqs: list[int] = []
    backed: list[tuple[str, int]] = []
    for text in lines:
        seq, kind, at = text.split()
        seqs.append(int(seq))
        if at != "-":
            backed.append((kind, int(at)))
    return seqs, backed


def journal_says(root: Path, session_id: str, upto: int) -> list[tuple[str, int]]:
    """The journal-backed events the Session's journal vouches for, up to ``upto``."""
    journal = root / "agents" / "ada" / "sessions" / session_id / JOURNAL_FILE
    return [
        (str(e.event.__struct_config__.tag), e.position) for e in journal_events(journal, 0, upto)
    ]


def check_exactly_once(root: Path, session_id: str, resumed: list[str]) -> list[tuple[str, int]]:
    """What the reader got before the kills (its lines in ``reads``) and after (``resumed``)
    is every journal-backed event of the journal, once each, in journal order, under
    consecutive numbers."""
    before = (root / "reads").read_text().splitlines()
    seqs, backed = told(before + resumed)
    assert seqs == list(range(seqs[0], seqs[0] + len(seqs))), "a number twice or a gap"
    assert seqs[0] == told(before)[0][0]
    assert backed == journal_says(root, session_id, backed[-1][1])
    return backed


async def test_a_kill_between_a_message_record_and_its_event_loses_no_message(
    tmp_path: Path, openai_server: OpenAIWireServer, provider: OpenAIProvider
) -> None:
    """The journal syncs every record; the process dies in the sync of the turn's answer:
    the journal has the message, no reader was told. The next life tells it (old code:
    only turn starts and ends were told again, the message was lost to the readers)."""
    for responder in (extraction_responder, judge_adds, echo):
        openai_server.script.add_responder(responder)
    await anyio.to_thread.run_sync(run_life, tmp_path, openai_server.base_url, "message")
    session_id = (tmp_path / "session").read_text()
    before = (tmp_path / "reads").read_text().splitlines()
    assert "message_committed" not in " ".join(before)
    last_seen = int(before[-1].split()[0])

    async with AgentHost(tmp_path / "agents", lambda _: provider) as host:
        resumed = await read_until_turn_done(host, session_id, last_seen, 2)
    lines = [line(e) for e in resumed]
    backed = check_exactly_once(tmp_path, session_id, lines)
    kinds = [kind for kind, _ in backed]
    assert kinds == [
        "turn_started",
        "message_committed",  # (told by the next life, from the journal)
        "turn_done",  # (interrupted: the reopened Session ends the turn the kill cut)
        "turn_started",
        "message_committed",
        "turn_done",
    ]
    told_again = resumed[0]
    assert isinstance(told_again.event, MessageCommitted)
    assert told_again.event.message.content == "echo: first"


@pytest.mark.parametrize("anyio_backend", ["asyncio"])  # uvicorn serves on asyncio only
async def test_kills_in_the_end_of_turn_fsync_and_during_requeue_with_an_sse_reader_attached(
    tmp_path: Path, openai_server: OpenAIWireServer, provider: OpenAIProvider
) -> None:
    """Life 1 dies in the fsync at the end of turn 1 (its ``turn_done`` untold, ``second``
    waiting); life 2 runs ``second`` again (requeued) and dies in the sync of its answer;
    life 3 serves the gateway, and the reader reconnects over SSE with ``Last-Event-ID``:
    over the three lives it is told every journal-backed event once, in journal order."""
    for responder in (extraction_responder, judge_adds, echo):
        openai_server.script.add_responder(responder)
    await anyio.to_thread.run_sync(run_life, tmp_path, openai_server.base_url, "turn_end")
    await anyio.to_thread.run_sync(run_life, tmp_path, openai_server.base_url, "requeue")
    session_id = (tmp_path / "session").read_text()
    before = (tmp_path / "reads").read_text().splitlines()
    last_seen = before[-1].split()[0]

    path = f"/agents/ada/sessions/{session_id}/events"
    async with (
        AgentHost(tmp_path / "agents", lambda _: provider) as host,
        listening(create_app(LocalBackend(host))) as url,
        httpx.AsyncClient(base_url=url, timeout=30) as client,
    ):
        resumed: list[SessionEvent] = []
        with anyio.fail_after(60):  # a guard against a hang (the bug), not a wait
            headers = {"Last-Event-ID": last_seen}
            async with aconnect_sse(client, "GET", path, headers=headers) as source:
                assert source.response.status_code == 200
                async for sse in source.aiter_sse():
                    event = msgspec.json.decode(sse.data, type=SessionEvent)
                    assert sse.id == str(event.seq)
                    resumed.append(event)
                    body = event.event
                    if isinstance(body, TurnDone) and body.outcome.turn == 2:
                        break
    backed = check_exactly_once(tmp_path, session_id, [line(e) for e in resumed])
    assert [kind for kind, _ in backed] == [
        "turn_started",
        "message_committed",
        "turn_done",  # (life 2, from the journal)
        "turn_started",  # (the requeued input)
        "message_committed",  # (life 3, from the journal)
        "turn_done",  # (interrupted: life 3 ends the turn the kill cut)
    ]
    assert [kind for kind, _ in told([line(e) for e in resumed])[1]][:1] == ["message_committed"]


async def test_a_stream_made_in_the_end_of_turn_fsync_then_killed_still_tells_the_turn_done(
    tmp_path: Path, openai_server: OpenAIWireServer, provider: OpenAIProvider
) -> None:
    """A reader comes while the Session syncs its turn's end (the Query is over: the
    Session is not ``busy``, its ``turn_done`` is not published yet), and the process dies
    in that sync. The stream began where the Session had announced up to
    (``Session.announced``), so the next life tells the turn's end (old code guessed the
    stream's start from ``session.busy``, took the turn for told, and the reader waited
    for ever)."""
    for responder in (extraction_responder, judge_adds, echo):
        openai_server.script.add_responder(responder)
    await anyio.to_thread.run_sync(run_life, tmp_path, openai_server.base_url, "late_reader")
    session_id = (tmp_path / "session").read_text()

    async with AgentHost(tmp_path / "agents", lambda _: provider) as host:
        resumed = await read_until_turn_done(host, session_id, 0, 1)
    assert [type(e.event).__name__ for e in resumed] == ["TurnDone"]
    assert isinstance(resumed[0].event, TurnDone)
    assert resumed[0].event.outcome.text == "echo: first"
    at = resumed[0].journal
    assert at is not None and journal_says(tmp_path, session_id, at)[-1] == ("turn_done", at)


async def test_a_kill_in_the_sync_of_the_close_still_tells_the_readers_it_closed(
    tmp_path: Path, openai_server: OpenAIWireServer, provider: OpenAIProvider
) -> None:
    """The process dies in the sync after the journal's ``closed`` record: the journal says
    the Session closed, its stream never said so. The Session is not reopened (it is
    closed); its stream, read back from its log, is first completed from the journal, so
    the reader that comes back is told the close (old code: the stream ended without
    ``session_closed``)."""
    for responder in (extraction_responder, judge_adds, echo):
        openai_server.script.add_responder(responder)
    await anyio.to_thread.run_sync(run_life, tmp_path, openai_server.base_url, "close")
    session_id = (tmp_path / "session").read_text()
    before = (tmp_path / "reads").read_text().splitlines()
    assert "session_closed" not in " ".join(before)

    resumed: list[SessionEvent] = []
    async with AgentHost(tmp_path / "agents", lambda _: provider) as host:
        for _ in range(2):  # (a second reader: the log was completed once)
            with anyio.fail_after(60):  # a guard against a hang, not a wait
                events = await host.events("ada", session_id, int(before[-1].split()[0]))
                async with aclosing(events):
                    resumed = [event async for event in events]
            backed = check_exactly_once(tmp_path, session_id, [line(e) for e in resumed])
            assert backed[-1][0] == "session_closed"
            assert [type(e.event).__name__ for e in resumed][-1:] == ["SessionClosed"]


async def test_a_kill_before_the_stream_took_up_its_log_still_tells_the_turn_start(
    tmp_path: Path, openai_server: OpenAIWireServer, provider: OpenAIProvider
) -> None:
    """The host opens a Session (its stream made, the log to be taken up in a worker
    thread, which has not run yet: a loaded machine), the Session journals its first
    turn's start, and the process dies before anything told it. The log was begun as the
    stream was made, after where the Session had announced up to, so the next life tells
    the turn's start from the journal, then the ``turn_done`` that ends it interrupted.
    (Old code made the log only in that thread: the next life found none, made a new
    stream at the reopened Session's journal end, and the turn's start was told to no
    reader; a streamed kill campaign under load 30 saw it once, seed 13.)"""
    for responder in (extraction_responder, judge_adds, echo):
        openai_server.script.add_responder(responder)
    await anyio.to_thread.run_sync(run_life, tmp_path, openai_server.base_url, "unlogged")
    session_id = (tmp_path / "session").read_text()
    log = tmp_path / "agents" / "ada" / "streams" / f"{session_id}.jsonl"
    assert read_log(log, 0)[1] == []  # (nothing was told before the kill)

    async with AgentHost(tmp_path / "agents", lambda _: provider) as host:
        resumed = await read_until_turn_done(host, session_id, 0, 1)
    backed = told([line(e) for e in resumed])[1]
    assert [kind for kind, _ in backed] == ["turn_started", "turn_done"]
    assert backed == journal_says(tmp_path, session_id, backed[-1][1])
