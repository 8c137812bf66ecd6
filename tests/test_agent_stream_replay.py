"""One commit point per turn: after a kill, the stream a reader resumes with its last event
id announces what the journal recorded, each ``turn_started``/``turn_done`` exactly once."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from contextlib import aclosing
from pathlib import Path

import anyio
import pytest

from tests.crash_helpers import ROOT
from tests.session_helpers import extraction_responder
from tests.test_agent import echo, judge_adds
from xai.agent import AgentHost
from xai.agent._eventlog import read_log
from xai.events import SessionEvent, TurnDone, TurnStarted
from xai.providers import OpenAIProvider
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
