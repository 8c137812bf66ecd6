"""A plain function's Tool is derived once (issue 35: a Session per request re-derived
every schema), and a reused Tool behaves as a fresh one."""

from __future__ import annotations

from typing import Any

import pytest

from xai.exceptions import ToolDefinitionError
from xai.messages import ToolCall
from xai.tools import ToolSet

pytestmark = pytest.mark.anyio


async def add(a: int, b: int) -> int:
    """Add two numbers.

    Args:
        a: The first.
        b: The second.
    """
    return a + b


def test_the_same_function_gives_the_same_tool_in_every_set() -> None:
    first, second = ToolSet([add]), ToolSet([add])
    assert first.specs == second.specs
    assert first.specs[0].parameters["properties"]["a"]["description"] == "The first."
    made, reused = first.get("add"), second.get("add")
    assert made is not None and reused is not None
    assert made.function is add and reused.function is add


def test_a_function_is_not_kept_alive_by_what_was_derived_from_it() -> None:
    import gc
    import weakref

    def make() -> Any:
        async def local(n: int) -> int:
            """Double."""
            return 2 * n

        return local

    function = make()
    ToolSet([function])
    ToolSet([function])
    gone = weakref.ref(function)
    del function
    gc.collect()
    assert gone() is None


def test_a_new_function_of_the_same_name_gets_its_own_tool() -> None:
    async def add(x: str) -> str:
        """Echo."""
        return x

    assert ToolSet([add]).specs[0].parameters["required"] == ["x"]


def test_duplicate_names_are_still_refused() -> None:
    with pytest.raises(ToolDefinitionError, match="two tools are named"):
        ToolSet([add, add])


class Greeter:
    def __init__(self, greeting: str) -> None:
        self.greeting = greeting

    def greet(self, name: str) -> str:
        """Greet someone."""
        return f"{self.greeting}, {name}"


async def test_bound_methods_of_different_objects_keep_their_own_object() -> None:
    """A bound method is a new object at every access: each set gets its own object's."""
    hello, hi = ToolSet([Greeter("hello").greet]), ToolSet([Greeter("hi").greet])
    call = ToolCall(id="c1", name="greet", arguments='{"name": "Ann"}')
    assert (await hello.call(call)).content == "hello, Ann"
    assert (await hi.call(call)).content == "hi, Ann"


async def test_a_reused_tool_validates_and_runs_as_a_fresh_one() -> None:
    ToolSet([add])
    tools: Any = ToolSet([add])
    good = await tools.call(ToolCall(id="c1", name="add", arguments='{"a": 1, "b": 2}'))
    bad = await tools.call(ToolCall(id="c2", name="add", arguments='{"a": "x", "b": 2}'))
    assert good.success and good.content == "3"
    assert not bad.success
