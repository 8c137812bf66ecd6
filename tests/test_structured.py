"""Structured output: schema format, parsing that never raises, one repair retry."""

from __future__ import annotations

import msgspec
import pytest

from xai.messages import UserMessage
from xai.providers import OpenAIProvider
from xai.structured import ask_structured, parse, response_format
from xai.testing import OpenAIWireServer, Reply

pytestmark = pytest.mark.anyio


class Answer(msgspec.Struct):
    city: str
    population: int


def test_response_format_carries_the_schema() -> None:
    fmt = response_format(Answer)
    assert fmt["type"] == "json_schema" and fmt["json_schema"]["name"] == "Answer"
    assert fmt["json_schema"]["schema"]["required"] == ["city", "population"]


def test_parse_keeps_raw_text_and_error() -> None:
    good = parse('```json\n{"city": "Porto", "population": 231000}\n```', Answer)
    assert good.ok and good.value == Answer("Porto", 231000)
    bad = parse('{"city": "Porto", "population": "many"}', Answer)
    assert not bad.ok and bad.value is None and "Expected `int`" in (bad.error or "")
    assert bad.raw == '{"city": "Porto", "population": "many"}'
    assert not parse("no json here", Answer).ok


async def test_ask_structured_repairs_once(
    openai_server: OpenAIWireServer, provider: OpenAIProvider
) -> None:
    openai_server.push(
        Reply(text="Porto, about 231k people"),
        Reply(text='{"city": "Porto", "population": 231000}'),
    )
    parsed, result = await ask_structured(
        provider, [UserMessage(content="Biggest city in the north?")], Answer
    )
    assert parsed.ok and parsed.value == Answer("Porto", 231000)
    first, second = openai_server.chat_requests()
    # Both requests are counted, and both answers' tokens (the server reports usage).
    assert result.usage.requests == 2 and result.rounds == 2
    assert result.usage.completion_tokens == sum(
        len(text) // 4 + 1
        for text in ("Porto, about 231k people", '{"city": "Porto", "population": 231000}')
    )
    assert first.body["response_format"]["type"] == "json_schema"
    assert "not valid" in second.body["messages"][-1]["content"]


async def test_a_failed_parse_never_raises(
    openai_server: OpenAIWireServer, provider: OpenAIProvider
) -> None:
    openai_server.push(Reply(text="nope"))
    parsed, _ = await ask_structured(provider, [UserMessage(content="?")], Answer, repair=False)
    assert not parsed.ok and parsed.raw == "nope" and parsed.error
