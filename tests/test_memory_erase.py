"""``LongTermMemory.forget(scope="erase")`` on its own (issue 29), on both anyio backends:
the sentence leaves every file of the memory's directory (the ledger, the episodes and
chromadb's sqlite), a restart replays the ledger with the hash in its place, and what
was said around it stays found. Real chromadb and MiniLM."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.test_memory_forget_scopes import CAT, files_holding, tell, texts
from xai._files import erased_mark
from xai.memory import LongTermMemory, MemoryConfig

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(120)]

SECRET = "My bank PIN hint is the year of the Lisbon flood."


async def test_erase_scrubs_the_memory_directory(tmp_path: Path) -> None:
    async with LongTermMemory(tmp_path, config=MemoryConfig(use_judge=False)) as memory:
        secret = await tell(memory, "s1", SECRET)
        cat = await tell(memory, "s2", CAT)
        assert files_holding(tmp_path, SECRET)
        decision = await memory.forget(secret, "asked", scope="erase")
        assert decision.facts[0].text == erased_mark(SECRET)
        assert files_holding(tmp_path, SECRET) == []
        assert not any("Lisbon" in t for t in texts(await memory.search("bank PIN", 20)))
        assert CAT in texts(await memory.search("What is my cat called?", 5))
    async with LongTermMemory(tmp_path, config=MemoryConfig(use_judge=False)) as memory:
        assert memory.get(secret).text == erased_mark(SECRET)  # type: ignore[union-attr]
        assert memory.get(cat).status == "active"  # type: ignore[union-attr]
        await memory.forget(cat, scope="erase")  # the ledger, rewritten, still appends
        assert [d.kind for d in memory.ledger()] == ["add", "add", "forget", "forget"]
    assert files_holding(tmp_path, SECRET) == files_holding(tmp_path, CAT) == []


async def test_erase_drops_the_index_snapshot(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The snapshot of a large memory holds the vectors and the words of what was said:
    an erase drops it, and the one the next close writes holds nothing of the secret."""
    from xai.memory import _snapshot

    monkeypatch.setattr(_snapshot, "MIN_ITEMS", 1)  # every memory counts as large
    config = MemoryConfig(use_judge=False)
    async with LongTermMemory(tmp_path, config=config) as memory:
        secret = await tell(memory, "s1", SECRET)
        await tell(memory, "s2", CAT)
    snapshot = tmp_path / _snapshot.SNAPSHOT_FILE
    assert snapshot.exists()
    async with LongTermMemory(tmp_path, config=config) as memory:
        await memory.forget(secret, "asked", scope="erase")
        assert not snapshot.exists()
        assert files_holding(tmp_path, SECRET) == []
    assert files_holding(tmp_path, SECRET) == []  # chromadb's files as it closed, too
    async with LongTermMemory(tmp_path, config=config) as memory:
        assert CAT in texts(await memory.search("What is my cat called?", 5))
        assert "flood" not in " ".join(texts(await memory.search("flood", 20)))


def test_index_files_lose_the_needle_and_keep_their_layout(tmp_path: Path) -> None:
    """chromadb's HNSW files are written whole, with heap leftovers in their unused part:
    the erased text is zeroed there, byte for byte the same length."""
    from xai.memory._erase import scrub_index_files

    segment = tmp_path / "segment"
    segment.mkdir()
    data = b"\x01\x02" * 100 + SECRET.encode() + b"\x00" * 50 + SECRET.encode()[:20]
    (segment / "data_level0.bin").write_bytes(data)
    (segment / "header.bin").write_bytes(b"\x07" * 40)
    assert scrub_index_files(tmp_path, [SECRET]) == 1
    scrubbed = (segment / "data_level0.bin").read_bytes()
    assert len(scrubbed) == len(data) and SECRET.encode() not in scrubbed
    assert scrubbed[:200] == data[:200]
    assert (segment / "header.bin").read_bytes() == b"\x07" * 40
