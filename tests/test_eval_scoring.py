"""LoCoMo's QA metrics, with expected values worked out by hand, and the LLM judge on the
real OpenAI provider against the local wire server."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import pytest

from tests.session_helpers import last_content
from xai.eval._scoring import (
    JUDGE_MARKER,
    exact_match,
    judge_answer,
    normalise_answer,
    qa_f1,
    says_not_mentioned,
    score_answer,
    token_f1,
)
from xai.providers import OpenAIProvider
from xai.testing import HttpError, OpenAIWireServer, Reply

pytestmark = [pytest.mark.anyio, pytest.mark.backend_agnostic]

Responder = Callable[[Mapping[str, Any]], Reply | None]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("The Cat, and a Dog!", "cat dog"),
        ("  An   apple-pie.\n", "applepie"),  # ASCII punctuation goes, joining the halves
        ("Band of the Andes", "band of andes"),  # whole words only
        ("THE AND A AN", ""),
        ("", ""),
        ("7 May, 2023", "7 may 2023"),
    ],
)
def test_normalise_answer(text: str, expected: str) -> None:
    assert normalise_answer(text) == expected


@pytest.mark.parametrize(
    ("prediction", "answer", "expected"),
    [
        ("running", "runs", 1.0),  # both stem to "run"
        ("The dogs", "a dog", 1.0),
        ("she went to Paris", "Paris", 0.4),  # precision 1/4, recall 1: 2*(1/4)/(5/4)
        ("cat cat", "cat", 2 / 3),  # a repeated token counts once here: precision 1/2
        ("London", "Paris", 0.0),
        ("", "Paris", 0.0),
        ("Paris", "", 0.0),
        ("", "", 0.0),  # no tokens on either side: 0, as in LoCoMo
        ("the", "a", 0.0),
    ],
)
def test_token_f1(prediction: str, answer: str, expected: float) -> None:
    assert token_f1(prediction, answer) == pytest.approx(expected)


@pytest.mark.parametrize(
    ("prediction", "answer", "expected"),
    [
        ("London, Paris", "Paris, London", 1.0),
        ("Paris", "Paris, London", 0.5),  # Paris 1, London 0
        # One prediction part "london paris": each gold part has F1 2*(1/2)*1/(3/2) = 2/3.
        ("London and Paris", "Paris, London", 2 / 3),
        ("Paris, Rome, Berlin", "Paris", 1.0),  # each gold part takes its best match
        ("", "Paris, London", 0.0),
    ],
)
def test_multi_hop_splits_on_commas(prediction: str, answer: str, expected: float) -> None:
    assert qa_f1(prediction, answer, "multi-hop") == pytest.approx(expected)


def test_only_multi_hop_splits_on_commas() -> None:
    # Normalisation drops the commas, so as plain text these are the same two tokens.
    assert qa_f1("London and Paris", "Paris, London", "single-hop") == 1.0


def test_open_domain_keeps_the_gold_text_before_the_first_semicolon() -> None:
    gold = "Yes; because she likes dogs; and cats"
    assert qa_f1("yes", gold, "open-domain") == 1.0
    # Elsewhere the rationale counts: gold tokens yes becaus she like dog cat, recall 1/6.
    assert qa_f1("yes", gold, "temporal") == pytest.approx(2 * (1 / 6) / (7 / 6))
    assert qa_f1("no", "Yes; no doubt", "open-domain") == 0.0


@pytest.mark.parametrize(
    "prediction",
    [
        "This is not mentioned in the conversation.",
        "NOT  MENTIONED",
        "No information available.",
    ],
)
def test_declining_answers(prediction: str) -> None:
    assert says_not_mentioned(prediction)
    assert qa_f1(prediction, "Paris", "adversarial") == 1.0


@pytest.mark.parametrize(
    "prediction",
    # LoCoMo's test knows two phrases only: other ways of declining score 0, as there.
    ["Paris", "She mentioned Paris", "", "She knows", "Unknown", "That is not available"],
)
def test_answers_that_do_not_decline(prediction: str) -> None:
    assert not says_not_mentioned(prediction)
    assert qa_f1(prediction, "Paris", "adversarial") == 0.0


def test_other_categories_are_plain_token_f1() -> None:
    for category in ("temporal", "single-hop", "temporal-reasoning", "knowledge-update", ""):
        assert qa_f1("7 May 2023", "May 7, 2023", category) == 1.0
        assert qa_f1("Paris, France", "Paris", category) == pytest.approx(2 / 3)


def test_score_answer_scores_abstentions_by_declining() -> None:
    assert score_answer("Not mentioned.", "Paris", "single-user", abstention=True) == 1.0
    assert score_answer("Paris", "Paris", "single-user", abstention=True) == 0.0
    assert score_answer("Not mentioned.", "Paris", "adversarial") == 1.0
    assert score_answer("Paris", "Paris", "adversarial") == 0.0
    assert score_answer("Paris", "Paris, London", "multi-hop") == 0.5
    assert score_answer("yes", "Yes; she said so", "open-domain") == 1.0
    assert score_answer("Paris", "Paris", "single-user") == 1.0


def test_exact_match() -> None:
    assert exact_match("The Eiffel Tower.", "eiffel tower") == 1.0
    assert exact_match("Eiffel", "Eiffel Tower") == 0.0
    assert exact_match("running", "runs") == 0.0  # no stemming
    assert exact_match("", "") == 0.0
    assert exact_match("the", "a") == 0.0
    assert exact_match("It is not mentioned.", "Paris", abstention=True) == 1.0
    assert exact_match("Paris", "Paris", abstention=True) == 0.0


# -- the LLM judge -------------------------------------------------------------------------


def judge_replies(reply: Reply) -> Responder:
    def respond(body: Mapping[str, Any]) -> Reply | None:
        return reply if last_content(body).startswith(JUDGE_MARKER) else None

    return respond


async def judge(provider: OpenAIProvider) -> bool | None:
    return await judge_answer(
        provider, "When did Mel paint a sunrise?", "7 May 2023", "May 7th, 2023"
    )


async def test_judge_says_correct(
    openai_server: OpenAIWireServer, provider: OpenAIProvider
) -> None:
    openai_server.script.add_responder(
        judge_replies(Reply(text='{"correct": true, "reason": "same date"}'))
    )
    assert await judge(provider) is True
    (request,) = openai_server.chat_requests()
    asked = last_content(request.body)
    assert "When did Mel paint a sunrise?" in asked
    assert "7 May 2023" in asked and "May 7th, 2023" in asked
    assert request.body["response_format"] == {"type": "json_object"}


async def test_judge_says_incorrect(
    openai_server: OpenAIWireServer, provider: OpenAIProvider
) -> None:
    openai_server.script.add_responder(
        judge_replies(Reply(text='```json\n{"correct": false}\n```'))  # fences tolerated
    )
    assert await judge(provider) is False


@pytest.mark.parametrize(
    "text",
    ["I think it is right.", '{"correct": "yes"}', '{"reason": "no verdict"}', ""],
)
async def test_judge_without_a_usable_verdict_gives_none(
    openai_server: OpenAIWireServer, provider: OpenAIProvider, text: str
) -> None:
    openai_server.script.add_responder(judge_replies(Reply(text=text)))
    assert await judge(provider) is None


# 500 is retried twice; a 400 may be json_object refused, so it is asked once more without it.
@pytest.mark.parametrize(("status", "requests"), [(500, 3), (400, 2)])
async def test_judge_gives_none_when_the_provider_fails(
    openai_server: OpenAIWireServer, provider: OpenAIProvider, status: int, requests: int
) -> None:
    openai_server.script.add_responder(judge_replies(Reply(fault=HttpError(status=status))))
    assert await judge(provider) is None
    assert len(openai_server.chat_requests()) == requests
