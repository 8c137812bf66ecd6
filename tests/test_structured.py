"""Structured output: schema format, parsing that never raises, one repair retry."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import msgspec
import pytest

from xai.messages import ErrorInfo, UserMessage
from xai.providers import OpenAIProvider
from xai.structured import ask_json, ask_structured, format_refused, parse, response_format
from xai.testing import HttpError, OpenAIWireServer, Reply

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


# What llama.cpp's OpenAI server (llama-cpp-python) answers a ``json_schema`` request with.
LLAMA_CPP_REFUSAL = (
    "1 validation error for CreateChatCompletionRequest\nresponse_format.type\n"
    "  Input should be 'text' or 'json_object' [type=literal_error, input_value='json_schema']"
)


def refuses(*kinds: str, answer: str) -> Callable[[Mapping[str, Any]], Reply]:
    """A model behind a server that answers HTTP 500 to the ``response_format`` types named."""

    def respond(body: Mapping[str, Any]) -> Reply:
        fmt = body.get("response_format") or {}
        if fmt.get("type") in kinds:
            return Reply(fault=HttpError(status=500, message=LLAMA_CPP_REFUSAL))
        return Reply(text=answer)

    return respond


def formats(server: OpenAIWireServer) -> list[str]:
    """The formats the requests tried, in order (the provider's own retries of one counted once)."""
    sent = [
        (r.body.get("response_format") or {}).get("type", "none") for r in server.chat_requests()
    ]
    return list(dict.fromkeys(sent))


async def test_a_500_naming_the_format_falls_back_to_json_object(
    openai_server: OpenAIWireServer, provider: OpenAIProvider
) -> None:
    openai_server.refuse_formats = ("json_schema",)  # the server's own quirk option
    openai_server.push(Reply(text='{"city": "Porto", "population": 231000}'))
    parsed, result = await ask_structured(provider, [UserMessage(content="North?")], Answer)
    assert parsed.ok and parsed.value == Answer("Porto", 231000) and result.error is None
    # The refusal is not retried as a server fault: the very next request changes the format.
    assert formats(openai_server) == ["json_schema", "json_object"]
    assert len(openai_server.chat_requests()) == 2
    assert "JSON schema" in openai_server.chat_requests()[-1].body["messages"][-1]["content"]


async def test_no_format_at_all_when_json_object_is_refused_too(
    openai_server: OpenAIWireServer, provider: OpenAIProvider
) -> None:
    openai_server.script.add_responder(
        refuses("json_schema", "json_object", answer='{"city": "Porto", "population": 1}')
    )
    parsed, result = await ask_structured(provider, [UserMessage(content="North?")], Answer)
    assert parsed.ok and formats(openai_server) == ["json_schema", "json_object", "none"]
    # every request sent is counted, the refused ones too
    assert result.usage.requests == len(openai_server.chat_requests()) == 3
    openai_server.reset()
    openai_server.script.add_responder(refuses("json_object", answer='{"kept": []}'))
    result = await ask_json(provider, "Answer in JSON.", "go", max_tokens=50)
    assert result.error is None and result.text == '{"kept": []}'
    assert formats(openai_server) == ["json_object", "none"]
    assert result.usage.requests == len(openai_server.chat_requests()) == 2


def test_a_500_that_names_no_format_is_a_server_fault() -> None:
    assert format_refused(ErrorInfo(type="ServerError", message=LLAMA_CPP_REFUSAL, status_code=500))
    assert format_refused(ErrorInfo(type="BadRequestError", message="nope", status_code=400))
    assert not format_refused(ErrorInfo(type="ServerError", message="overloaded", status_code=503))
    assert not format_refused(ErrorInfo(type="ContextTooLongError", message="too long"))
    assert not format_refused(None)
