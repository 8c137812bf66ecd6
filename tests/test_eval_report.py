"""Evaluation figures from hand-made records, the Markdown report and the files it writes."""

from __future__ import annotations

import sys
from pathlib import Path

import msgspec
import pytest

from xai.eval._records import QuestionRecord, RunInfo, SampleRecord
from xai.eval._report import PUBLISHED, render_report, write_plot, write_report
from xai.eval._summary import Summary, encode_summary, summarise

INFO = RunInfo(
    dataset="locomo",
    data="data/locomo10.json",
    backends=("vector", "full"),
    ks=(5, 10),
    context_k=10,
    answer_model="gpt-test",
    judge_model="judge-test",
    embedder="all-MiniLM-L6-v2",
    started="2025-01-01T00:00:00Z",
    xai_version="0.1.0",
)


def question(qid: str, category: str, **fields: object) -> QuestionRecord:
    return msgspec.convert(
        {"id": qid, "category": category, "question": f"{qid}?", "answer": "a", **fields},
        QuestionRecord,
    )


def vector_records() -> list[SampleRecord]:
    """A ranking backend, retrieval only; q3 has no evidence, hence no recall."""
    return [
        SampleRecord(
            sample="s1",
            backend="vector",
            ingest_s=1.5,
            questions=(
                question(
                    "q1",
                    "single-hop",
                    evidence=("D1:1", "D1:2"),
                    retrieved=("D1:1", "D2:1"),
                    recall={5: 0.5, 10: 1.0},
                    session_recall={5: 1.0, 10: 1.0},
                    context_tokens=100,
                    retrieval_ms=10.0,
                ),
                question(
                    "q2",
                    "single-hop",
                    evidence=("D1:3", "D2:2"),
                    retrieved=("D3:1", "D1:3"),
                    recall={5: 0.0, 10: 0.5},
                    session_recall={5: 0.0, 10: 1.0},
                    context_tokens=200,
                    retrieval_ms=20.0,
                ),
                question(
                    "q3", "multi-hop", retrieved=("D1:1",), context_tokens=300, retrieval_ms=30.0
                ),
            ),
        ),
        SampleRecord(
            sample="s2",
            backend="vector",
            ingest_s=2.5,
            questions=(
                question(
                    "q4",
                    "multi-hop",
                    evidence=("D1:1",),
                    retrieved=("D1:1",),
                    recall={5: 1.0, 10: 1.0},
                    session_recall={5: 0.5, 10: 1.0},
                    context_tokens=400,
                    retrieval_ms=40.0,
                ),
            ),
        ),
    ]


def full_records() -> list[SampleRecord]:
    """Full context: no ranking, answers scored; q3's answer failed."""
    common = {"context_tokens": 1000}
    return [
        SampleRecord(
            sample="s1",
            backend="full",
            questions=(
                question(
                    "q1", "single-hop", prediction="a", f1=1.0, exact=1.0, judge=True, **common
                ),
                question(
                    "q2", "single-hop", prediction="b", f1=0.5, exact=0.0, judge=False, **common
                ),
                question("q3", "multi-hop", error="provider timed out", **common),
            ),
        ),
        SampleRecord(
            sample="s2",
            backend="full",
            questions=(
                question(
                    "q4", "multi-hop", prediction="c", f1=0.0, exact=0.0, judge=True, **common
                ),
            ),
        ),
    ]


def make_summary(info: RunInfo = INFO) -> Summary:
    return summarise(info, {"vector": vector_records(), "full": full_records()})


