from __future__ import annotations

import threading
from typing import Any, Literal

import anyio
import msgspec
import pytest

from xai.exceptions import ToolDefinitionError, ToolError
from xai.messages import ToolCall
from xai.tools import Tool, ToolContext, ToolSet, clamp, tool

pytestmark = pytest.mark.anyio


class Point(msgspec.Struct):
    x: float
    y: float


@tool
async def move(point: Point, mode: Literal["fast", "slow"] = "slow", steps: int = 1) -> Point:
    """Move a point.

    Args:
        point: Where to start.
        mode: How to move;
            fast doubles the distance.
        steps: How many steps.

    Returns:
        The new point.
    """
    factor = 2 if mode == "fast" else 1
    return Point(point.x + steps * factor, point.y)


def call(name: str, arguments: str, call_id: str = "c1") -> ToolCall:
    return ToolCall(call_id, name, arguments)


def test_schema_comes_from_annotations_and_docstring() -> None:
    assert move.name == "move"
    assert move.description == "Move a point."
    params = move.parameters
    assert params["type"] == "object"
    assert params["required"] == ["point"]
    assert params["additionalProperties"] is False
    props = params["properties"]
    assert props["mode"]["enum"] == ["fast", "slow"]
    assert props["mode"]["description"] == "How to move; fast doubles the distance."
    assert props["steps"] == {"type": "integer", "default": 1, "description": "How many steps."}
    assert props["point"]["$ref"] == "#/$defs/Point"
    assert params["$defs"]["Point"]["required"] == ["x", "y"]


async def test_valid_call_returns_uniform_record() -> None:
    result = await ToolSet([move]).call(call("move", '{"point": {"x": 1, "y": 2}, "mode": "fast"}'))
    assert result.success and result.error is None
    assert result.tool_name == "move"
    assert result.arguments == {"point": {"x": 1, "y": 2}, "mode": "fast"}
    assert result.result == {"x": 3.0, "y": 2.0}
    assert msgspec.json.decode(result.content) == {"x": 3.0, "y": 2.0}


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        ('{"point": {"x": "a", "y": 2}}', "Expected `float`, got `str` - at `$.point.x`"),
        ("{}", "missing required field `point`"),
        ('{"point": {"x": 1, "y": 2}, "speed": 3}', "unknown field `speed`"),
        ('{"point": {"x": 1, "y": 2}, "mode": "warp"}', "Invalid enum value 'warp'"),
    ],
)
async def test_bad_arguments_become_error_results(arguments: str, expected: str) -> None:
    result = await ToolSet([move]).call(call("move", arguments))
    assert not result.success
    assert result.error is not None and expected in result.error
    assert result.content.startswith("Error: invalid arguments")


async def test_arguments_that_are_not_json() -> None:
    result = await ToolSet([move]).call(call("move", '{"point": {"x": 1,'))
    assert not result.success
    assert result.arguments == '{"point": {"x": 1,'
    assert result.error is not None and "not valid JSON" in result.error


async def test_arguments_that_are_not_an_object() -> None:
    result = await ToolSet([move]).call(call("move", "[1, 2]"))
    assert not result.success
    assert result.error == "arguments must be a JSON object"


async def test_unknown_tool_lists_the_known_ones() -> None:
    result = await ToolSet([move]).call(call("teleport", "{}"))
    assert not result.success
    assert result.error == "unknown tool 'teleport' (available: move)"


async def test_exceptions_become_error_results() -> None:
    @tool
    def explode() -> str:
        """Always fails."""
        raise RuntimeError("kaboom")

    @tool
    async def refuse() -> str:
        """Refuses politely."""
        raise ToolError("not allowed today")

    tools = ToolSet([explode, refuse])
    boom = await tools.call(call("explode", ""))
    assert not boom.success and boom.error == "RuntimeError: kaboom"
    polite = await tools.call(call("refuse", "{}"))
    assert not polite.success and polite.error == "not allowed today"


