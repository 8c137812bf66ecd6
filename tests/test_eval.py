"""The evaluation harness's datasets and retrieval, on small synthetic samples in the real formats."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from xai.eval import (
    CONFIGS,
    ConversationIndex,
    load_locomo,
    load_longmemeval,
    normalise_evidence,
    recall_at,
)
from xai.eval._retrieval import session_recall_at, turn_episodes
from xai.memory import local_minilm

pytestmark = [pytest.mark.anyio, pytest.mark.backend_agnostic]

LOCOMO = [
    {
        "sample_id": "conv-1",
        "conversation": {
            "speaker_a": "Ana",
            "speaker_b": "Ben",
            "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_1": [
                {
                    "speaker": "Ana",
                    "dia_id": "D1:1",
                    "text": "I adopted a puppy called Rex last week!",
                },
                {
                    "speaker": "Ben",
                    "dia_id": "D1:2",
                    "text": "Lovely! I started learning the violin.",
                },
            ],
            "session_2_date_time": "9:00 am on 20 May, 2023",
            "session_3_date_time": "a date key without a session",
            "session_2": [
                {
                    "speaker": "Ben",
                    "dia_id": "D2:1",
                    "text": "My violin teacher is strict.",
                    "blip_caption": "a violin case",
                },
                {"speaker": "Ana", "dia_id": "D2:2", "text": "Rex chewed my shoes."},
            ],
        },
        "qa": [
            {
                "question": "What is the name of Ana's puppy?",
                "answer": "Rex",
                "evidence": ["D1:1"],
                "category": 4,
            },
            {
                "question": "What instrument is Ben learning?",
                "answer": "violin",
                "evidence": ["D1:2; D2:1"],
                "category": 1,
            },
            {
                "question": "What did Ben adopt?",
                "evidence": ["D:1:1"],
                "category": 5,
                "adversarial_answer": "a puppy",
            },
            {"question": "No evidence here", "answer": "x", "evidence": [], "category": 2},
        ],
    }
]


def test_evidence_is_normalised() -> None:
    assert normalise_evidence(["D8:6; D9:17"]) == ("D8:6", "D9:17")
    assert normalise_evidence(["D9:1 D4:4 D4:6"]) == ("D9:1", "D4:4", "D4:6")
    assert normalise_evidence(["D:11:26", "D30:05", "D"]) == ("D11:26", "D30:5")
    assert normalise_evidence([]) == ()


def test_locomo_loads_sessions_not_date_keys(tmp_path: Path) -> None:
    path = tmp_path / "locomo.json"
    path.write_text(json.dumps(LOCOMO))
    (sample,) = load_locomo(path)
    assert [s.id for s in sample.sessions] == ["D1", "D2"]
    assert sample.sessions[0].date == "1:56 pm on 8 May, 2023"
    assert "[shares a photo: a violin case]" in sample.sessions[1].messages[0].text
    multi, adversarial = sample.questions[1], sample.questions[2]
    assert (
        multi.category == "multi-hop"
        and multi.evidence == ("D1:2", "D2:1")
        and multi.evidence_sessions == ("D1", "D2")
    )
    assert (
        adversarial.abstention
        and adversarial.answer == "a puppy"
        and adversarial.evidence == ("D1:1",)
    )


def test_longmemeval_format(tmp_path: Path) -> None:
    data = [
        {
            "question_id": "q1_abs",
            "question_type": "single-session-user",
            "question": "Where did I go?",
            "answer": "Porto",
            "question_date": "2023/05/20 (Sat) 02:21",
            "haystack_dates": ["2023/05/01", "2023/05/02"],
            "haystack_session_ids": ["s1", "s2"],
            "haystack_sessions": [
                [{"role": "user", "content": "Hello"}],
                [
                    {"role": "user", "content": "I went to Porto", "has_answer": True},
                    {"role": "assistant", "content": "Nice"},
                ],
            ],
            "answer_session_ids": ["s2"],
        }
    ]
    path = tmp_path / "lme.json"
    path.write_text(json.dumps(data))
    (sample,) = load_longmemeval(path)
    (question,) = sample.questions
    assert (
        question.evidence == ("s2:0",)
        and question.evidence_sessions == ("s2",)
        and question.abstention
    )
    assert sample.sessions[1].date == "2023/05/02"
    assert question.date == "2023/05/20 (Sat) 02:21"  # "how many days ago" counts from it
    # the library's retrieval sees the assistant's turns as the assistant's, not a person's
    assert [(e.speaker, e.origin) for e in turn_episodes(sample)] == [
        ("user", "user"),
        ("user", "user"),
        ("assistant", "assistant"),
    ]


async def test_every_configuration_retrieves_and_recall_is_computed(tmp_path: Path) -> None:
    path = tmp_path / "locomo.json"
    path.write_text(json.dumps(LOCOMO))
    (sample,) = load_locomo(path)
    embedder = local_minilm()
    index = await ConversationIndex.build(sample, embedder)
    question = sample.questions[0]
    (vector,) = await embedder.embed([question.question])
    for config in CONFIGS:
        top = index.top(config, question.question, np.asarray(vector, dtype=np.float32), 2)
        assert len(top) == 2 and recall_at(top, question) == 1.0, config
    assert recall_at(["D2:2"], sample.questions[1]) == 0.0
    assert recall_at(["D1:2"], sample.questions[1]) == 0.5
    assert recall_at(["D1:1"], sample.questions[3]) is None


async def test_the_library_recall_follows_a_date_the_question_names(tmp_path: Path) -> None:
    """Two sessions say nearly the same thing; the date in the question picks the session."""
    conversation: dict[str, object] = {"speaker_a": "Ana", "speaker_b": "Ben"}
    for n, (date, text) in enumerate(
        [
            ("1:00 pm on 2 March, 2023", "I went to a pottery class, so relaxing."),
            ("1:00 pm on 20 June, 2023", "I went to a pottery class again, so relaxing."),
        ],
        start=1,
    ):
        conversation[f"session_{n}_date_time"] = date
        conversation[f"session_{n}"] = [
            {"speaker": "Ana", "dia_id": f"D{n}:1", "text": text},
            {"speaker": "Ben", "dia_id": f"D{n}:2", "text": "Nice, tell me more!"},
        ]
    qa = [
        {
            "question": "What class did Ana go to in June 2023?",
            "answer": "pottery",
            "evidence": ["D2:1"],
            "category": 2,
        }
    ]
    path = tmp_path / "dated.json"
    path.write_text(json.dumps([{"sample_id": "c", "conversation": conversation, "qa": qa}]))
    (sample,) = load_locomo(path)
    embedder = local_minilm()
    index = await ConversationIndex.build(sample, embedder)
    (question,) = sample.questions
    vector = np.asarray((await embedder.embed([question.question]))[0], dtype=np.float32)
    assert index.top("recall", question.question, vector, 1) == ["D2:1"]
    assert session_recall_at(["D2:2"], question) == 1.0
    assert session_recall_at(["D1:1"], question) == 0.0
    without = await ConversationIndex.build(sample, embedder, baselines=False)
    assert without.top("recall", question.question, vector, 1) == ["D2:1"]
    with pytest.raises(ValueError, match="baselines"):
        without.top("bm25", question.question, vector, 1)
