"""A seeded kill -9 campaign: an Agent killed at random points, again and again, loses nothing.

Each life of the Agent (``campaign_child.py``, forked from a server process
that has imported xai already, so a life starts in milliseconds) resumes what
the previous life left, continues the turns a kill interrupted and does random
work: first, queued and continued turns, slow tools (some two at a time),
Sessions opened and closed. The parent kills it at a random moment, at least
``KILLS`` times, then lets one last life finish everything and close. Then:

- every input a Session acknowledged (``send()`` returned) was started;
- no tool call ran twice (a call that finished is never repeated, and one a
  kill interrupted gets a synthetic result instead of a second run);
- no request the model server received broke the Chat Completions rules
  (the test server checks every request);
- every memory candidate any Session journaled was decided exactly once, and
  every Session's journal ends closed.

The seed is ``XAI_CAMPAIGN_SEED`` (default 13); a failure prints it.

The streamed campaign does the same through an ``AgentHost`` with a reader on every
Session's event stream (resuming with its last event id, as an SSE client does), and
kills inside the end-of-turn fsync and right after a start (while the inputs the kill
left run again) too: every ``turn_started``/``turn_done`` the journals record reaches
the readers exactly once. CI runs ``XAI_STREAM_CAMPAIGN_KILLS`` = 6 lives (~15 s); 30
take about a minute (seeds 7, 13, 21: 30 kills, 10 of them inside the fsync, each turn
announced once, 0 inputs lost).
"""

from __future__ import annotations

import json
import multiprocessing
import os
import random
import signal
import time
from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from tests.session_helpers import extraction_responder, is_side_request, last_content
from tests.test_agent import judge_adds
from xai.memory import JUDGE_MARKER
from xai.messages import UserMessage
from xai.session import JOURNAL_FILE, read_journal
from xai.session._journal import read_records
from xai.session._records import InputRecord, TurnEndRecord, TurnStartRecord
from xai.testing import OpenAIWireServer, Reply, ScriptedCall

KILLS = int(os.environ.get("XAI_CAMPAIGN_KILLS", "16"))
"""16 in CI (about a minute on a loaded 2-core machine, a quarter of its time limit); the
campaigns reported in docs/hardening figures run 30 and more (XAI_CAMPAIGN_KILLS=30)."""
SEED = int(os.environ.get("XAI_CAMPAIGN_SEED", "13"))


def model(body: Mapping[str, Any]) -> Reply | None:
    """The scripted model: ``tool:`` inputs ask for one slow tool, ``tools2:`` for two at once."""
    if is_side_request(body) or last_content(body).startswith(JUDGE_MARKER):
        return None
    last = body["messages"][-1]
    if last["role"] != "user":
        return Reply(text="done", chunk_chars=2)
    text = last_content(body)
    if text.startswith("tool:"):
        return Reply(tool_calls=(ScriptedCall(name="work", arguments={"tag": text}),))
    if text.startswith("tools2:"):
        calls = tuple(ScriptedCall(name="work", arguments={"tag": f"{text}/{i}"}) for i in (1, 2))
        return Reply(tool_calls=calls)
    return Reply(text=f"ok {text}", chunk_chars=2)


@pytest.mark.timeout(240)
def test_random_kills_lose_nothing(tmp_path: Path, openai_server: OpenAIWireServer) -> None:
    for responder in (extraction_responder, judge_adds, model):
        openai_server.script.add_responder(responder)
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(["tests.warm_imports"])  # (tests/warm_python.py)
    rng = random.Random(SEED)
    lives = tmp_path / "lives"
    for life in range(KILLS):
        process = context.Process(
            target=_run_life, args=(str(tmp_path), openai_server.base_url, life, SEED, False)
        )
        process.start()
        try:
            _wait_for(lambda life=life: f"up {life}" in _lines(lives), process, life)
            time.sleep(rng.uniform(0.0, 0.8))
        finally:
            if process.pid is not None and process.exitcode is None:
                os.kill(process.pid, signal.SIGKILL)
            process.join(30)
        assert process.exitcode == -signal.SIGKILL, f"life {life} ended by itself (seed {SEED})"
    final = context.Process(
        target=_run_life, args=(str(tmp_path), openai_server.base_url, KILLS, SEED, True)
    )
    final.start()
    final.join(120)
    assert final.exitcode == 0, f"the last life failed (seed {SEED})"
    assert "final-done" in _lines(lives)
    _check(tmp_path)


def _run_life(directory: str, base_url: str, life: int, seed: int, final: bool) -> None:
    from tests.campaign_child import run_life

    run_life(directory, base_url, life, seed, final)


