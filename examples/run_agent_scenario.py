"""run_agent with a scenario: knowledge (RAG), built-in tools and a structured ticket_response.

Ingests examples/knowledge/*.md into a temporary knowledge base, then runs
examples/scenarios/support.yaml on one customer question and prints the
answer, the references, the tool calls and the structured output.

Offline by default: xai's OpenAI-wire test server plays the model with a small
responder that reads the knowledge in the system prompt, calls the scenario's
tools, and answers with the JSON a ticket_response wants. Set LLM_* to ask a
real model instead (and EMBEDDING_MODEL for endpoint embeddings).

    python examples/run_agent_scenario.py
"""

from __future__ import annotations

import json
import re
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import anyio
import msgspec

from xai import LLMConfig
from xai.core import AgentResult, KnowledgeBase, arun_agent, load_scenario
from xai.memory import OpenAIEmbedder
from xai.testing import OpenAIWireServer, Reply, ScriptedCall

HERE = Path(__file__).resolve().parent
SCENARIO = HERE / "scenarios" / "support.yaml"
KNOWLEDGE = HERE / "knowledge"
QUESTION = (
    "My valve arrived 20 days ago and it is defective: it leaks at the seals. "
    "Can I return it, and is this a known problem?"
)

# How run_agent lists retrieved knowledge in the system prompt: "[n] (source_file) text".
_REFERENCE = re.compile(r"^\[(\d+)\] \(([^)]*)\) (.*?)(?=\n\[\d+\] \(|\n\n|\Z)", re.M | re.S)
_SENTENCE = re.compile(r"(?<=[.!?])\s+")
_PRODUCTS = ("pump", "valve", "sensor")


def _stems(text: str) -> set[str]:
    """Crude stems (the first five letters of longer words), enough to match "returned" to "return"."""
    return {w[:5] for w in re.findall(r"[a-z]+", text.lower()) if len(w) > 3}


def play_model(body: Mapping[str, Any]) -> Reply:
    """A stand-in for a chat model, answering one /v1/chat/completions request.

    Round 1: look up the open records of the product the customer names.
    Round 2: compute their defect rate. Round 3: answer with a ticket_response,
    quoting from each of the first two references the sentence closest to the
    question, cited as [n].
    """
    messages: list[dict[str, Any]] = list(body["messages"])
    system = str(messages[0]["content"])
    question = next(str(m["content"]) for m in messages if m["role"] == "user")
    names = {
        call["id"]: call["function"]["name"] for m in messages for call in m.get("tool_calls") or []
    }
    results: dict[str, Any] = {}
    for m in messages:
        if m["role"] == "tool":
            try:
                results[names[m["tool_call_id"]]] = json.loads(m["content"])
            except ValueError:  # a failed call: "Error: ..."
                results[names[m["tool_call_id"]]] = None
    product = next((p for p in _PRODUCTS if p in question.lower()), None)
    if product is not None and "query_demo_records" not in results:
        arguments = {"product": product, "status": "open"}
        return Reply(tool_calls=(ScriptedCall(name="query_demo_records", arguments=arguments),))
    records = results.get("query_demo_records")
    if records and records["count"] and "calculate_rate" not in results:
        totals = records["totals"]
        arguments = {
            "numerator": totals["defects"],
            "denominator": totals["inspected"],
            "kind": "defect_rate",
        }
        return Reply(tool_calls=(ScriptedCall(name="calculate_rate", arguments=arguments),))

    asked = _stems(question)
    parts = []
    for number, _, text in _REFERENCE.findall(system)[:2]:
        sentences = _SENTENCE.split(" ".join(text.split()))
        best = max(sentences, key=lambda sentence: len(asked & _stems(sentence)))
        parts.append(f"{best.rstrip('.')} [{number}].")
    if not parts:
        parts.append("I could not find our policy on this, so a colleague will follow up.")
    rate = results.get("calculate_rate")
    if records and rate:
        parts.append(
            f"We know of {records['count']} open inspection record(s) for {product}s "
            f"(defect rate {rate['percent']}%), so this is a known issue we are working on."
        )
    ticket = {
        "reply": " ".join(parts),
        "category": "returns" if "return" in " ".join(parts).lower() else "general",
        "priority": "high" if records and records["count"] else "normal",
        "next_steps": [
            "Send us the order number and a photo of the fault",
            "We email a prepaid return label",
        ],
    }
    return Reply(text=json.dumps(ticket))


def show(result: AgentResult) -> None:
    print(f"status: {result.status} (model {result.model_name}, {result.latency_ms:.0f} ms)")
    if result.error:
        print(f"error: {result.error}")
    print(f"answer: {result.answer or result.raw_output}")
    print("references:")
    for n, ref in enumerate(result.references, start=1):
        print(f"  [{n}] {ref.source_file} ({ref.chunk_id}, score {ref.score:.2f})")
    print("tool calls:")
    for call in result.tool_calls:
        outcome = json.dumps(call.result) if call.success else f"error: {call.error}"
        print(f"  {call.tool_name}({json.dumps(call.arguments)}) -> {outcome}")
    print("structured output:")
    print(msgspec.json.format(msgspec.json.encode(result.structured_output), indent=2).decode())


async def main() -> int:
    scenario = load_scenario(SCENARIO)
    with tempfile.TemporaryDirectory() as tmp:
        # The embedder is the offline MiniLM unless EMBEDDING_MODEL names an endpoint model.
        # Opening the store (and loading the model) blocks, so it runs in a worker thread.
        knowledge = await anyio.to_thread.run_sync(KnowledgeBase, Path(tmp) / "knowledge")
        try:
            for path in sorted(KNOWLEDGE.glob("*.md")):
                chunks = await knowledge.ingest_file(scenario.scenario_id, path)
                print(f"ingested {path.name}: {chunks} chunk(s) into {scenario.scenario_id!r}")
            print(f"question: {QUESTION}")
            if LLMConfig.from_env().is_configured:  # a real model, from LLM_*
                result = await arun_agent(scenario, QUESTION, knowledge=knowledge)
            else:
                async with OpenAIWireServer() as server:
                    server.script.add_responder(play_model)
                    async with server.provider() as provider:
                        result = await arun_agent(
                            scenario, QUESTION, provider=provider, knowledge=knowledge
                        )
        finally:
            if isinstance(knowledge.embedder, OpenAIEmbedder):
                await knowledge.embedder.aclose()
    show(result)
    return 0 if result.status == "success" else 1


if __name__ == "__main__":
    sys.exit(anyio.run(main))
