"""The extraction prompt small models follow: a worked example, no placeholders to copy.

SmolLM2 (135M) behind llama.cpp copied the old prompt's schema back
(``"evidence": ["<id of a user message>"]``, ``"kind": "preference|fact|…"``),
so nothing was remembered. The prompt now shows one concrete example and
spells out the real USER ids of the turn.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

import pytest

from tests.session_helpers import is_side_request, last_content
from xai.providers import OpenAIProvider
from xai.session import EXTRACTION_MARKER, Session, SessionConfig
from xai.testing import OpenAIWireServer, Reply

pytestmark = pytest.mark.anyio

_EXAMPLE_REPLY = re.compile(r"^the reply is:\n(\{.*\})$", re.MULTILINE)


def extraction_request(server: OpenAIWireServer) -> Mapping[str, Any]:
    (request,) = [
        r for r in server.chat_requests() if last_content(r.body).startswith(EXTRACTION_MARKER)
    ]
    return request.body


async def test_the_prompt_has_a_worked_example_and_the_real_ids(
    openai_server: OpenAIWireServer, provider: OpenAIProvider
) -> None:
    def parrot(body: Mapping[str, Any]) -> Reply | None:
        """A small model that copies the prompt's example answer verbatim."""
        if not last_content(body).startswith(EXTRACTION_MARKER):
            return None if is_side_request(body) else Reply(text="ok")
        example = _EXAMPLE_REPLY.search(body["messages"][0]["content"])
        assert example is not None
        return Reply(text=example.group(1))

    openai_server.script.add_responder(parrot)
    async with Session(provider, config=SessionConfig(extract_memory=True)) as session:
        await session.send("I moved to Lisbon last spring")
    body = extraction_request(openai_server)
    instructions, asked = body["messages"][0]["content"], last_content(body)
    # No template slots to copy back: no <...> placeholders, no "a|b|c" choices, no "...".
    assert not re.search(r"<[^>]*>|\w\|\w|\.\.\.", instructions)
    example = json.loads(_EXAMPLE_REPLY.search(instructions).group(1))  # type: ignore[union-attr]
    (candidate,) = example["candidates"]
    assert candidate["kind"] == "fact" and re.fullmatch(r"[0-9a-f]{16}", candidate["evidence"][0])
    user_id = session.history[0].id
    assert f"[{user_id}] USER: I moved to Lisbon last spring" in asked
    assert f"The USER message ids above: {user_id}." in asked
    # A model that parrots the example remembers nothing false: its ids ground nothing,
    # and the example's sentence is rejected outright.
    assert session.candidates == ()