def _lines(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


def _wait_for(ready: Any, process: Any, life: int) -> None:
    deadline = time.monotonic() + 60
    while not ready():
        assert process.exitcode is None, f"life {life} died before it was up (seed {SEED})"
        assert time.monotonic() < deadline, f"life {life} never came up (seed {SEED})"
        time.sleep(0.01)


def _check(root: Path) -> None:
    journals = sorted((root / "agent" / "sessions").glob(f"*/{JOURNAL_FILE}"))
    started: set[str] = set()
    candidates: set[str] = set()
    for journal in journals:
        for record in read_records(journal):
            message = getattr(record, "message", None)
            if isinstance(message, UserMessage):
                started.add(message.id)
            candidates.update(c.id for c in getattr(record, "candidates", ()))
        assert read_journal(journal, repair=False).closed is not None, f"{journal} not closed"

    acked = {line.split()[1] for line in _lines(root / "acks")}
    assert acked, "the campaign acknowledged no input"
    lost = acked - started
    assert not lost, f"{len(lost)} of {len(acked)} acknowledged inputs lost (seed {SEED})"

    starts = Counter(line.split()[1] for line in _lines(root / "tools") if line.startswith("start"))
    assert starts, "no tool ran"
    repeated = sorted(call for call, count in starts.items() if count > 1)
    assert not repeated, f"tool calls run twice: {repeated} (seed {SEED})"

    decided = Counter(
        entry["candidate"]["id"]
        for entry in map(json.loads, _lines(root / "agent" / "memory" / "ledger.jsonl"))
        if entry.get("candidate")
    )
    assert candidates, "no memory candidate was proposed"
    lost_candidates = candidates - set(decided)
    twice = sorted(c for c, n in decided.items() if n > 1)
    assert not lost_candidates, f"{len(lost_candidates)} candidates never decided (seed {SEED})"
    assert not twice, f"candidates decided twice: {twice} (seed {SEED})"
    print(  # the campaign's figures, shown with `pytest -s`
        f"kill campaign, seed {SEED}: {KILLS} kills, {len(journals)} sessions, "
        f"{len(acked)} inputs acknowledged (0 lost), {len(starts)} tool calls (0 run twice), "
        f"{len(candidates)} candidates (each decided once)"
    )


STREAM_KILLS = int(os.environ.get("XAI_STREAM_CAMPAIGN_KILLS", "6"))
"""Lives of the streamed campaign (CI keeps it short; set 30 or more for the full one)."""


@pytest.mark.timeout(600)
def test_random_kills_with_readers_attached_announce_every_turn_once(
    tmp_path: Path, openai_server: OpenAIWireServer
) -> None:
    """The streamed campaign (``stream_campaign_child.py``): lives through an ``AgentHost``
    with a reader on every Session's stream, killed at random moments, right after they
    start (while the inputs a kill left run again), and inside the fsync at the end of a
    turn. Afterwards each Session's readers, resuming with their last event id, were told
    every ``turn_started``/``turn_done`` its journal records exactly once, in the order
    the journal has them; no input acknowledged was lost."""
    for responder in (extraction_responder, judge_adds, model):
        openai_server.script.add_responder(responder)
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(["tests.warm_imports"])
    rng = random.Random(SEED)
    lives = tmp_path / "lives"
    in_fsync = 0
    for life in range(STREAM_KILLS):
        how = "fsync" if life % 3 == 2 else "random"
        process = context.Process(
            target=_run_streamed_life,
            args=(str(tmp_path), openai_server.base_url, life, SEED, how),
        )
        process.start()
        try:
            _wait_for(lambda life=life: f"up {life}" in _lines(lives), process, life)
            if how == "fsync":
                process.join(30)  # it dies by itself at the next end of a turn
                in_fsync += f"fsync {life}" in _lines(lives)
            else:  # now and then right away: while the inputs the last kill left run again
                time.sleep(rng.uniform(0.0, 0.05) if life % 3 == 1 else rng.uniform(0.0, 0.8))
        finally:
            if process.pid is not None and process.exitcode is None:
                os.kill(process.pid, signal.SIGKILL)
            process.join(30)
        assert process.exitcode == -signal.SIGKILL, f"life {life} ended by itself (seed {SEED})"
    final = context.Process(
        target=_run_streamed_life,
        args=(str(tmp_path), openai_server.base_url, STREAM_KILLS, SEED, "final"),
    )
    final.start()
    final.join(180)
    assert final.exitcode == 0, f"the last life failed or hung (seed {SEED})"
    assert "final-done" in _lines(lives)
    assert in_fsync, "no life died inside an end-of-turn fsync"
    turns, sessions, acked = _check_streams(tmp_path)
    print(  # the campaign's figures, shown with `pytest -s`
        f"streamed kill campaign, seed {SEED}: {STREAM_KILLS} kills ({in_fsync} inside the "
        f"end-of-turn fsync), {sessions} sessions, {turns} turns each announced once, "
        f"{acked} inputs acknowledged (0 lost)"
    )


def _run_streamed_life(directory: str, base_url: str, life: int, seed: int, how: str) -> None:
    from tests.stream_campaign_child import run_life

    run_life(directory, base_url, life, seed, how)


def _journal_marks(journal: Path) -> list[tuple[str, int]]:
    marks: list[tuple[str, int]] = []
    for record in read_records(journal):
        if isinstance(record, InputRecord | TurnStartRecord):
            marks.append(("started", record.turn))
        elif isinstance(record, TurnEndRecord):
            marks.append(("done", record.outcome.turn))
    return marks


def _check_streams(root: Path) -> tuple[int, int, int]:
    journals = sorted((root / "agents" / "ada" / "sessions").glob(f"*/{JOURNAL_FILE}"))
    assert journals, "no session"
    started: set[str] = set()
    turns = 0
    for journal in journals:
        session_id = journal.parent.name
        assert read_journal(journal, repair=False).closed is not None, f"{journal} not closed"
        for record in read_records(journal):
            if isinstance(record, InputRecord):
                started.add(record.message.id)
        expected = _journal_marks(journal)
        lines = [line.split() for line in _lines(root / "reads" / session_id)]
        seqs = [int(seq) for seq, _, _ in lines]
        assert seqs == sorted(set(seqs)), f"{session_id}: an event told twice (seed {SEED})"
        told = [(kind, int(turn)) for _, kind, turn in lines if kind != "other"]
        assert told == expected, (
            f"{session_id}: the readers were told {told}, the journal says {expected} (seed {SEED})"
        )
        assert lines and lines[-1][1] == "other", f"{session_id}: the readers never saw it close"
        turns += sum(1 for kind, _ in expected if kind == "done")
    acked = {line.split()[1] for line in _lines(root / "acks")}
    lost = acked - started
    assert acked and not lost, f"{len(lost)} of {len(acked)} acknowledged inputs lost (seed {SEED})"
    return turns, len(journals), len(acked)
