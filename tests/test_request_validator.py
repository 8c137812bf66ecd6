"""The Chat Completions rules both test doubles check, and the plugin that fails the test that broke them."""

from __future__ import annotations

import textwrap
from typing import Any

import openai
import pytest

from xai.exceptions import BadRequestError
from xai.messages import AssistantMessage, Message, ToolCall, ToolMessage, UserMessage
from xai.providers import ProviderRequest
from xai.query import Query
from xai.testing import (
    OpenAIWireServer,
    Reply,
    ScriptedProvider,
    ViolationRule,
    check_chat_request,
)

pytestmark = pytest.mark.anyio

USER = {"role": "user", "content": "hi"}
SYSTEM = {"role": "system", "content": "be brief"}


def calls(*ids: str) -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": i, "type": "function", "function": {"name": "f", "arguments": "{}"}} for i in ids
        ],
    }


def result(call_id: str) -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": call_id, "content": "ok"}


def answer(text: str = "done") -> dict[str, Any]:
    return {"role": "assistant", "content": text}


VALID: list[list[dict[str, Any]]] = [
    [USER],
    [SYSTEM, SYSTEM, USER, answer(), USER, USER],  # several system prompts first, users in a row
    [USER, calls("a", "b"), result("b"), result("a"), answer()],  # answers in any order
    [USER, calls("a"), result("a"), calls("a"), result("a")],  # an id reused by a later round
    [USER, {**calls("x"), "content": "text beside a call"}, result("x")],
    [USER, answer(), {"role": "user", "content": ""}],  # an empty user message
    [{"role": "developer", "content": "x"}, USER, {"role": "assistant", "content": [{"type": "text", "text": "hi"}]}],
]  # fmt: skip

INVALID: list[tuple[list[dict[str, Any]], list[ViolationRule]]] = [
    ([], ["request_shape"]),
    ([{"role": "robot", "content": "x"}], ["request_shape"]),
    ([{"role": "user", "content": None}], ["request_shape"]),
    ([USER, answer(), SYSTEM], ["system_after_start"]),
    ([USER, answer("")], ["empty_assistant"]),
    ([USER, answer(" \n"), USER], ["empty_assistant"]),
    ([USER, {"role": "assistant", "content": None}, USER], ["empty_assistant"]),
    ([USER, calls("a")], ["unanswered_tool_call"]),
    ([USER, calls("a", "b"), result("a"), USER], ["unanswered_tool_call"]),
    ([USER, calls("a"), SYSTEM, result("a")], ["unanswered_tool_call", "system_after_start", "orphan_tool_message"]),
    ([USER, result("a")], ["orphan_tool_message"]),
    ([result("a"), USER], ["orphan_tool_message"]),
    ([USER, answer(), result("a")], ["orphan_tool_message"]),
    ([USER, calls("a"), result("b")], ["orphan_tool_message", "unanswered_tool_call"]),
    ([USER, calls("a"), result("a"), result("a")], ["duplicate_tool_answer"]),
    ([USER, calls("a", "a"), result("a")], ["malformed_tool_call"]),
    ([USER, {**calls("a"), "tool_calls": [{"id": "a", "type": "function", "function": {"name": "f"}}]}],
     ["malformed_tool_call"]),
]  # fmt: skip


@pytest.mark.parametrize("messages", VALID)
def test_valid_requests_pass(messages: list[dict[str, Any]]) -> None:
    assert check_chat_request({"model": "m", "messages": messages}) == []


@pytest.mark.parametrize(("messages", "rules"), INVALID)
def test_each_rule_is_caught(messages: list[dict[str, Any]], rules: list[ViolationRule]) -> None:
    found = check_chat_request({"model": "m", "messages": messages})
    assert [v.rule for v in found] == rules, found


def test_request_level_rules() -> None:
    assert [v.rule for v in check_chat_request([USER])] == ["request_shape"]
    assert [v.rule for v in check_chat_request({"messages": [USER]})] == ["request_shape"]
    bad_tools = {"model": "m", "messages": [USER], "tools": [{"type": "function", "function": {"name": "a.b"}}]}  # fmt: skip
    assert [v.rule for v in check_chat_request(bad_tools)] == ["invalid_tool_spec"]
    tools = [{"type": "function", "function": {"name": "lookup"}}]
    named = {"type": "function", "function": {"name": "lookup"}}
    for choice, sent_tools, ok in [
        ("auto", None, True),
        ("required", tools, True),
        (named, tools, True),
        ("required", None, False),
        (named, None, False),
        ({"type": "function", "function": {"name": "other"}}, tools, False),
        ("lookup", tools, False),
    ]:
        body: dict[str, Any] = {"model": "m", "messages": [USER], "tool_choice": choice}
        if sent_tools is not None:
            body["tools"] = sent_tools
        rules = [v.rule for v in check_chat_request(body)]
        assert rules == ([] if ok else ["invalid_tool_choice"]), (choice, rules)


def test_violations_say_where_and_what() -> None:
    [unanswered] = check_chat_request(
        {"model": "m", "messages": [USER, calls("call_1", "call_2"), result("call_2"), USER]}
    )
    assert unanswered.index == 1
    assert str(unanswered) == (
        "unanswered_tool_call: messages[1] (assistant): tool call(s) call_1 (f) "
        "have no tool message before messages[3] (user)"
    )


