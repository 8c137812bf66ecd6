"""One conformance suite over the four orchestrators behind ``run_agent``.

Every case runs the same scenario with the same scripted replies on ``lightweight`` (xai's
Session/Query), ``openai-agents`` (the real OpenAI Agents SDK), ``langgraph`` (real LangGraph
on langchain-openai) — those three over HTTP against the OpenAI-wire test server — and ``dify``
(httpx against the Dify Service API double), all configured by the environment (``LLM_*``,
``DIFY_*``) and chosen by ``options.orchestrator``. Each must return an ``AgentResult`` with the
same fields filled and the same answer. The peers are asyncio libraries: on trio the adapter
runs them on an asyncio loop of a worker thread, so every case runs on both backends.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from xai.config import LLMConfig
from xai.core import (
    BUILTIN_TOOLS,
    ORCHESTRATORS,
    AgentResult,
    KnowledgeBase,
    arun_agent,
)
from xai.memory import local_minilm
from xai.testing import Delay, DifyServer, HttpError, OpenAIWireServer, Reply, ScriptedCall

pytestmark = pytest.mark.anyio

MODEL = "xai-scripted"
POLICY = """Customers may return any product within 30 days of delivery.

All pumps carry a two-year warranty. Valves carry a one-year warranty."""

ANSWER = {"answer": "Pumps carry a two-year warranty [1].", "key_points": ["two years"]}


@pytest.fixture(params=ORCHESTRATORS)
def orchestrator(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture(scope="module")
def _dify() -> Iterator[DifyServer]:
    with DifyServer(tools=BUILTIN_TOOLS.values()) as server:
        yield server


@pytest.fixture(scope="module")
def knowledge(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KnowledgeBase]:
    directory = tmp_path_factory.mktemp("adapters") / "knowledge"

    async def build() -> KnowledgeBase:
        kb = KnowledgeBase(directory, embedder=local_minilm(), max_tokens=40, overlap=10)
        await kb.ingest("support", "policy", POLICY, source_file="policy.md")
        return kb

    kb = anyio.run(build)
    yield kb
    anyio.run(kb.aclose)


class Peer:
    """One orchestrator, its double, and the environment that points it there."""

    def __init__(self, name: str, wire: OpenAIWireServer, dify: DifyServer) -> None:
        self.name = name
        self.wire = wire
        self.dify = dify

    def push(self, *replies: Reply) -> None:
        (self.dify if self.name == "dify" else self.wire).push(*replies)

    def requests(self) -> list[dict[str, Any]]:
        """The bodies the peer sent to its double, in order."""
        if self.name == "dify":
            return [r.body for r in self.dify.chat_requests()]
        return [r.body for r in self.wire.chat_requests()]

    def headers(self) -> list[dict[str, str]]:
        """The headers of each request the peer sent to its double."""
        double = self.dify if self.name == "dify" else self.wire
        return [r.headers for r in double.chat_requests()]

    def prompt_of(self, body: dict[str, Any]) -> str:
        if self.name == "dify":
            return str(body["inputs"]["instructions"])
        return str(body["messages"][0]["content"])

    def last_input(self, body: dict[str, Any]) -> str:
        if self.name == "dify":
            return str(body["query"])
        return str(body["messages"][-1]["content"])

    async def run(
        self, scenario: dict[str, Any], question: str, llm: LLMConfig | None = None, **options: Any
    ) -> AgentResult:
        spec = {"scenario_id": "support", "model": {"model": MODEL}, **scenario}
        return await arun_agent(
            spec,
            question,
            {"orchestrator": self.name, **options},
            knowledge=self.knowledge,
            llm=llm,
        )

    knowledge: KnowledgeBase | None = None


@pytest.fixture
async def peer(
    orchestrator: str,
    openai_server: OpenAIWireServer,
    _dify: DifyServer,
    knowledge: KnowledgeBase,
    monkeypatch: pytest.MonkeyPatch,
) -> AsyncIterator[Peer]:
    _dify.reset()
    monkeypatch.setenv("LLM_BASE_URL", openai_server.base_url)
    monkeypatch.setenv("LLM_API_KEY", "sk-adapters-test")
    monkeypatch.setenv("LLM_MODEL", "not-this-one")  # the scenario's model wins
    monkeypatch.setenv("LLM_EXTRA_HEADERS", '{"X-Gateway-Route": "adapters"}')
    for key, value in _dify.env().items():
        monkeypatch.setenv(key, value)
    found = Peer(orchestrator, openai_server, _dify)
    found.knowledge = knowledge
    yield found
    _dify.reset()


def assert_filled(result: AgentResult, peer: Peer) -> None:
    """The fields every orchestrator fills on success."""
    assert result.status == "success", result.error
    assert result.error is None
    assert result.orchestrator == peer.name
    assert result.model_name == MODEL
    assert result.latency_ms > 0
    assert result.usage.requests >= 1 and result.usage.prompt_tokens > 0
    assert result.usage.completion_tokens > 0


async def test_plain_answer(peer: Peer) -> None:
    peer.push(Reply(text=json.dumps(ANSWER)))
    result = await peer.run({}, "How long is the pump warranty?")
    assert_filled(result, peer)
    assert result.answer == ANSWER["answer"]
    assert result.structured_output == ANSWER
    assert result.raw_output == json.dumps(ANSWER)
    assert result.tool_calls == [] and result.references == []
    (request,) = peer.requests()
    assert peer.last_input(request) == "How long is the pump warranty?"
    assert "Answer with one JSON object matching this JSON schema" in peer.prompt_of(request)
    (headers,) = peer.headers()
    if peer.name == "dify":  # the app's key; the app holds the model's settings
        assert headers["authorization"] == f"Bearer {peer.dify.api_key}"
    else:  # the LLM_* key, model and extra headers reach the endpoint
        assert headers["authorization"] == "Bearer sk-adapters-test"
        assert headers["x-gateway-route"] == "adapters"
        assert request["model"] == MODEL


async def test_tool_call_round_trip(peer: Peer) -> None:
    arguments = {"numerator": 45, "denominator": 50, "kind": "pass_rate"}
    final = {"answer": "The pass rate is 90%.", "key_points": []}
    peer.push(
        Reply(tool_calls=(ScriptedCall(name="calculate_rate", arguments=arguments),)),
        Reply(text=json.dumps(final)),
    )
    result = await peer.run({"tools": ["calculate_rate"]}, "45 of 50 passed: pass rate?")
    assert_filled(result, peer)
    assert result.answer == "The pass rate is 90%."
    (call,) = result.tool_calls
    assert call.tool_name == "calculate_rate" and call.success
    assert call.arguments == arguments
    assert call.result == {
        "kind": "pass_rate",
        "percent": 90.0,
        "numerator": 45.0,
        "denominator": 50.0,
    }
    assert call.content and call.call_id
    if peer.name != "dify":  # the model saw the tool's result, under the call's id
        first, second = peer.requests()
        tool = next(t for t in first["tools"] if t["function"]["name"] == "calculate_rate")
        assert tool["function"]["parameters"] == BUILTIN_TOOLS["calculate_rate"].parameters
        (answered,) = [m for m in second["messages"] if m["role"] == "tool"]
        assert answered["tool_call_id"] == call.call_id
        assert json.loads(answered["content"])["percent"] == 90.0


async def test_rag_with_references(peer: Peer, knowledge: KnowledgeBase) -> None:
    peer.push(Reply(text=json.dumps(ANSWER)))
    question = "How long is the pump warranty?"
    result = await peer.run({"rag": {"enabled": True, "top_k": 2}}, question)
    assert_filled(result, peer)
    assert result.answer == ANSWER["answer"]
    expected = await knowledge.retrieve(question, "support", top_k=2)
    assert result.references == expected and expected
    assert result.references[0].source_file == "policy.md"
    (request,) = peer.requests()
    assert "[1] (policy.md)" in peer.prompt_of(request)


async def test_structured_output_needs_one_repair(peer: Peer) -> None:
    peer.push(Reply(text="Sure: two years."), Reply(text=json.dumps(ANSWER)))
    result = await peer.run({}, "How long is the pump warranty?")
    assert_filled(result, peer)
    assert result.structured_output == ANSWER
    assert result.answer == ANSWER["answer"]
    assert result.raw_output == json.dumps(ANSWER)
    first, second = peer.requests()
    assert "not valid JSON for the schema" in peer.last_input(second)
    if peer.name == "dify":  # the repair continues the same conversation
        assert second["conversation_id"] and not first["conversation_id"]


async def test_provider_error_is_a_failed_result(peer: Peer) -> None:
    # 401: not retried by any client, and not a 400 (which the lightweight orchestrator takes
    # for a refused response_format and answers with the next format).
    peer.push(Reply(fault=HttpError(status=401, message="the model refused this request")))
    result = await peer.run({}, "How long is the pump warranty?")
    assert result.status == "failed"
    assert result.error is not None and "the model refused this request" in result.error
    assert result.orchestrator == peer.name
    assert result.answer == "" and result.structured_output is None


async def test_timeout_is_a_failed_result(peer: Peer) -> None:
    peer.push(Reply(fault=Delay(seconds=30)))
    result = await peer.run({}, "How long is the pump warranty?", timeout=1.0)
    assert result.status == "failed"
    assert result.error is not None and result.error.startswith("TimeoutError")
    assert 900 <= result.latency_ms < 20_000
    assert result.orchestrator == peer.name


async def test_a_refused_response_format_falls_back(peer: Peer) -> None:
    if peer.name == "dify":
        pytest.skip("a Dify app chooses its model's response format itself")
    # llama-cpp-python's server: HTTP 500 naming response_format for json_schema.
    peer.wire.refuse_formats = ("json_schema",)
    peer.push(Reply(text=json.dumps(ANSWER)))
    # No retries of the 500 by the peers' openai client: the fallback is what is tested.
    result = await peer.run({}, "How long is the pump warranty?", LLMConfig.from_env(max_retries=0))
    assert_filled(result, peer)
    assert result.structured_output == ANSWER
    kinds = [(body.get("response_format") or {}).get("type") for body in peer.requests()]
    assert kinds[-1] == "json_object" and set(kinds[:-1]) == {"json_schema"}


def test_every_orchestrator_is_covered() -> None:
    assert set(ORCHESTRATORS) == {"lightweight", "openai-agents", "langgraph", "dify"}


def test_scenario_path_is_accepted(tmp_path: Path) -> None:
    from xai.core import load_scenario

    path = tmp_path / "s.yaml"
    path.write_text("scenario_id: s\norchestrator: langgraph\n")
    assert load_scenario(path).orchestrator == "langgraph"
