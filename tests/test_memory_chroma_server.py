"""Memory on a Chroma server (``IndexStore.server``), as a cluster of hosts would use it:
while the server is down, searches and decisions fail with a typed, retryable error and
nothing decided is lost; once it is back, everything works again and the index is repaired
from the ledger."""

from __future__ import annotations

import gc
from pathlib import Path

import pytest

from tests.chroma_server import ChromaServer
from xai.exceptions import MemoryUnavailableError
from xai.memory import IndexStore, LongTermMemory, ScoredFact, local_minilm
from xai.messages import MemoryCandidate

pytestmark = [
    pytest.mark.anyio,
    # chromadb's HTTP client drops (without closing) the connection a killed server cut.
    pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning"),
    pytest.mark.filterwarnings("ignore::ResourceWarning"),
]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # one backend is enough: the server is a subprocess either way


def said(text: str, evidence: str) -> MemoryCandidate:
    return MemoryCandidate(text=text, evidence=(evidence,), session_id="s1")


async def texts(memory: LongTermMemory, query: str) -> list[str]:
    hits = await memory.search(query, k=5, tiers=["L1", "L2"])
    return [hit.fact.text for hit in hits if isinstance(hit, ScoredFact)]


async def test_a_chroma_server_that_dies_and_comes_back(
    tmp_path: Path, chroma: ChromaServer
) -> None:
    store = IndexStore.server("127.0.0.1", chroma.port)
    memory = LongTermMemory(
        tmp_path / "agent", embedder=local_minilm(), store=store, namespace="ada", lazy_index=True
    )
    try:
        async with memory:
            await memory.adjudicate([said("My cat is called Miso.", "m1")])
            assert await texts(memory, "pets") == ["My cat is called Miso."]
            chroma.kill()
            with pytest.raises(MemoryUnavailableError) as caught:
                await memory.search("pets", k=3)
            assert caught.value.retryable and f":{chroma.port}" in caught.value.where
            porto = said("I live in Porto.", "m2")
            with pytest.raises(MemoryUnavailableError):
                await memory.adjudicate([porto])
            assert not memory.decided(porto.id)  # its Session keeps it, unacknowledged
            assert [f.text for f in memory.facts()] == ["My cat is called Miso."]
            chroma.start()
            await memory.adjudicate([porto])  # the retry
            assert await texts(memory, "where does the user live") == [
                "I live in Porto.",
                "My cat is called Miso.",
            ]  # the index repaired from the ledger when it opened again
            await memory.adjudicate([said("I work as a nurse.", "m3")])
        async with LongTermMemory(
            tmp_path / "agent", embedder=local_minilm(), store=store, namespace="ada"
        ) as again:
            assert "I work as a nurse." in await texts(again, "job")
            assert [d.kind for d in again.ledger()] == ["add", "add", "add"]
    finally:
        store.close()
        gc.collect()  # the cut connections are finalised here, where their warning is expected
