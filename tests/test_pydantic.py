"""Pydantic models where users have them: tool parameters and structured output, beside
msgspec. The schema sent is Pydantic's own; a validation error goes back to the model as the
tool's error result; Pydantic is imported only by code that uses it."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Annotated

import msgspec
import pytest
from pydantic import BaseModel, ConfigDict, Field

from xai.messages import ToolCall, UserMessage
from xai.providers import OpenAIProvider
from xai.query import Query
from xai.structured import ask_structured, parse, response_format
from xai.testing import OpenAIWireServer, Reply, ScriptedCall
from xai.tools import Tool, ToolSet

pytestmark = pytest.mark.anyio


class Booking(BaseModel):
    """A table to book."""

    city: str = Field(description="where")
    guests: int = Field(ge=1, le=12)
    vegetarian: bool = False


class City(BaseModel):
    name: str
    population: int


def book(booking: Booking) -> str:
    """Book a table."""
    return f"booked for {booking.guests} in {booking.city}"


def forecast(city: str, days: Annotated[int, Field(ge=1, le=7)] = 3) -> str:
    """The forecast.

    Args:
        city: the city to look up
    """
    return f"{days} days of sun in {city}"


def test_a_model_parameter_sends_the_models_own_schema() -> None:
    assert Tool(book).parameters == Booking.model_json_schema()


# What Pydantic makes of ``forecast``'s signature, written by hand (no docstring: it would
# become the schema's description).
class ForecastArguments(BaseModel):
    model_config = ConfigDict(extra="forbid", title="forecast_arguments")
    city: Annotated[str, Field(description="the city to look up")]
    days: Annotated[int, Field(ge=1, le=7)] = 3


def test_pydantic_annotations_send_the_schema_pydantic_builds_for_the_signature() -> None:
    expected = ForecastArguments.model_json_schema()
    assert Tool(forecast).parameters == expected
    assert expected["properties"]["days"]["maximum"] == 7  # the constraint reaches the model


def test_plain_tools_stay_on_msgspec() -> None:
    def add(a: int, b: int) -> int:
        return a + b

    assert "title" not in Tool(add).parameters  # msgspec's schema, as before


async def test_valid_arguments_reach_the_function_and_invalid_ones_go_back_as_errors() -> None:
    tools = ToolSet([book, forecast])
    ok = await tools.call(
        ToolCall(id="c1", name="book", arguments='{"city": "Porto", "guests": 2}')
    )
    assert ok.success and ok.result == "booked for 2 in Porto"
    bad = await tools.call(
        ToolCall(id="c2", name="book", arguments='{"city": "Porto", "guests": 40}')
    )
    assert not bad.success
    assert bad.error == "invalid arguments: guests: Input should be less than or equal to 12"
    unknown = await tools.call(
        ToolCall(id="c3", name="forecast", arguments='{"city": "Porto", "weeks": 2}')
    )
    assert not unknown.success and "weeks: Extra inputs are not permitted" in (unknown.error or "")
    days = await tools.call(ToolCall(id="c4", name="forecast", arguments='{"city": "Porto"}'))
    assert days.result == "3 days of sun in Porto"


async def test_a_returned_model_is_sent_as_json() -> None:
    def lookup(name: str) -> City:
        return City(name=name, population=231_000)

    result = await ToolSet([lookup]).call(
        ToolCall(id="c1", name="lookup", arguments='{"name": "Porto"}')
    )
    assert result.success and json.loads(result.content) == {"name": "Porto", "population": 231000}


async def test_over_the_wire_the_model_sees_the_schema_and_its_error(
    openai_server: OpenAIWireServer, provider: OpenAIProvider
) -> None:
    openai_server.push(
        Reply(tool_calls=(ScriptedCall(name="book", arguments={"city": "Porto", "guests": 0}),)),
        Reply(tool_calls=(ScriptedCall(name="book", arguments={"city": "Porto", "guests": 2}),)),
        Reply(text="Booked."),
    )
    result = await Query(provider, tools=[book]).run([], "Book for two in Porto")
    assert result.text == "Booked."
    first, second, _ = openai_server.chat_requests()
    assert first.body["tools"][0]["function"]["parameters"] == Booking.model_json_schema()
    told = second.body["messages"][-1]
    assert told["role"] == "tool"
    assert told["content"] == (
        "Error: invalid arguments: guests: Input should be greater than or equal to 1"
    )


def test_structured_output_to_a_pydantic_model() -> None:
    fmt = response_format(City)
    assert fmt["json_schema"]["schema"] == City.model_json_schema()
    assert fmt["json_schema"]["name"] == "City" and fmt["json_schema"]["strict"] is False
    good = parse('```json\n{"name": "Porto", "population": 231000}\n```', City)
    assert good.ok and good.value == City(name="Porto", population=231000)
    bad = parse('{"name": "Porto", "population": "many"}', City)
    assert not bad.ok and bad.value is None and bad.raw.startswith('{"name"')
    assert bad.error is not None and bad.error.startswith("population: Input should be")


async def test_ask_structured_with_a_pydantic_model_repairs_once(
    openai_server: OpenAIWireServer, provider: OpenAIProvider
) -> None:
    openai_server.push(
        Reply(text='{"name": "Porto", "population": "many"}'),
        Reply(text='{"name": "Porto", "population": 231000}'),
    )
    parsed, result = await ask_structured(
        provider, [UserMessage(content="Biggest city in the north of Portugal?")], City
    )
    assert parsed.value == City(name="Porto", population=231000) and result.rounds == 2
    first, second = openai_server.chat_requests()
    schema = first.body["response_format"]["json_schema"]["schema"]
    assert schema == City.model_json_schema()
    told = first.body["messages"][-1]["content"].split("\n", 1)[1]
    assert json.loads(told) == City.model_json_schema()  # the prompt shows the same schema
    assert "population: Input should be" in second.body["messages"][-1]["content"]


def test_pydantic_is_not_imported_by_xai_until_used() -> None:
    probe = (
        "import sys, xai\n"
        "from xai.tools import ToolSet, tool\n"
        "from xai.structured import parse, response_format\n"
        "import msgspec\n"
        "class A(msgspec.Struct):\n    x: int\n"
        "def f(a: int) -> int:\n    return a\n"
        "ToolSet([f]); response_format(A); parse('{\"x\": 1}', A)\n"
        "print('pydantic' in sys.modules)"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=50, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "False"


def test_msgspec_types_are_unchanged() -> None:
    class Answer(msgspec.Struct):
        city: str

    assert response_format(Answer)["json_schema"]["strict"] is True
