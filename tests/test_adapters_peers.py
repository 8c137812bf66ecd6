"""The peer orchestrators' own edges: the Dify Service API (its double's documented answers,
tool thoughts, citations, errors, settings and the key's redaction), the choice of
orchestrator, and the extras (nothing of a peer is imported until it runs; without its extra
the result says what to install)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from xai._redact import redact
from xai.core import (
    BUILTIN_TOOLS,
    DifyConfig,
    DifyOrchestrator,
    RunOptions,
    arun_agent,
)
from xai.testing import DifyServer, OpenAIWireServer, Reply, ScriptedCall

pytestmark = pytest.mark.anyio

ANSWER = json.dumps({"answer": "Done.", "key_points": []})


@pytest.fixture
def dify() -> Iterator[DifyServer]:
    with DifyServer(tools=BUILTIN_TOOLS.values()) as server:
        yield server


def config(server: DifyServer, **overrides: Any) -> DifyConfig:
    return DifyConfig(**{"base_url": server.base_url, "api_key": server.api_key, **overrides})


def chat(server: DifyServer, body: Any, *, key: str | None = None) -> httpx.Response:
    headers = {"Authorization": f"Bearer {key or server.api_key}"}
    return httpx.post(f"{server.base_url}/chat-messages", json=body, headers=headers)


@pytest.mark.backend_agnostic
def test_the_double_answers_the_documented_errors(dify: DifyServer) -> None:
    good = {"inputs": {}, "query": "hi", "response_mode": "streaming", "user": "u"}
    cases = [
        (chat(dify, good, key="app-wrong"), 401, "unauthorized"),
        (chat(dify, {**good, "query": ""}), 400, "invalid_param"),
        (chat(dify, {k: v for k, v in good.items() if k != "user"}), 400, "invalid_param"),
        (chat(dify, {**good, "response_mode": "blocking"}), 400, "invalid_param"),
        (chat(dify, {**good, "inputs": []}), 400, "invalid_param"),
        (chat(dify, {**good, "conversation_id": "nope"}), 404, "not_found"),
    ]
    for response, status, code in cases:
        assert response.status_code == status, response.text
        body = response.json()
        assert body["code"] == code and body["status"] == status and body["message"]


async def test_a_wrong_key_is_a_failed_result_without_the_key(
    dify: DifyServer, caplog: pytest.LogCaptureFixture
) -> None:
    wrong = "app-a-secret-that-must-not-show"
    result = await arun_agent(
        {"scenario_id": "s"}, "hi", orchestrator=DifyOrchestrator(config(dify, api_key=wrong))
    )
    assert result.status == "failed" and result.error is not None
    assert result.error.startswith("AuthenticationError: Dify 401 unauthorized")
    assert wrong not in repr(config(dify, api_key=wrong))
    assert wrong not in redact(f"the key was {wrong}")  # registered with the redaction net
    assert wrong not in caplog.text and wrong not in result.error


async def test_tool_thoughts_become_tool_results(dify: DifyServer) -> None:
    rate = {"numerator": 1, "denominator": 4}
    items = {"issues": ["leak on line A"], "owner": "ops"}
    dify.push(
        Reply(
            tool_calls=(
                ScriptedCall(name="calculate_rate", arguments=rate),
                ScriptedCall(name="generate_action_items", arguments=items),
            )
        ),
        Reply(text=ANSWER),
    )
    result = await arun_agent(
        {"scenario_id": "s", "tools": ["calculate_rate", "generate_action_items"]},
        "rates?",
        orchestrator=DifyOrchestrator(config(dify)),
    )
    assert result.status == "success", result.error
    # One thought, two tools: `tool` is "a;b", tool_input and observation are keyed by name.
    rate_call, items_call = result.tool_calls
    assert (rate_call.tool_name, rate_call.arguments) == ("calculate_rate", rate)
    assert rate_call.success and rate_call.result["percent"] == 25.0
    assert (items_call.tool_name, items_call.arguments) == ("generate_action_items", items)
    assert items_call.result["items"][0]["owner"] == "ops"
    assert rate_call.call_id != items_call.call_id


async def test_a_failing_tool_is_recorded_as_failed(dify: DifyServer) -> None:
    dify.push(
        Reply(
            tool_calls=(
                ScriptedCall(name="calculate_rate", arguments={"numerator": 1, "denominator": 0}),
            )
        ),
        Reply(text=ANSWER),
    )
    result = await arun_agent(
        {"scenario_id": "s", "tools": ["calculate_rate"]},
        "rate?",
        orchestrator=DifyOrchestrator(config(dify)),
    )
    (call,) = result.tool_calls
    assert not call.success and call.result is None
    assert call.error is not None and "denominator is zero" in call.error
    assert call.arguments == {"numerator": 1, "denominator": 0}


async def test_the_apps_citations_join_the_references(dify: DifyServer) -> None:
    dify.retriever_resources = [
        {
            "dataset_id": "ds",
            "dataset_name": "Policies",
            "document_id": "doc-1",
            "document_name": "returns.md",
            "segment_id": "seg-9",
            "score": 0.87,
            "content": "Returns within 30 days.",
        }
    ]
    dify.push(Reply(text=ANSWER))
    result = await arun_agent(
        {"scenario_id": "s"}, "returns?", orchestrator=DifyOrchestrator(config(dify))
    )
    (ref,) = result.references
    assert (ref.source_file, ref.document_id, ref.chunk_id) == ("returns.md", "doc-1", "seg-9")
    assert ref.score == pytest.approx(0.87) and ref.content == "Returns within 30 days."


async def test_a_chat_app_streams_message_events(dify: DifyServer) -> None:
    dify.mode = "chat"
    dify.push(Reply(text=ANSWER, chunk_chars=3))
    result = await arun_agent(
        {"scenario_id": "s"}, "hi", orchestrator=DifyOrchestrator(config(dify))
    )
    assert result.answer == "Done." and result.raw_output == ANSWER


async def test_a_tool_the_app_lacks_fails_before_any_message(dify: DifyServer) -> None:
    dify.tools = type(dify.tools)([BUILTIN_TOOLS["calculate_rate"]])
    result = await arun_agent(
        {"scenario_id": "s", "tools": ["calculate_rate", "generate_action_items"]},
        "hi",
        orchestrator=DifyOrchestrator(config(dify)),
    )
    assert result.status == "failed" and result.error is not None
    assert "'generate_action_items'" in result.error and "calculate_rate'" not in result.error
    assert dify.chat_requests() == []


async def test_dify_settings_come_from_the_environment(
    dify: DifyServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("DIFY_BASE_URL", raising=False)
    monkeypatch.delenv("DIFY_API_KEY", raising=False)
    missing = await arun_agent({"scenario_id": "s", "orchestrator": "dify"}, "hi")
    assert missing.status == "failed" and missing.error is not None
    assert "DIFY_BASE_URL" in missing.error and missing.orchestrator == "dify"
    for key, value in dify.env().items():
        monkeypatch.setenv(key, value)
    dify.push(Reply(text=ANSWER))
    found = await arun_agent({"scenario_id": "s", "orchestrator": "dify"}, "hi")
    assert found.status == "success" and found.answer == "Done."
    (request,) = dify.chat_requests()
    assert request.body["response_mode"] == "streaming" and request.body["user"] == "xai"


async def test_options_choose_over_the_scenario(
    openai_server: OpenAIWireServer, dify: DifyServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    for key, value in dify.env().items():
        monkeypatch.setenv(key, value)
    monkeypatch.setenv("LLM_BASE_URL", openai_server.base_url)
    monkeypatch.setenv("LLM_MODEL", openai_server.model)
    openai_server.push(Reply(text=ANSWER))
    result = await arun_agent(
        {"scenario_id": "s", "orchestrator": "dify"}, "hi", RunOptions(orchestrator="lightweight")
    )
    assert result.orchestrator == "lightweight" and result.status == "success"
    assert dify.chat_requests() == [] and len(openai_server.chat_requests()) == 1


@pytest.mark.parametrize(
    ("name", "module", "extra"),
    [
        ("openai-agents", "agents", "openai-agents"),
        ("langgraph", "langgraph", "langgraph"),
        ("dify", "httpx", "dify"),
    ],
)
async def test_without_the_extra_the_result_says_what_to_install(
    name: str, module: str, extra: str, monkeypatch: pytest.MonkeyPatch, dify: DifyServer
) -> None:
    for key, value in dify.env().items():
        monkeypatch.setenv(key, value)
    monkeypatch.setenv("LLM_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("LLM_MODEL", "m")
    monkeypatch.setitem(sys.modules, module, None)  # what an absent package looks like
    result = await arun_agent({"scenario_id": "s", "orchestrator": name}, "hi")
    assert result.status == "failed" and result.error is not None
    assert f"pip install 'xai-actors[{extra}]'" in result.error


@pytest.mark.backend_agnostic
def test_no_peer_library_loads_until_a_peer_runs() -> None:
    probe = (
        "import sys, xai.core, xai.testing\n"
        "print([m for m in ('agents', 'langgraph', 'langchain_core', 'langchain_openai') "
        "if m in sys.modules])"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=50, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "[]"


async def test_a_module_named_agents_that_is_not_the_sdk_is_named(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import types

    monkeypatch.setenv("LLM_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("LLM_MODEL", "m")
    monkeypatch.setitem(sys.modules, "agents", types.ModuleType("agents"))
    result = await arun_agent({"scenario_id": "s", "orchestrator": "openai-agents"}, "hi")
    assert result.status == "failed" and result.error is not None
    assert "shadows the OpenAI Agents SDK" in result.error


@pytest.mark.timeout(120)
@pytest.mark.backend_agnostic
def test_the_bench_ends_with_its_ratios() -> None:
    # It runs every orchestrator and ends with the JSON docs/adapters.md quotes (not timed here).
    bench = Path(__file__).parent.parent / "bench" / "adapters.py"
    done = subprocess.run(
        [sys.executable, str(bench), "--runs", "1", "--repeats", "1", "--warmup", "1"],
        capture_output=True,
        text=True,
        timeout=110,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    figures = json.loads(done.stdout.splitlines()[-1])
    assert {"openai_agents_ratio", "langgraph_ratio", "dify_ratio"} <= set(figures)
    assert all(value > 0 for key, value in figures.items() if key.endswith("_ratio"))


async def test_an_orchestrator_object_is_named_in_the_result() -> None:
    class Echo:
        async def run(self, scenario: Any, user_input: str, options: RunOptions) -> Any:
            from xai.core import AgentResult

            return AgentResult(answer=user_input)

    result = await arun_agent({"scenario_id": "s"}, "hello", orchestrator=Echo())
    assert (result.answer, result.orchestrator) == ("hello", "Echo")


@pytest.mark.backend_agnostic
def test_reset_puts_the_doubles_settings_back(dify: DifyServer) -> None:
    dify.mode = "chat"
    dify.api_key = "app-other"
    dify.retriever_resources = [{"content": "x"}]
    dify.push(Reply(text="left over"))
    dify.reset()
    assert (dify.mode, dify.api_key, dify.retriever_resources) == (
        "agent-chat",
        "app-xai-test-key",
        [],
    )
    assert dify.script.remaining == 0 and dify.chat_requests() == []