async def test_timeouts_for_async_and_sync_tools() -> None:
    release = threading.Event()

    @tool
    async def slow_async() -> str:
        """Sleeps."""
        await anyio.sleep(10)
        return "late"

    @tool(timeout=0.05)
    def slow_sync() -> str:
        """Blocks a thread."""
        release.wait(10)
        return "late"

    tools = ToolSet([slow_async, slow_sync])
    try:
        result = await tools.call(call("slow_async", "{}"), default_timeout=0.05)
        assert not result.success and result.error == "timed out after 0.05s"
        result = await tools.call(call("slow_sync", "{}"), default_timeout=30)
        assert not result.success and result.error == "timed out after 0.05s"
    finally:
        release.set()


async def test_a_tool_raising_timeout_error_is_not_reported_as_our_timeout() -> None:
    @tool
    async def flaky() -> str:
        """Its own timeout."""
        raise TimeoutError("upstream took too long")

    result = await ToolSet([flaky]).call(call("flaky", "{}"), default_timeout=5)
    assert result.error == "TimeoutError: upstream took too long"


async def test_sync_tools_run_in_a_worker_thread() -> None:
    loop_thread = threading.get_ident()

    @tool
    def where() -> int:
        """Thread id."""
        return threading.get_ident()

    result = await ToolSet([where]).call(call("where", "{}"))
    assert result.success and result.result != loop_thread


async def test_context_is_injected_and_hidden_from_the_model() -> None:
    seen: list[ToolContext[dict[str, str]]] = []

    @tool
    async def whoami(ctx: ToolContext[dict[str, str]], greeting: str = "hi") -> str:
        """Says who is asking."""
        seen.append(ctx)
        return f"{greeting} {ctx.deps['user']}"

    assert "ctx" not in whoami.parameters["properties"]
    tools = ToolSet([whoami]).with_context({"user": "ada"})
    result = await tools.call(call("whoami", '{"greeting": "hello"}', "call-7"))
    assert result.result == "hello ada"
    assert seen[0].call_id == "call-7" and seen[0].tool_name == "whoami"


async def test_oversized_results_are_clamped() -> None:
    @tool
    def big() -> dict[str, Any]:
        """Large."""
        return {"data": "x" * 500}

    result = await ToolSet([big], max_result_chars=100).call(call("big", "{}"))
    assert result.success and result.truncated
    assert result.content.startswith('{"data":"xxx')
    assert result.content.endswith("[truncated 411 characters]")
    assert result.result == result.content


def test_clamp() -> None:
    assert clamp("abc", 3) == ("abc", False)
    assert clamp("abcd", 3) == ("abc\n…[truncated 1 characters]", True)


def test_definition_errors() -> None:
    def unannotated(x):  # type: ignore[no-untyped-def]
        return x

    def star(*args: int) -> int:
        return 0

    with pytest.raises(ToolDefinitionError, match="needs a type annotation"):
        Tool(unannotated)
    with pytest.raises(ToolDefinitionError, match=r"\*args"):
        Tool(star)
    with pytest.raises(ToolDefinitionError, match="tool name"):
        Tool(star, name="has space")
    with pytest.raises(ToolDefinitionError, match="two tools are named"):
        ToolSet([move, move])


def test_tools_stay_callable() -> None:
    @tool
    def double(n: int) -> int:
        """Doubles."""
        return n * 2

    assert double(4) == 8
    assert [t.name for t in ToolSet([double, move])] == ["double", "move"]
    assert "double" in ToolSet([double])


def test_docstring_sections_in_any_order() -> None:
    @tool
    def lookup(a: int, b: str = "x", c: float = 1.0) -> str:
        """Look something up.

        More detail on a second paragraph.

        Raises:
            KeyError: when missing.

        Args:
            a:
            b: The b value,
                continued here.
            c (float): Scale: a ratio.

        Returns:
            A string.
        """
        return ""

    assert lookup.description == "Look something up.\n\nMore detail on a second paragraph."
    props = lookup.parameters["properties"]
    assert "description" not in props["a"]
    assert props["b"]["description"] == "The b value, continued here."
    assert props["c"]["description"] == "Scale: a ratio."


def test_numpy_style_docstring() -> None:
    @tool
    def area(width: float, height: float) -> float:
        """Area of a rectangle.

        Parameters
        ----------
        width : float
            Width in metres.
        height : float
            Height in metres.
        """
        return width * height

    assert area.description == "Area of a rectangle."
    props = area.parameters["properties"]
    assert props["width"]["description"] == "Width in metres."
    assert props["height"]["description"] == "Height in metres."
