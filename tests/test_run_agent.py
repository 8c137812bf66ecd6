"""run_agent: scenarios, RAG on real Chroma with real embeddings, tools, structured output."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import msgspec
import pytest

from tests.session_helpers import last_content
from xai.core import (
    BUILTIN_TOOLS,
    OUTPUT_TYPES,
    KnowledgeBase,
    RunOptions,
    ScenarioError,
    arun_agent,
    chunk_text,
    load_scenario,
)
from xai.memory import OpenAIEmbedder, default_embedder, local_minilm
from xai.messages import ToolCall
from xai.providers import OpenAIProvider
from xai.testing import HttpError, OpenAIWireServer, Reply, ScriptedCall
from xai.tools import ToolSet

pytestmark = pytest.mark.anyio

POLICY = """Customers may return any product within 30 days of delivery.

Refunds reach the original payment method within 5 business days.

All pumps carry a two-year warranty. Valves carry a one-year warranty."""

HANDBOOK = """The night shift starts at 22:00 and ends at 06:00.

Safety goggles are required on line C at all times."""


@pytest.fixture
async def knowledge(tmp_path: Path) -> KnowledgeBase:
    kb = KnowledgeBase(tmp_path / "knowledge", embedder=local_minilm(), max_tokens=40, overlap=10)
    await kb.ingest("support", "policy", POLICY, source_file="policy.md")
    await kb.ingest("support", "handbook", HANDBOOK, source_file="handbook.md")
    await kb.ingest("hr", "handbook", HANDBOOK, source_file="handbook.md")
    return kb


def scenario(**fields: Any) -> dict[str, Any]:
    return {"scenario_id": "support", **fields}


def json_reply(value: Mapping[str, Any]) -> Reply:
    return Reply(text=json.dumps(value))


async def test_retrieval_by_scenario_and_documents(knowledge: KnowledgeBase) -> None:
    refs = await knowledge.retrieve("How long is the pump warranty?", "support", top_k=1)
    assert refs[0].document_id == "policy" and "two-year" in refs[0].content
    assert refs[0].source_file == "policy.md" and 0 < refs[0].score <= 1
    # The handbook says nothing of pumps: its cosine to the question is about 0, on either
    # side of it, and min_score's default drops what is below. The restriction is the point.
    only_handbook = await knowledge.retrieve(
        "pump warranty", "support", document_ids=["handbook"], top_k=5, min_score=-1.0
    )
    assert {r.document_id for r in only_handbook} == {"handbook"}
    hr = await knowledge.retrieve("pump warranty", "hr", top_k=5, min_score=-1.0)
    assert {r.document_id for r in hr} == {"handbook"}  # another scenario's documents stay out
    assert await knowledge.retrieve("anything", "nobody", top_k=3) == []


async def test_reingesting_replaces_chunks(knowledge: KnowledgeBase) -> None:
    before = await knowledge.documents("support")
    await knowledge.ingest(
        "support", "policy", "Returns are no longer accepted.", source_file="policy.md"
    )
    after = await knowledge.documents("support")
    assert after["policy"] == 1 and before["policy"] > 1 and after["handbook"] == before["handbook"]
    (ref,) = await knowledge.retrieve("returns", "support", document_ids=["policy"], top_k=3)
    assert ref.content == "Returns are no longer accepted."


def test_chunks_respect_size_and_overlap() -> None:

    def count(text: str) -> int:
        return len(text.split())

    text = " ".join(f"Sentence number {n} is here." for n in range(40))
    chunks = chunk_text(text, count, max_tokens=30, overlap=10)
    assert len(chunks) > 3 and all(count(c) <= 30 for c in chunks)
    opening = chunks[1].split(". ")[0]
    assert opening in chunks[0]  # the next chunk begins with the end of the previous one
    shared = [s for s in chunks[1].split(". ") if s.rstrip(".") in chunks[0]]
    assert 0 < count(". ".join(shared)) <= 10  # within the overlap budget
    assert chunk_text("", count) == []


async def test_run_with_rag_and_a_structured_answer(
    openai_server: OpenAIWireServer, provider: OpenAIProvider, knowledge: KnowledgeBase
) -> None:
    openai_server.push(
        json_reply(
            {"reply": "Pumps have a two-year warranty [1].", "priority": "low", "next_steps": []}
        )
    )
    config = scenario(rag={"enabled": True, "top_k": 2}, output_type="ticket_response")
    result = await arun_agent(
        config, "How long is the pump warranty?", provider=provider, knowledge=knowledge
    )
    assert result.status == "success" and result.error is None
    assert result.answer == "Pumps have a two-year warranty [1]."
    assert result.structured_output == {
        "reply": "Pumps have a two-year warranty [1].",
        "category": "general",
        "priority": "low",
        "next_steps": [],
    }
    assert next(r.document_id for r in result.references) == "policy"
    assert result.model_name == provider.model and result.latency_ms > 0
    body = openai_server.chat_requests()[0].body
    assert body["response_format"]["json_schema"]["name"] == "TicketResponse"
    system = body["messages"][0]["content"]
    assert "[1] (policy.md)" in system and "two-year warranty" in system


async def test_tool_calls_are_recorded(
    openai_server: OpenAIWireServer, provider: OpenAIProvider
) -> None:
    openai_server.push(
        Reply(
            tool_calls=(
                ScriptedCall(
                    name="calculate_rate",
                    arguments={"numerator": 18, "denominator": 1200, "kind": "defect_rate"},
                ),
            )
        ),
        json_reply(
            {
                "summary": "Defect rate 1.5%.",
                "metrics": [{"name": "defect_rate", "value": 1.5, "unit": "%"}],
            }
        ),
    )
    config = scenario(tools=["calculate_rate"], output_type="quality_report")
    result = await arun_agent(config, "Defect rate of R-001?", provider=provider)
    assert result.status == "success"
    (call,) = result.tool_calls
    assert call.tool_name == "calculate_rate" and call.success and call.result["percent"] == 1.5
    assert call.arguments == {"numerator": 18, "denominator": 1200, "kind": "defect_rate"}
    assert (
        msgspec.json.decode(msgspec.json.encode(result))["tool_calls"][0]["tool_name"]
        == "calculate_rate"
    )


EXAMPLES: dict[str, dict[str, Any]] = {
    "general_answer": {"answer": "Yes.", "key_points": ["a"]},
    "document_review_report": {
        "summary": "Mostly fine.",
        "findings": [{"issue": "No date", "severity": "low", "location": "p1"}],
        "verdict": "revise",
    },
    "ticket_response": {"reply": "We are on it.", "priority": "high"},
    "quality_report": {
        "summary": "Stable.",
        "metrics": [{"name": "yield", "value": 98.5, "unit": "%"}],
    },
    "risk_audit_report": {
        "summary": "Two risks.",
        "risks": [
            {
                "risk": "Supplier",
                "likelihood": "high",
                "impact": "medium",
                "mitigation": "second source",
            }
        ],
        "overall_rating": "high",
    },
}


@pytest.mark.parametrize("output_type", sorted(OUTPUT_TYPES))
async def test_each_output_type_is_parsed(
    openai_server: OpenAIWireServer, provider: OpenAIProvider, output_type: str
) -> None:
    openai_server.push(Reply(text="```json\n" + json.dumps(EXAMPLES[output_type]) + "\n```"))
    result = await arun_agent(scenario(output_type=output_type), "go", provider=provider)
    assert result.status == "success" and result.structured_output is not None
    for key, value in EXAMPLES[output_type].items():
        assert result.structured_output[key] == value
    assert result.answer == next(iter(EXAMPLES[output_type].values()))


async def test_malformed_json_is_kept_raw_with_the_error(
    openai_server: OpenAIWireServer, provider: OpenAIProvider
) -> None:
    openai_server.push(Reply(text='{"answer": "unterminated'), Reply(text="still not json"))
    result = await arun_agent(scenario(), "go", provider=provider)
    assert result.status == "success"  # the run finished; the output just is not structured
    assert result.structured_output is None and result.raw_output == "still not json"
    assert result.error is not None and result.error.startswith("structured output:")
    assert len(openai_server.chat_requests()) == 2  # one repair retry, shown the error
    assert "not valid JSON" in last_content(openai_server.chat_requests()[1].body)


async def test_repair_fixes_the_answer(
    openai_server: OpenAIWireServer, provider: OpenAIProvider
) -> None:
    openai_server.push(Reply(text="Sure! The answer is yes."), json_reply({"answer": "yes"}))
    result = await arun_agent(scenario(), "go", provider=provider)
    assert result.structured_output == {"answer": "yes", "key_points": []} and result.error is None


async def test_provider_failure_gives_failed(openai_server: OpenAIWireServer) -> None:
    openai_server.push(*[Reply(fault=HttpError(status=503, message="overloaded"))] * 3)
    failing = openai_server.provider(max_retries=0)
    try:
        result = await arun_agent(scenario(), "go", provider=failing)
    finally:
        await failing.aclose()
    assert result.status == "failed" and result.error is not None and "overloaded" in result.error


async def test_a_refused_schema_format_falls_back_to_instructions(
    openai_server: OpenAIWireServer, provider: OpenAIProvider
) -> None:
    openai_server.push(
        Reply(fault=HttpError(status=400, message="response_format json_schema is not supported")),
        json_reply({"answer": "ok"}),
    )
    result = await arun_agent(scenario(), "go", provider=provider)
    assert result.status == "success" and result.answer == "ok"
    second = openai_server.chat_requests()[1].body
    assert second["response_format"] == {"type": "json_object"}
    assert "JSON schema" in second["messages"][0]["content"]


async def test_a_500_naming_response_format_falls_back_to_json_object(
    openai_server: OpenAIWireServer, provider: OpenAIProvider
) -> None:
    # llama.cpp's server answers json_schema with a 500 validation error; json_object works.
    refusal = "1 validation error: response_format.type Input should be 'text' or 'json_object'"

    def llama_cpp(body: Mapping[str, Any]) -> Reply:
        if (body.get("response_format") or {}).get("type") == "json_schema":
            return Reply(fault=HttpError(status=500, message=refusal))
        return json_reply({"answer": "ok"})

    openai_server.script.add_responder(llama_cpp)
    result = await arun_agent(scenario(), "go", provider=provider)
    assert result.status == "success" and result.answer == "ok", result.error
    assert openai_server.chat_requests()[-1].body["response_format"] == {"type": "json_object"}


async def test_instructions_alone_when_json_object_is_refused_too(
    openai_server: OpenAIWireServer, provider: OpenAIProvider
) -> None:
    openai_server.push(
        Reply(fault=HttpError(status=400, message="response_format json_schema is not supported")),
        Reply(fault=HttpError(status=400, message="response_format json_object is not supported")),
        json_reply({"answer": "ok"}),
    )
    result = await arun_agent(scenario(), "go", provider=provider)
    assert result.status == "success" and result.answer == "ok"
    third = openai_server.chat_requests()[2].body
    assert "response_format" not in third and "JSON schema" in third["messages"][0]["content"]


async def test_environment_switches_llm_and_embeddings(
    openai_server: OpenAIWireServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LLM_BASE_URL", openai_server.base_url)
    monkeypatch.setenv("LLM_MODEL", "env-chat-model")
    assert default_embedder() is local_minilm()  # no EMBEDDING_MODEL: offline embeddings
    monkeypatch.setenv("EMBEDDING_MODEL", "env-embedder")
    embedder = default_embedder()
    assert isinstance(embedder, OpenAIEmbedder) and embedder.name == "openai:env-embedder"
    try:
        kb = KnowledgeBase(tmp_path / "kb", embedder=embedder)
        await kb.ingest("support", "policy", POLICY)
        openai_server.push(json_reply({"answer": "two years"}))
        config = scenario(rag={"enabled": True, "top_k": 1})
        result = await arun_agent(config, "pump warranty", knowledge=kb)  # provider from LLM_*
    finally:
        await embedder.aclose()
    assert result.status == "success" and result.model_name == "env-chat-model"
    paths = [r.path for r in openai_server.requests]
    assert "/v1/embeddings" in paths and "/v1/chat/completions" in paths
    embedded = [r for r in openai_server.requests if r.path == "/v1/embeddings"]
    assert embedded[0].body["model"] == "env-embedder"


def test_scenarios_load_from_yaml_with_errors_that_name_the_field(tmp_path: Path) -> None:
    good = tmp_path / "s.yaml"
    good.write_text(
        "scenario_id: qa\nrag: {enabled: true, top_k: 3}\ntools: [calculate_rate]\noutput_type: quality_report\n"
    )
    loaded = load_scenario(good)
    assert loaded.rag.top_k == 3 and loaded.output_type == "quality_report"
    cases = {
        "scenario_id: qa\nrag: {top_k: many}\n": "rag.top_k: Expected `int`",
        "scenario_id: qa\noutput_type: poem\n": "output_type: Invalid enum value 'poem'",
        "scenario_id: qa\ntools: [calculate_rate, fly]\n": "tools[1]: unknown tool 'fly'",
        "scenario_id: qa\nmodel: {temperature: 9}\n": "model.temperature: Expected `float` <= 2",
        "name: no id\n": "Object missing required field `scenario_id`",
        "scenario_id: [unclosed\n": "the scenario is not valid YAML",
    }
    for text, message in cases.items():
        bad = tmp_path / "bad.yaml"
        bad.write_text(text)
        with pytest.raises(ScenarioError) as info:
            load_scenario(bad)
        assert f"bad.yaml: {message}" in str(info.value)


async def test_builtin_tools_edge_cases() -> None:
    tools = ToolSet(BUILTIN_TOOLS.values())

    async def call(name: str, **arguments: Any) -> Any:
        return await tools.call(ToolCall("c", name, json.dumps(arguments)))

    ok = await call("calculate_rate", numerator=45, denominator=50, kind="pass_rate")
    assert ok.success and ok.result == {
        "kind": "pass_rate",
        "percent": 90.0,
        "numerator": 45,
        "denominator": 50,
    }
    cases: list[tuple[dict[str, Any], str]] = [
        ({"numerator": 1, "denominator": 0}, "the denominator is zero"),
        ({"numerator": 5, "denominator": 2}, "exceeds the denominator"),
        ({"numerator": -1, "denominator": 2}, "cannot be negative"),
        ({"numerator": "x", "denominator": 2}, "invalid arguments"),
    ]
    for arguments, error in cases:
        bad = await call("calculate_rate", **arguments)
        assert not bad.success and error in (bad.error or "")
    valves = await call("query_demo_records", product="valve", status="open")
    assert (
        valves.success
        and valves.result["count"] == 1
        and valves.result["records"][0]["id"] == "R-002"
    )
    everything = await call("query_demo_records")
    assert everything.result["count"] == 8 and everything.result["totals"]["defects"] == 153
    assert not (await call("query_demo_records", limit=0)).success
    fields = await call(
        "check_required_fields", record={"id": "R-1", "owner": ""}, required=["id", "owner", "due"]
    )
    assert fields.result == {"complete": False, "missing": ["owner", "due"], "checked": 3}
    assert not (await call("check_required_fields", record={}, required=[])).success
    items = await call(
        "generate_action_items",
        issues=["Leak on line B", " ", "Leak on line B", "Late parts"],
        owner="Mei",
    )
    assert items.result["count"] == 2 and items.result["items"][0] == {
        "id": "A-001",
        "action": "Resolve: Leak on line B",
        "owner": "Mei",
        "due_in_days": 7,
    }
    assert not (await call("generate_action_items", issues=[" "])).success


async def test_options_from_a_mapping(
    openai_server: OpenAIWireServer, provider: OpenAIProvider
) -> None:
    openai_server.push(Reply(text="plain words"))
    result = await arun_agent(
        scenario(), "go", {"repair": False, "schema_format": False}, provider=provider
    )
    assert result.raw_output == "plain words" and result.structured_output is None
    assert "response_format" not in openai_server.chat_requests()[0].body
    assert RunOptions().repair