def test_ranking_backend_figures() -> None:
    vector = make_summary().backends[0]
    assert (vector.backend, vector.samples, vector.questions, vector.ingest_s) == (
        "vector",
        2,
        4,
        4.0,
    )
    overall = vector.overall
    assert overall.count == 4
    # q3 has no evidence: recall is the mean over q1, q2 and q4.
    assert overall.recall == pytest.approx({5: 50.0, 10: 250.0 / 3})
    assert overall.session_recall == pytest.approx({5: 50.0, 10: 100.0})
    assert (overall.f1, overall.exact, overall.judge) == (None, None, None)
    assert (overall.answered, overall.errors) == (0, 0)
    assert overall.context_tokens == 250.0
    # Linear interpolation over 10, 20, 30, 40 ms.
    assert overall.retrieval_ms_p50 == pytest.approx(25.0)
    assert overall.retrieval_ms_p95 == pytest.approx(38.5)

    assert list(vector.by_category) == ["multi-hop", "single-hop"]
    single, multi = vector.by_category["single-hop"], vector.by_category["multi-hop"]
    assert single.count == 2 and multi.count == 2
    assert single.recall == pytest.approx({5: 25.0, 10: 75.0})
    assert single.session_recall == pytest.approx({5: 50.0, 10: 100.0})
    assert multi.recall == pytest.approx({5: 100.0, 10: 100.0})
    assert multi.session_recall == pytest.approx({5: 50.0, 10: 100.0})
    assert multi.context_tokens == 350.0
    assert multi.retrieval_ms_p50 == pytest.approx(35.0)
    assert multi.retrieval_ms_p95 == pytest.approx(39.5)


def test_answering_backend_figures() -> None:
    full = make_summary().backends[1]
    overall = full.overall
    assert full.backend == "full" and full.ingest_s == 0.0
    assert overall.recall == {} and overall.session_recall == {}
    assert overall.f1 == pytest.approx(50.0)  # (1 + 0.5 + 0) / 3; q3 was not scored
    assert overall.exact == pytest.approx(100.0 / 3)
    assert overall.judge == pytest.approx(200.0 / 3)  # two True of three verdicts
    assert (overall.answered, overall.errors) == (3, 1)
    assert overall.context_tokens == 1000.0
    assert overall.retrieval_ms_p50 == 0.0 and overall.retrieval_ms_p95 == 0.0
    single, multi = full.by_category["single-hop"], full.by_category["multi-hop"]
    assert single.f1 == pytest.approx(75.0) and single.judge == pytest.approx(50.0)
    assert multi.f1 == 0.0 and multi.judge == 100.0
    assert (multi.answered, multi.errors) == (1, 1)


def test_summary_follows_info_order_and_keeps_empty_backends() -> None:
    info = msgspec.structs.replace(INFO, backends=("full", "null", "vector"))
    summary = summarise(info, {"vector": vector_records(), "full": full_records()})
    assert [b.backend for b in summary.backends] == ["full", "null", "vector"]
    null = summary.backends[1]
    assert (null.samples, null.questions, null.overall.count, null.by_category) == (0, 0, 0, {})
    assert null.overall.f1 is None and null.overall.recall == {}
    assert "No questions were recorded." in render_report(summary)


