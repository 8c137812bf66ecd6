"""Kill -9 during adjudication at several points: nothing acknowledged lost, nothing doubled."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import anyio
import msgspec
import pytest
from structlog.testing import capture_logs

from tests.crash_helpers import kill_when
from xai.memory import LongTermMemory
from xai.messages import MemoryCandidate

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # the kill happens in a child process; reopening once is enough


TEXTS = [
    ("The user lives in Lisbon.", "s1"),
    ("The user has a dog named Rex.", "s1"),
    ("The user lives in Lisbon.", "s2"),  # reinforce
    ("The user works as a nurse.", "s2"),
    ("The user has a dog named Rex.", "s3"),  # reinforce
    ("The user no longer works as a nurse.", "s3"),  # supersede
    ("The user plays chess on Sundays.", "s3"),
    ("The user lives in Lisbon.", "s3"),  # reinforce -> promote
    ("The user is learning Japanese.", "s4"),
    ("The user prefers tea to coffee.", "s4"),
]


def candidates() -> list[MemoryCandidate]:
    return [
        MemoryCandidate(
            id=f"c{i:02d}", text=text, evidence=("m",), session_id=session, confidence=0.8
        )
        for i, (text, session) in enumerate(TEXTS)
    ]


def run_and_kill(directory: Path, point: str, n: int, deferred: bool) -> None:
    (directory / "candidates.json").write_bytes(msgspec.json.encode(candidates()))
    args = [str(directory), point, str(n), *(["deferred"] if deferred else [])]
    kill_when("memory_crash_child", args, (directory / "frozen").exists)


@pytest.mark.parametrize(
    ("point", "n", "deferred"),
    [
        ("before_ledger", 4, False),
        ("after_ledger", 4, False),
        ("after_index", 6, False),
        ("after_ledger", 9, False),
        # Index writes deferred across passes (the default): a kill leaves every
        # acknowledged decision in the ledger and none in chromadb.
        ("after_ledger", 4, True),
        ("acked", 7, True),
        ("acked", 10, True),
    ],
)
async def test_kill_during_adjudication(tmp_path: Path, point: str, n: int, deferred: bool) -> None:
    await anyio.to_thread.run_sync(run_and_kill, tmp_path, point, n, deferred)
    acked = (
        (tmp_path / "acked.log").read_text().split() if (tmp_path / "acked.log").exists() else []
    )
    with capture_logs() as logs:
        memory = LongTermMemory(tmp_path / "memory")
        await memory.open()
    try:
        if point == "acked":  # every decision acknowledged, none of them in chromadb yet
            assert len(acked) == n
            (repaired,) = [e for e in logs if e["event"] == "memory.index_repaired"]
            assert repaired["facts"] == len(memory.facts())
        ledger = memory.ledger()
        decided = [d.candidate.id for d in ledger if d.candidate is not None]
        assert set(acked) <= set(decided), "an acknowledged decision was lost"
        assert len(decided) == len(set(decided)), "a candidate was decided twice"
        # ledger and index agree (the index was repaired on open)
        indexed = await memory.fact_store.require_index().versions()
        assert indexed == {f.id: f.version for f in memory.facts()}  # active facts only
        # redeliver everything: what was decided is not decided again, the rest is
        await memory.adjudicate(candidates())
        final = [d.candidate.id for d in memory.ledger() if d.candidate is not None]
    finally:
        await memory.close()
    assert Counter(final) == Counter(c.id for c in candidates())
    texts = Counter(f.text for f in memory.facts())
    assert all(count == 1 for count in texts.values()), texts
    assert set(texts) == {
        "The user lives in Lisbon.",
        "The user has a dog named Rex.",
        "The user no longer works as a nurse.",
        "The user plays chess on Sundays.",
        "The user is learning Japanese.",
        "The user prefers tea to coffee.",
    }
    lisbon = next(f for f in memory.facts() if f.text == "The user lives in Lisbon.")
    assert lisbon.count == 3 and lisbon.tier == "L2"
