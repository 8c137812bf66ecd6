"""``ask_sync`` / ``ask``: one call from a plain ``def`` or from async code, over the real
``openai`` client and the wire server; a clear ``UsageError`` inside a running loop."""

from __future__ import annotations

from pathlib import Path

import pytest

from xai import ask, ask_sync
from xai.exceptions import UsageError
from xai.messages import TurnStatus
from xai.testing import OpenAIWireServer, Reply, ScriptedCall, demo_model


def test_one_call_from_a_plain_def_and_an_agent_that_remembers(
    openai_server: OpenAIWireServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LLM_BASE_URL", openai_server.base_url)
    monkeypatch.setenv("LLM_MODEL", "xai-scripted")
    openai_server.script.add_responder(demo_model)
    first = ask_sync("I'm Ada. I grow tomatoes on my balcony in Porto.", agent=tmp_path / "fern")
    assert (first.status, first.text) == (TurnStatus.COMPLETED, "Nice to meet you, Ada!")
    second = ask_sync("What do you remember about me?", agent=tmp_path / "fern")
    assert second.text.startswith("You told me:") and "Porto" in second.text
    alone = ask_sync("What do you remember about me?")  # no Agent: nothing is kept
    assert alone.text == "Nothing yet: tell me about you."


def test_a_plain_name_is_an_agent_under_the_home(
    openai_server: OpenAIWireServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XAI_HOME", str(tmp_path / "home"))
    openai_server.script.add_responder(demo_model)
    monkeypatch.setenv("LLM_BASE_URL", openai_server.base_url)
    outcome = ask_sync("I'm Bo.", agent="fern", model="xai-scripted")
    assert outcome.text == "Nice to meet you, Bo!"
    assert (tmp_path / "home" / "agents" / "fern").is_dir()  # where `xai chat --agent fern` looks


@pytest.mark.anyio
async def test_ask_sync_inside_a_running_loop_says_to_await_ask() -> None:
    with pytest.raises(UsageError, match=r"running event loop.*await xai\.ask"):
        ask_sync("hi", model="xai-scripted")


@pytest.mark.anyio
async def test_ask_runs_plain_function_tools(openai_server: OpenAIWireServer) -> None:
    calls: list[str] = []

    def get_weather(city: str) -> str:
        """The weather in a city."""
        calls.append(city)
        return f"sunny in {city}"

    openai_server.push(
        Reply(tool_calls=(ScriptedCall(name="get_weather", arguments={"city": "Porto"}),)),
        Reply(text="It is sunny in Porto."),
    )
    async with openai_server.provider() as provider:
        outcome = await ask(
            "Weather in Porto?", provider=provider, tools=[get_weather], instructions="Be brief."
        )
    assert (outcome.status, outcome.text, calls) == (
        TurnStatus.COMPLETED,
        "It is sunny in Porto.",
        ["Porto"],
    )
    # Two rounds of one Query, and nothing else: no Agent, so no memory extraction either.
    assert len(openai_server.chat_requests()) == 2
    sent = openai_server.chat_requests()[0].body
    assert sent["messages"][0] == {"role": "system", "content": "Be brief."}
    assert [t["function"]["name"] for t in sent["tools"]] == ["get_weather"]


def test_each_sync_call_builds_its_own_provider_from_a_config(
    openai_server: OpenAIWireServer,
) -> None:
    # A provider's connections belong to the event loop that opened them, and each
    # ask_sync runs a loop of its own: a shared provider failed the second call with
    # "Event loop is closed". A config (or a model string) is what ask_sync takes.
    openai_server.script.default = Reply(text="ok")
    config = openai_server.llm_config()
    assert [ask_sync("hi", model=config).text for _ in range(3)] == ["ok", "ok", "ok"]
