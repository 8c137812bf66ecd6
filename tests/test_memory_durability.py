"""The memory's durable state under damage and load: ledger gaps, a corrupt index, a ledger that
grows by a small constant per reinforcement, and a judge that never blocks a search."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import msgspec
import pytest
from structlog.testing import capture_logs

from tests.memory_helpers import fact_of
from tests.test_memory import candidate, judge_says
from xai.exceptions import JournalError, LedgerGapError
from xai.memory import Decision, Fact, LongTermMemory, MemoryConfig
from xai.memory._ledger import Ledger
from xai.providers import ProviderEvent, ProviderRequest
from xai.testing import ScriptedProvider

pytestmark = pytest.mark.anyio


async def test_a_ledger_missing_a_line_stops_with_the_missing_decision(tmp_path: Path) -> None:
    async with LongTermMemory(tmp_path) as memory:
        await memory.adjudicate(
            [
                candidate("The user lives in Lisbon."),
                candidate("The user has a cat called Tom."),
                candidate("The user is learning the cello."),
            ]
        )
    path = tmp_path / "ledger.jsonl"
    first, _second, third = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(first + third)
    with pytest.raises(LedgerGapError) as caught:
        async with LongTermMemory(tmp_path):
            pass
    error = caught.value
    assert isinstance(error, JournalError)  # what a caller catching journal damage expects
    assert error.path == str(path) and error.line == 2 and error.missing == 2
    assert str(path) in str(error) and "decision(s) 2 are missing" in str(error)
    with pytest.raises(LedgerGapError):
        LongTermMemory(tmp_path).ledger()  # the audit read refuses it too


async def test_a_corrupt_index_is_rebuilt_from_the_ledger_with_a_warning(tmp_path: Path) -> None:
    async with LongTermMemory(tmp_path) as memory:
        await memory.adjudicate(
            [candidate("The user grows basil."), candidate("The user drives a van.")]
        )
        facts = memory.facts()
    store = tmp_path / "index" / "chroma.sqlite3"
    garbage = b"this is not a database " * 200
    store.write_bytes(garbage)
    with capture_logs() as logs:
        async with LongTermMemory(tmp_path) as memory:
            assert memory.facts() == facts
            (hit,) = await memory.search("herbs in the garden", k=1)
            assert fact_of(hit).text == "The user grows basil."
            assert await memory.fact_store.require_index().versions() == {
                f.id: f.version for f in facts
            }
    (rebuilt,) = [entry for entry in logs if entry["event"] == "memory.index_rebuilt"]
    assert rebuilt["log_level"] == "warning" and "chroma" not in rebuilt["path"]
    assert (tmp_path / "index.corrupt" / "chroma.sqlite3").read_bytes() == garbage  # kept


async def test_a_reinforcement_adds_a_small_constant_to_the_ledger(tmp_path: Path) -> None:
    n = 1_000
    seen = [candidate("The user plays the cello.", f"session-{i:04d}") for i in range(n)]
    async with LongTermMemory(tmp_path) as memory:
        await memory.adjudicate(seen[:1])
        base = (tmp_path / "ledger.jsonl").stat().st_size
        await memory.adjudicate(seen[1:])
        (fact,) = memory.facts()
    lines = (tmp_path / "ledger.jsonl").read_bytes().splitlines()
    reinforcements = [line for line in lines if b'"kind":"reinforce"' in line]
    assert len(reinforcements) == n - 1 and fact.count == n and len(fact.sources) == n
    grown = (tmp_path / "ledger.jsonl").stat().st_size - base
    # The whole fact (1,000 sessions and sources) would be ~40 kB a line by the end.
    assert max(map(len, reinforcements)) < 1_000
    assert grown / (n - 1) < 1_000
    assert Ledger.replay(tmp_path / "ledger.jsonl").facts == {fact.id: fact}
    async with LongTermMemory(tmp_path) as memory:
        assert memory.get(fact.id) == fact
        audit = memory.ledger()
    assert audit[-1].facts == (fact,)  # read back whole, as it was decided


async def test_a_ledger_of_whole_facts_still_reads_and_grows(tmp_path: Path) -> None:
    """A ledger written before changes existed: every line a Decision with whole facts."""
    first = candidate("The user speaks Portuguese.", "s1")
    fact = Fact(
        id="f-old",
        text=first.text,
        sessions=("s1",),
        first_seen=1.0,
        last_seen=1.0,
        sources=(first.id,),
    )
    seen = msgspec.structs.replace(fact, count=2, sessions=("s1", "s2"), version=2)
    old = [
        Decision(seq=1, kind="add", reason="new", at=1.0, candidate=first, facts=(fact,)),
        Decision(seq=2, kind="reinforce", reason="same", at=2.0, facts=(seen,)),
    ]
    (tmp_path / "ledger.jsonl").write_bytes(b"".join(msgspec.json.encode(d) + b"\n" for d in old))
    config = MemoryConfig(promote_after_sessions=10)
    async with LongTermMemory(tmp_path, config=config) as memory:
        assert memory.get("f-old") == seen
        (again,) = await memory.adjudicate([candidate("The user speaks Portuguese.", "s3")])
        assert again.kind == "reinforce" and again.facts[0].count == 3
    async with LongTermMemory(tmp_path) as memory:
        (now,) = memory.facts()
        assert now.sessions == ("s1", "s2", "s3") and now.version == 3
        assert [d.seq for d in memory.ledger()] == [1, 2, 3]


class GatedJudge(ScriptedProvider):
    """A scripted judge that holds every request until ``release`` is set."""

    def __init__(self) -> None:
        super().__init__()
        self.entered = anyio.Event()
        self.release = anyio.Event()

    async def stream(self, request: ProviderRequest) -> AsyncIterator[ProviderEvent]:
        self.entered.set()
        await self.release.wait()
        async for event in super().stream(request):
            yield event


async def test_a_search_and_a_write_never_wait_behind_the_judge(tmp_path: Path) -> None:
    config = MemoryConfig(duplicate_similarity=0.99, novel_similarity=0.3)
    async with LongTermMemory(tmp_path, config=config) as memory:
        await memory.adjudicate([candidate("The user plays tennis on Saturdays.")])
    judge = GatedJudge()
    judge.script.add_responder(judge_says({"decision": "reinforce", "fact": 1, "reason": "same"}))
    decided: list[Decision] = []
    async with LongTermMemory(tmp_path, judge=judge, config=config) as memory:
        (tennis,) = memory.facts()

        async def adjudicate() -> None:
            decided.extend(await memory.adjudicate([candidate("The user plays tennis with Ana.")]))

        async with anyio.create_task_group() as group:
            group.start_soon(adjudicate)
            await judge.entered.wait()
            with anyio.fail_after(30):  # a guard against a deadlock, not a wait
                (hit,) = await memory.search("tennis", k=1)  # builds the lexicon: takes the lock
                await memory.forget(tennis.id)  # another writer, while the judge thinks
            judge.release.set()
    assert fact_of(hit).id == tennis.id
    # The judge saw a fact that is gone by the time its verdict came: it is not applied.
    (decision,) = decided
    gone = memory.get(tennis.id)
    assert decision.kind == "add" and gone is not None and gone.status == "forgotten"
    assert len(judge.requests) == 1