def test_report_shows_measured_and_published_figures() -> None:
    text = render_report(make_summary(), plot="recall_at_k.png")
    assert text.startswith("# Memory evaluation: LoCoMo\n")
    for line in (
        "- Data: `data/locomo10.json`",
        "- Answer model: `gpt-test`",
        "- Judge: `judge-test`",
        "- Embedder: `all-MiniLM-L6-v2`",
        "- xai version: 0.1.0",
        "| backend | questions | recall@5 | recall@10 | session recall@5 | session recall@10 "
        "| F1 | EM | judge | context tokens | retrieval p50 ms | retrieval p95 ms |",
        "| `vector` | 4 | 50.0 | 83.3 | 50.0 | 100.0 | — | — | — | 250 | 25.0 | 38.5 |",
        "| `full` | 4 | — | — | — | — | 50.0 | 33.3 | 66.7 | 1000 | 0.0 | 0.0 |",
        "| *published:* DRAGON retriever (LoCoMo paper, Table 3) | — | 56.7 | 66.2 | — | — "
        "| — | — | — | — | — | — |",
        "| *published:* all-MiniLM-L6-v2 | — | — | 48.0 | — | — | — | — | — | — | — | — |",
        "| *published:* gpt-3.5-turbo, DRAGON top-5 turns (LoCoMo paper, Table 3) | — | — | — "
        "| — | — | 38.8 | — | — | — | — | — |",
        "| *published:* gpt-3.5-turbo, DRAGON top-10 turns (LoCoMo paper, Table 3) | — | — | — "
        "| — | — | 39.7 | — | — | — | — | — |",
        "- DRAGON retriever (LoCoMo paper, Table 3): evidence recall over dialog turns "
        "56.7 @5, 66.2 @10, 76.7 @25, 82.7 @50",
        "### `vector`",
        "| single-hop | 2 | 25.0 | 75.0 | 50.0 | 100.0 | — | — | — | 150 | 15.0 | 19.5 |",
        "| overall | 4 | 50.0 | 83.3 | 50.0 | 100.0 | — | — | — | 250 | 25.0 | 38.5 |",
        "### `full`",
        "| multi-hop | 2 | — | — | — | — | 0.0 | 0.0 | 100.0 | 1000 | 0.0 | 0.0 |",
        "![recall@k by category](recall_at_k.png)",
        "## How to read this",
    ):
        assert line in text.splitlines(), line
    assert "not measured here. This run gave the answering model the top 10 turns" in text
    assert text.endswith("was not measured.\n")
    assert "Answers: `vector` 0 of 4 answered, 0 errors; `full` 3 of 4 answered, 1 error." in text
    assert set(PUBLISHED) == {"locomo"}


def test_report_without_answers_or_published_figures() -> None:
    info = msgspec.structs.replace(
        INFO, dataset="longmemeval", answer_model=None, judge_model=None, embedder=""
    )
    text = render_report(summarise(info, {"vector": vector_records()}))
    assert text.startswith("# Memory evaluation: LongMemEval\n")
    assert "- Answer model: retrieval only — no answers asked for" in text
    assert "- Judge: none" in text and "- Embedder: —" in text
    assert "No published figures are bundled for LongMemEval" in text
    assert "*published:*" not in text and "Answers:" not in text
    assert "![recall@k by category]" not in text


def test_write_report_writes_json_plot_and_markdown(tmp_path: Path) -> None:
    summary = make_summary()
    paths = write_report(summary, tmp_path / "out")
    out = tmp_path / "out"
    assert paths == [out / "results.json", out / "recall_at_k.png", out / "report.md"]
    assert (out / "recall_at_k.png").read_bytes().startswith(b"\x89PNG\r\n\x1a\n")
    data = (out / "results.json").read_bytes()
    assert data == encode_summary(summary)
    assert msgspec.json.decode(data, type=Summary) == summary
    assert "![recall@k by category](recall_at_k.png)" in (out / "report.md").read_text()
    assert sorted(p.name for p in out.iterdir()) == ["recall_at_k.png", "report.md", "results.json"]


def test_no_plot_when_nothing_ranks(tmp_path: Path) -> None:
    summary = summarise(INFO, {"full": full_records()})
    assert not write_plot(summary, tmp_path / "plot.png")
    paths = write_report(summary, tmp_path)
    assert [p.name for p in paths] == ["results.json", "report.md"]
    assert "recall_at_k.png" not in (tmp_path / "report.md").read_text()


def test_no_plot_without_matplotlib(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("matplotlib", "matplotlib.figure", "matplotlib.backends.backend_agg"):
        monkeypatch.setitem(sys.modules, name, None)
    paths = write_report(make_summary(), tmp_path)
    assert [p.name for p in paths] == ["results.json", "report.md"]
    assert not (tmp_path / "recall_at_k.png").exists()
    assert "matplotlib is not installed" in (tmp_path / "report.md").read_text()
