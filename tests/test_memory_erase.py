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
