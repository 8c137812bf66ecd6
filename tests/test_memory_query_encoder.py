"""The query encoder: questions embedded by an int8 copy of MiniLM, made once per machine."""

from __future__ import annotations

import json
import logging
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest
from structlog.testing import capture_logs

from xai.memory import LocalMiniLM, LongTermMemory, MemoryConfig, local_minilm, query_embedding
from xai.memory._query_model import query_model
from xai.messages import MemoryCandidate

pytestmark = pytest.mark.anyio

QUESTIONS = [
    "What did you recommend last time?",
    "When did Ana start her pottery class?",
    "which hiking trail do I like best",
    "x",
]


def test_the_query_model_is_made_once_without_touching_the_applications_logging(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The quantiser logs through ``logging.info``, which gives a root logger without
    handlers a stderr handler for good: an application's logging is not xai's to change."""
    model = local_minilm()
    model._load()
    root = logging.getLogger()
    monkeypatch.setattr(root, "handlers", [])  # an application that left logging alone
    made = query_model(model._model, model._digest, tmp_path)
    assert root.handlers == []
    assert [p.name for p in tmp_path.iterdir()] == [made.name]  # no scratch left behind
    stat = made.stat()
    again = query_model(model._model, model._digest, tmp_path)
    assert again == made and again.stat().st_mtime_ns == stat.st_mtime_ns  # not made twice


def test_a_questions_vector_is_a_unit_vector_close_to_the_document_models() -> None:
    model = local_minilm()
    for question in QUESTIONS:
        fast = np.asarray(model.embed_query_sync(question))
        (document,) = model.embed_sync([question])
        assert abs(float(np.linalg.norm(fast)) - 1.0) < 1e-5
        assert float(fast @ np.asarray(document)) > 0.98, question
    assert model._query, "the query encoder was not made here"


def test_without_a_writable_cache_questions_use_the_document_model(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    blocked = tmp_path / "not-a-directory"
    blocked.write_text("a file where the cache would go")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocked))
    model = LocalMiniLM(cache_size=0)
    with capture_logs() as logs:
        vector = model.embed_query_sync(QUESTIONS[0])
    assert vector == model.embed_sync([QUESTIONS[0]])[0]  # the same session, bit for bit
    assert [e["event"] for e in logs] == ["memory.query_model_unavailable"]
    model.embed_query_sync(QUESTIONS[1])  # tried once, not on every question
    assert model._query is False


class _Counting:
    """The offline model, noting what it embeds as documents and as questions."""

    def __init__(self) -> None:
        self.inner = local_minilm()
        self.name = self.inner.name
        self.dimension = self.inner.dimension
        self.documents: list[str] = []
        self.questions: list[str] = []

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        self.documents += texts
        return await self.inner.embed(texts)

    async def embed_query(self, text: str) -> list[float]:
        self.questions.append(text)
        return await self.inner.embed_query(text)


async def test_search_and_the_prefix_embed_their_question_with_the_query_encoder(
    tmp_path: Path,
) -> None:
    embedder = _Counting()
    async with LongTermMemory(
        tmp_path, embedder=embedder, config=MemoryConfig(use_judge=False)
    ) as memory:
        said = MemoryCandidate(
            text="The user's sister bakes bread.", confidence=0.8, evidence=("m1",), session_id="s1"
        )
        await memory.adjudicate([said])
        assert embedder.documents == ["The user's sister bakes bread."]
        (hit,) = await memory.search("who bakes bread?", k=1)
        assert "bakes bread" in hit.fact.text  # type: ignore[union-attr]
        assert "bread" in await memory.prefix("baking")
    assert embedder.questions == ["who bakes bread?", "baking"]
    assert embedder.documents == ["The user's sister bakes bread."]


async def test_an_embedder_without_a_query_encoder_embeds_the_question_as_a_document() -> None:
    class Plain:
        name, dimension = "plain", 2

        async def embed(self, texts: Sequence[str]) -> list[list[float]]:
            return [[1.0, 0.0] for _ in texts]

    assert await query_embedding(Plain())("anything") == [1.0, 0.0]


def test_the_search_bench_builds_a_small_store_and_ends_with_its_ratio(tmp_path: Path) -> None:
    # It runs and its last line is the JSON the notes cite (nothing is timed here).
    bench = Path(__file__).parent.parent / "bench" / "search.py"
    store = tmp_path / "store"
    args = [sys.executable, str(bench), "--store", str(store), "--build", "120", "--rounds", "1"]
    done = subprocess.run(args, capture_output=True, text=True, timeout=50, check=False)
    assert done.returncode == 0, done.stderr
    figures = json.loads(done.stdout.splitlines()[-1])
    assert figures["facts"] >= 120 and figures["episodes"] == 120
    assert figures["query_vs_document_search_p50_ratio"] > 0