@pytest.mark.xai_allow_invalid_requests
async def test_the_server_answers_an_invalid_request_with_400(
    openai_server: OpenAIWireServer,
) -> None:
    openai_server.push(Reply(text="never sent"))
    async with openai.AsyncOpenAI(
        base_url=openai_server.base_url, api_key="k", max_retries=0
    ) as client:
        with pytest.raises(openai.BadRequestError, match="orphan_tool_message") as raised:
            await client.chat.completions.create(
                model="m",
                messages=[USER, result("call_x")],  # type: ignore[list-item]
            )
    assert raised.value.body["type"] == "invalid_request_error"  # type: ignore[index]
    assert raised.value.body["param"] == "messages.[1]"  # type: ignore[index]
    [invalid] = openai_server.violations
    assert invalid.outline == "user tool"
    assert [v.rule for v in invalid.violations] == ["orphan_tool_message"]
    assert openai_server.chat_requests()[0].violations == invalid.violations
    assert openai_server.script.remaining == 1  # the script is not consumed by a refused request


async def test_a_server_can_take_anything(openai_server: OpenAIWireServer) -> None:
    openai_server.validate_requests = False
    openai_server.push(Reply(text="taken"))
    async with openai.AsyncOpenAI(base_url=openai_server.base_url, api_key="k") as client:
        done = await client.chat.completions.create(
            model="m",
            messages=[USER, result("call_x")],  # type: ignore[list-item]
        )
    assert done.choices[0].message.content == "taken" and not openai_server.violations


@pytest.mark.xai_allow_invalid_requests
async def test_the_scripted_provider_raises_what_a_real_400_gives() -> None:
    provider = ScriptedProvider([Reply(text="never sent")])
    history: list[Message] = [
        UserMessage(content="hi"),
        AssistantMessage(tool_calls=(ToolCall("call_1", "f"),)),
        UserMessage(content="are you there?"),  # the call was never answered
    ]
    result = await Query(provider).run(history, "hello?")
    assert result.error is not None and result.error.type == "BadRequestError"
    assert "unanswered_tool_call" in result.error.message
    [invalid] = provider.violations
    assert invalid.double == "ScriptedProvider"
    assert invalid.outline == "user assistant[1 call] user user"
    with pytest.raises(BadRequestError, match="unanswered_tool_call"):
        async for _ in provider.stream(ProviderRequest(messages=tuple(history))):
            pass
    assert provider.script.remaining == 1


async def test_a_scripted_provider_can_take_anything() -> None:
    provider = ScriptedProvider([Reply(text="taken")], validate_requests=False)
    history = [ToolMessage(tool_call_id="x", tool_name="f", content="orphan")]
    assert (await Query(provider).run(history, "hi")).text == "taken"
    assert not provider.violations


INNER_CONFTEST = """
pytest_plugins = ["xai.testing.pytest_plugin"]
"""

INNER_TESTS = """
import subprocess
import sys

import anyio
import openai
import pytest

from xai.messages import ToolMessage
from xai.query import Query
from xai.testing import OpenAIWireServer, Reply, ScriptedProvider

ORPHAN = [{"role": "user", "content": "hi"}, {"role": "tool", "tool_call_id": "c9", "content": "?"}]


def send(base_url):
    client = openai.OpenAI(base_url=base_url, api_key="k", max_retries=0)
    with client, pytest.raises(openai.BadRequestError):
        client.chat.completions.create(model="m", messages=ORPHAN)


def test_in_process_server():
    with OpenAIWireServer() as server:
        send(server.base_url)


def test_scripted_provider_deep_inside():
    provider = ScriptedProvider([Reply(text="x")])
    history = [ToolMessage(tool_call_id="c7", tool_name="f", content="orphan")]
    result = anyio.run(Query(provider).run, history, "hi")
    assert result.error is not None  # the code under test copes; the test still fails


def test_server_in_a_child_process():
    child = subprocess.Popen(
        [sys.executable, "-m", "xai.testing", "serve"], stdout=subprocess.PIPE, text=True
    )
    try:
        send(child.stdout.readline().split()[-1])
    finally:
        child.terminate()
        child.wait(timeout=10)
        child.stdout.close()


@pytest.mark.xai_allow_invalid_requests
def test_on_purpose():
    with OpenAIWireServer() as server:
        send(server.base_url)


def test_valid():
    with OpenAIWireServer([Reply(text="fine")]) as server:
        client = openai.OpenAI(base_url=server.base_url, api_key="k")
        with client:
            client.chat.completions.create(model="m", messages=ORPHAN[:1])
"""


def test_the_plugin_fails_the_test_that_sent_an_invalid_request(
    pytester: pytest.Pytester,
) -> None:
    """Wherever the double lives (this process, deep in the code, a child process)."""
    pytester.makeconftest(INNER_CONFTEST)
    pytester.makepyfile(test_inner=textwrap.dedent(INNER_TESTS))
    outcome = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-rE", timeout=50)
    outcome.assert_outcomes(passed=5, errors=3)
    text = outcome.stdout.str()
    for name in ("test_in_process_server", "test_scripted_provider_deep_inside"):
        assert f"ERROR at teardown of {name}" in text
    assert "ERROR at teardown of test_server_in_a_child_process" in text
    assert "1 invalid chat request reached the xai test doubles" in text
    assert (
        "OpenAIWireServer at http://127.0.0.1:" in text
        and "got an invalid request: user tool" in text
    )
    assert "ScriptedProvider (pid" in text and "got an invalid request: tool user" in text
    assert "orphan_tool_message: messages[1] (tool) answers 'c9'" in text
    assert "orphan_tool_message: messages[0] (tool) answers 'c7'" in text
    assert "test_on_purpose" not in text.split("short test summary info")[-1]
