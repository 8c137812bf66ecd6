"""The synthetic LongMemEval-shaped benchmark (bench/longmem_synth.py): deterministic, in
LongMemEval's format, every question type, evidence where it says, and runnable by the harness."""

from __future__ import annotations

import datetime as dt
import json
import re
import sys
from pathlib import Path
from typing import Any

import pytest

from xai.eval import RunInfo, TurnVectorRAG, load_longmemeval, load_records, run_eval
from xai.memory import local_minilm

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))

from _longmem_frames import UPDATE
from longmem_synth import QUESTION_TYPES, generate, main

_DATE = re.compile(r"^\d{4}/\d\d/\d\d \((Mon|Tue|Wed|Thu|Fri|Sat|Sun)\) \d\d:\d\d$")
_FORMAT = "%Y/%m/%d (%a) %H:%M"


@pytest.fixture(scope="module")
def data() -> list[dict[str, Any]]:
    return generate(seed=7, questions=24)


def _when(text: str) -> dt.datetime:
    return dt.datetime.strptime(text, _FORMAT)


def _evidence(sample: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    return [
        (sid, turn)
        for sid, turns in zip(
            sample["haystack_session_ids"], sample["haystack_sessions"], strict=True
        )
        for turn in turns
        if turn["has_answer"]
    ]


def test_a_seed_gives_the_same_data_and_another_seed_other_data(
    data: list[dict[str, Any]],
) -> None:
    assert generate(seed=7, questions=24) == data
    assert generate(seed=8, questions=24) != data


def test_the_command_writes_a_file_that_loads(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = main(["--seed", "7", "--questions", "24", "--out", str(tmp_path / "d.json")])
    assert capsys.readouterr().out.strip() == str(path)
    assert json.loads(path.read_text()) == generate(seed=7, questions=24)
    samples = load_longmemeval(path)
    assert len(samples) == 24
    for sample in samples:
        (question,) = sample.questions
        assert 40 <= len(sample.sessions) <= 50
        assert question.abstention == question.id.endswith("_abs")
        assert set(question.evidence_sessions) <= {s.id for s in sample.sessions}
        if question.abstention:
            assert question.evidence == () and question.evidence_sessions == ()
        else:
            assert question.evidence, question.id
            assert {e.rsplit(":", 1)[0] for e in question.evidence} == set(
                question.evidence_sessions
            )


def test_long_answers_pad_only_the_assistant_and_keep_the_rest(
    tmp_path: Path, data: list[dict[str, Any]]
) -> None:
    path = main(
        ["--seed", "7", "--questions", "24", "--out", str(tmp_path / "d.json"), "--assistant-words", "120"]
    )  # fmt: skip
    padded = json.loads(path.read_text())
    assert len(padded) == len(data)
    for plain, long in zip(data, padded, strict=True):
        assert {k: v for k, v in plain.items() if k != "haystack_sessions"} == {
            k: v for k, v in long.items() if k != "haystack_sessions"
        }
        for before, after in zip(
            plain["haystack_sessions"], long["haystack_sessions"], strict=True
        ):
            for old, new in zip(before, after, strict=True):
                assert (old["role"], old["has_answer"]) == (new["role"], new["has_answer"])
                if old["role"] == "assistant":
                    assert new["content"].startswith(old["content"])
                    assert len(new["content"].split()) >= 120
                else:
                    assert new == old


def test_every_question_type_and_abstentions_are_present(data: list[dict[str, Any]]) -> None:
    assert {s["question_type"] for s in data} == set(QUESTION_TYPES)
    assert any(s["question_id"].endswith("_abs") for s in data)


def test_dates_are_in_longmemeval_format_and_in_order(data: list[dict[str, Any]]) -> None:
    for sample in data:
        dates = sample["haystack_dates"]
        assert len(dates) == len(sample["haystack_sessions"]) == len(sample["haystack_session_ids"])
        assert all(_DATE.match(d) for d in [*dates, sample["question_date"]])
        moments = [_when(d) for d in dates]
        assert moments == sorted(moments)
        assert _when(sample["question_date"]) >= moments[-1]
        assert (moments[-1] - moments[0]).days >= 60  # spread over months


def test_evidence_is_said_by_the_right_side(data: list[dict[str, Any]]) -> None:
    for sample in data:
        if sample["question_id"].endswith("_abs"):
            assert _evidence(sample) == [] and sample["answer_session_ids"] == []
            continue
        found = _evidence(sample)
        assert found
        assert {sid for sid, _ in found} == set(sample["answer_session_ids"])
        want = "assistant" if sample["question_type"] == "single-session-assistant" else "user"
        assert all(turn["role"] == want for _, turn in found), sample["question_id"]


def test_knowledge_update_evidence_is_the_latest_statement(data: list[dict[str, Any]]) -> None:
    patterns = [
        re.compile(re.escape(t).replace(re.escape("{v}"), "(.+?)"))
        for frame in UPDATE
        for t in (*frame["first"], *frame["later"])
    ]
    checked = 0
    for sample in data:
        if sample["question_type"] != "knowledge-update" or sample["question_id"].endswith("_abs"):
            continue
        statements = [
            (_when(date), turn)
            for date, turns in zip(
                sample["haystack_dates"], sample["haystack_sessions"], strict=True
            )
            for turn in turns
            if turn["role"] == "user" and any(p.search(turn["content"]) for p in patterns)
        ]
        assert len(statements) >= 2  # stated, then changed
        (evidence,) = [turn for _, turn in statements if turn["has_answer"]]
        assert evidence is max(statements, key=lambda s: s[0])[1]
        assert sample["answer"] in evidence["content"]
        checked += 1
    assert checked


def test_days_ago_answers_count_from_the_question_date(data: list[dict[str, Any]]) -> None:
    for sample in generate(seed=11, questions=60):
        if not sample["question"].startswith("How many days ago"):
            continue
        (sid,) = sample["answer_session_ids"]
        held = _when(sample["haystack_dates"][sample["haystack_session_ids"].index(sid)])
        days = (_when(sample["question_date"]).date() - held.date()).days
        assert sample["answer"] == f"{days} days ago"


@pytest.mark.backend_agnostic
@pytest.mark.anyio
async def test_the_harness_runs_rag_on_it(tmp_path: Path) -> None:
    path = tmp_path / "d.json"
    path.write_text(json.dumps(generate(seed=7, questions=6)[:2]))
    samples = load_longmemeval(path)
    backend = TurnVectorRAG(tmp_path / "rag", local_minilm(), depth=50)
    info = RunInfo(
        dataset="longmemeval", data=str(path), backends=("rag",), ks=(10, 50), context_k=10
    )
    try:
        summary = await run_eval(samples, [backend], info=info, out=tmp_path / "out")
    finally:
        await backend.aclose()
    records = load_records(tmp_path / "out", "rag")
    assert [r.sample for r in records] == sorted(s.id for s in samples)
    assert summary.backends[0].questions == 2
    for record in records:
        (question,) = record.questions
        assert question.retrieved and len(question.retrieved) == 50
        if question.evidence:
            assert 50 in question.recall
