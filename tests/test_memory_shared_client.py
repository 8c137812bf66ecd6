"""One chromadb client per process and place: memories on their own directories do not each
keep one after they search, and stores on the same directory share one."""

from __future__ import annotations

import os
from collections import Counter
from pathlib import Path

import pytest

from xai.memory import IndexStore, LongTermMemory, ScoredFact, local_minilm
from xai.memory._clients import IDLE_EMBEDDED, open_clients
from xai.messages import MemoryCandidate

pytestmark = pytest.mark.anyio

_CHROMADB_THREADS = ("tokio-rt-worker", "sqlx-sqlite-wor")
"""The names chromadb's Rust core gives its threads (an embedded client starts about six)."""


def chromadb_threads() -> int:
    names: Counter[str] = Counter()
    for task in os.listdir("/proc/self/task"):
        try:
            names[Path(f"/proc/self/task/{task}/comm").read_text().strip()] += 1
        except OSError:
            continue  # a thread that ended meanwhile
    return sum(names[n] for n in _CHROMADB_THREADS)


def said(text: str, evidence: str) -> MemoryCandidate:
    return MemoryCandidate(text=text, evidence=(evidence,), session_id="s1")


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="counts threads in /proc")
async def test_memories_that_searched_keep_no_client_or_threads_each(tmp_path: Path) -> None:
    embedder = local_minilm()
    memories = [
        LongTermMemory(tmp_path / f"m{i}", embedder=embedder, lazy_index=True, sync=False)
        for i in range(6)
    ]
    try:
        for memory in memories:
            await memory.open()
        assert open_clients() == 0  # opened lazily: nobody asked yet
        await memories[0].search("anything")
        one = chromadb_threads()
        assert one > 0 and open_clients() == 1
        for memory in memories[1:]:
            await memory.search("anything")
        # Each search opened its memory's client; the idle ones beyond the last used
        # were closed again: the process holds what one memory holds, not six (a
        # client's runtime starts a thread more or less as it goes: one client's worth
        # is the bound, against six of them before).
        assert open_clients() <= IDLE_EMBEDDED
        assert chromadb_threads() < 2 * one
    finally:
        for memory in memories:
            await memory.close()
    assert open_clients() == 0


async def test_a_parked_client_is_made_again_by_the_next_use(tmp_path: Path) -> None:
    embedder = local_minilm()
    one = LongTermMemory(tmp_path / "one", embedder=embedder, sync=False)
    two = LongTermMemory(tmp_path / "two", embedder=embedder, sync=False)
    async with one, two:
        await one.adjudicate([said("My cat is called Miso.", "m1")])
        await two.adjudicate([said("I live in Porto.", "m2")])  # parks one's client
        await one.adjudicate([said("I play the cello on Sundays.", "m3")])  # and two's
        hits = await one.search("pets", k=1, tiers=["L1", "L2"])
        assert [h.fact.text for h in hits if isinstance(h, ScoredFact)] == [
            "My cat is called Miso."
        ]
        (hit,) = await two.search("where do I live", k=1, tiers=["L1", "L2"])
        assert isinstance(hit, ScoredFact) and hit.fact.text == "I live in Porto."
    async with LongTermMemory(tmp_path / "one", embedder=embedder, sync=False) as again:
        texts = sorted(f.text for f in again.facts())
        assert texts == ["I play the cello on Sundays.", "My cat is called Miso."]


async def test_stores_on_one_directory_share_one_client_until_the_last_closes(
    tmp_path: Path,
) -> None:
    first = IndexStore.local(tmp_path / "index")
    second = IndexStore.local(tmp_path / "index")
    embedder = local_minilm()
    try:
        first.collection("facts", embedder)
        second.collection("facts", embedder)
        assert first.client() is second.client()
        assert open_clients() == 1
        first.close()
        first.close()  # idempotent: it lets go once
        assert second.started and open_clients() == 1
    finally:
        second.close()
    assert open_clients() == 0
