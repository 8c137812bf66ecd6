"""Search by words as well as meaning: the BM25 index and its fusion in ``search``."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from tests.memory_helpers import fact_of
from tests.test_memory import candidate
from xai.exceptions import ConfigurationError, ProviderConnectionError
from xai.memory import (
    Embedder,
    LexicalIndex,
    LongTermMemory,
    MemoryConfig,
    lexical_tokens,
    local_minilm,
)

pytestmark = pytest.mark.anyio


def test_tokens_are_stemmed_without_stop_words() -> None:
    assert lexical_tokens("The user is running to the Shops in 2023!") == [
        "user",
        "run",
        "shop",
        "2023",
    ]


def test_bm25_ranks_rare_words_and_follows_changes() -> None:
    index = LexicalIndex.of(
        [
            ("a", "The user keeps a spare key under the blue pot."),
            ("b", "The user likes blue."),
            ("c", "The user owns a garden."),
        ]
    )
    assert [doc for doc, _ in index.top("blue pot", 5)] == ["a", "b"]  # c shares no word
    assert index.top("nothing matches", 5) == []
    assert [doc for doc, _ in index.top("blue", 5, keep=lambda d: d != "b")] == ["a"]
    index.set("b", "The user's pot is green.")  # replaced: "blue" is gone from b
    assert [doc for doc, _ in index.top("blue", 5)] == ["a"]
    index.discard("a")
    index.set("d", "A blue bicycle.")  # takes a's free row
    assert [doc for doc, _ in index.top("blue", 5)] == ["d"] and len(index) == 3
    assert "a" not in index and "d" in index


def test_words_in_most_facts_are_skipped() -> None:
    index = LexicalIndex.of((f"f{n}", f"The user noted item {n}.") for n in range(200))
    index.set("rare", "The user noted a zeppelin.")
    assert [doc for doc, _ in index.top("user zeppelin", 5)] == ["rare"]
    assert index.top("user", 5) == []  # in every fact: no evidence either way


async def test_search_fuses_words_and_meaning(tmp_path: Path) -> None:
    texts = [
        "The user keeps the spare key under the blue pot.",
        "The user lost a key last winter.",
        "The user's neighbour waters the plants.",
        "The user's house has a red door.",
    ]
    async with (
        LongTermMemory(
            tmp_path / "words", config=MemoryConfig(lexical_weight=1.0, use_judge=False)
        ) as words,
        LongTermMemory(
            tmp_path / "meaning", config=MemoryConfig(lexical_weight=0.0, use_judge=False)
        ) as meaning,
    ):
        for n, text in enumerate(texts):
            for memory in (words, meaning):
                await memory.adjudicate([candidate(text, f"s{n}")])
        # All words, no meaning: only the facts sharing a word with the query can lead.
        hits = await words.search("red door", k=4)
        assert fact_of(hits[0]).text == "The user's house has a red door."
        # Scores stay cosine similarities, whatever the order.
        by_meaning = {fact_of(h).text: h.score for h in await meaning.search("red door", k=4)}
        assert {fact_of(h).text: h.score for h in hits} == pytest.approx(by_meaning, abs=1e-4)
        # The index follows writes made after it was built.
        await words.adjudicate([candidate("The user painted the door red again.", "s9")])
        assert "painted" in fact_of((await words.search("painted", k=1))[0]).text
        forgotten = fact_of((await words.search("red door", k=1))[0])
        await words.forget(forgotten.id)
        assert all(fact_of(h).id != forgotten.id for h in await words.search("red door", k=4))


async def test_search_by_tier_filters_words_too(tmp_path: Path) -> None:
    async with LongTermMemory(
        tmp_path, config=MemoryConfig(promote_after_sessions=2, use_judge=False)
    ) as memory:
        await memory.adjudicate([candidate("The user's cat is called Miso.", "s1")])
        await memory.adjudicate([candidate("The user's cat is called Miso.", "s2")])  # L2 now
        await memory.adjudicate([candidate("The user's dog Miso barks.", "s3")])
        stable = await memory.search("Miso", k=5, tiers=["L2"])
        assert [fact_of(h).tier for h in stable] == ["L2"]


def test_lexical_weight_is_a_share() -> None:
    with pytest.raises(ConfigurationError, match="lexical_weight"):
        MemoryConfig(lexical_weight=1.5)


async def test_a_fact_retired_in_a_running_batch_is_not_found(tmp_path: Path) -> None:
    """During an adjudication batch chromadb still holds retired facts; search must not
    offer them (the state is the truth)."""
    import msgspec

    for weight in (0.0, 0.3):
        async with LongTermMemory(
            tmp_path / str(weight), config=MemoryConfig(lexical_weight=weight, use_judge=False)
        ) as memory:
            await memory.adjudicate([candidate("The user lives in Paris.", "s1")])
            (fact,) = memory.facts()
            assert fact_of((await memory.search("Paris", k=1))[0]).id == fact.id
            retired = msgspec.structs.replace(fact, status="forgotten", version=fact.version + 1)
            async with memory.fact_store.batch():  # the index is written when the batch ends
                await memory.fact_store.write("forget", "test", [retired])
                assert await memory.search("Paris", k=3) == []


class _BrokenEmbedder:
    name = "broken"
    dimension = 384

    def __init__(self, inner: Embedder) -> None:
        self.inner = inner
        self.broken = False

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        if self.broken:
            raise ProviderConnectionError("the embeddings endpoint is down")
        return await self.inner.embed(texts)


async def test_an_embedder_failure_reaches_the_caller_as_itself(tmp_path: Path) -> None:
    embedder = _BrokenEmbedder(local_minilm())
    async with LongTermMemory(tmp_path, embedder=embedder) as memory:
        await memory.adjudicate([candidate("The user lives in Paris.", "s1")])
        embedder.broken = True
        with pytest.raises(ProviderConnectionError, match="down"):
            await memory.search("Paris")


def test_a_term_in_most_documents_counts_in_small_indexes_only() -> None:
    few = LexicalIndex.of([("a", "blue sky"), ("b", "blue sea"), ("c", "green field")])
    assert [doc for doc, _ in few.top("blue", 5)] == ["a", "b"]  # 3 documents: still scored
