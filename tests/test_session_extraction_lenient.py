"""Memory extraction keeps every valid candidate when a small model gets some wrong.

A real small model (SmolLM2 behind llama.cpp) answered with one good candidate
and one without ``text``, and copied the prompt's placeholders back; the whole
answer used to be rejected. Each candidate is now parsed on its own.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import pytest

from tests.session_helpers import drain, is_side_request, last_content
from xai.events import SessionFailed
from xai.providers import OpenAIProvider
from xai.session import EXTRACTION_MARKER, Session, SessionConfig
from xai.session._extraction import parse_candidates
from xai.testing import OpenAIWireServer, Reply

pytestmark = pytest.mark.anyio


def extractor(*bad: dict[str, Any]) -> Any:
    """Answers extraction with one valid candidate per USER line, then the ``bad`` ones."""

    def respond(body: Mapping[str, Any]) -> Reply | None:
        text = last_content(body)
        if not text.startswith(EXTRACTION_MARKER):
            return None if is_side_request(body) else Reply(text="noted")
        ids = [line[1 : line.index("]")] for line in text.splitlines() if "] USER: " in line]
        good = [
            {
                "text": "The user drinks tea",
                "kind": "preference",
                "confidence": 0.9,
                "evidence": [i],
            }
            for i in ids
        ]
        return Reply(text=json.dumps({"candidates": [*good, *bad]}))

    return respond


async def test_one_invalid_candidate_does_not_lose_the_valid_ones(
    openai_server: OpenAIWireServer, provider: OpenAIProvider
) -> None:
    openai_server.script.add_responder(extractor({"kind": "fact", "evidence": []}))
    async with Session(provider, config=SessionConfig(extract_memory=True)) as session:
        events = session.subscribe()
        await session.send("I drink tea every morning")
    assert [c.text for c in session.candidates] == ["The user drinks tea"]
    (failed,) = [e.event for e in drain(events) if isinstance(e.event, SessionFailed)]
    assert failed.stage == "extraction" and not failed.fatal
    assert "1 invalid candidate(s) (kept 1)" in failed.error.message
    assert "$.candidates[1]" in failed.error.message and "text" in failed.error.message


@pytest.mark.parametrize(
    "copied",
    [
        {
            "text": "The user likes tea",
            "kind": "preference|fact|commitment|event|other",
            "confidence": 0.5,
            "evidence": ["msg"],
        },
        {"text": "The user likes tea", "kind": "fact", "evidence": ["<id of a user message>"]},
        {"text": "...", "kind": "fact", "evidence": ["msg"]},
    ],
)
def test_copies_of_the_prompt_placeholders_are_invalid(copied: dict[str, Any]) -> None:
    answer = json.dumps(
        {"candidates": [copied, {"text": "The user is called Ada", "evidence": ["msg"]}]}
    )
    parsed = parse_candidates(answer, user_ids={"msg"}, session_id="s", turn=1)
    assert [c.text for c in parsed.kept] == ["The user is called Ada"]
    (reason,) = parsed.rejected
    assert reason.startswith("$.candidates[0]:") and "placeholder" in reason


def test_lenient_about_types_a_small_model_gets_loosely_right() -> None:
    answer = '{"candidates": [{"text": "The user runs", "confidence": "0.7", "evidence": ["m"]}]}'
    parsed = parse_candidates(answer, user_ids={"m"}, session_id="s", turn=1)
    assert [c.confidence for c in parsed.kept] == [0.7] and parsed.rejected == ()
