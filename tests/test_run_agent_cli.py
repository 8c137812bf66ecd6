"""run_agent as a user meets it: the example script (a program), and ``xai ingest`` /
``xai ask`` (run by ``main`` in this process)."""

from __future__ import annotations

import json
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from tests.cli_helpers import offline, run_cli
from tests.example_helpers import run_example
from xai.testing import OpenAIWireServer, Reply

ROOT = Path(__file__).resolve().parent.parent
SCENARIO = ROOT / "examples" / "scenarios" / "support.yaml"
POLICY = ROOT / "examples" / "knowledge" / "returns_policy.md"
WARRANTY = ROOT / "examples" / "knowledge" / "warranty.md"


def cli_env(monkeypatch: pytest.MonkeyPatch, home: Path, **extra: str) -> None:
    """No LLM_* / EMBEDDING_* (offline embeddings), its own XAI_HOME, plus ``extra``."""
    offline(monkeypatch, XAI_HOME=str(home), **extra)


def ticket_responder(body: Mapping[str, Any]) -> Reply:
    """Answers with a ticket_response, citing [1] when the prompt lists knowledge."""
    system = str(body["messages"][0]["content"])
    cited = " [1]" if "\n[1] (" in system else ""
    ticket = {
        "reply": f"You can return it within 30 days of delivery{cited}.",
        "category": "returns",
        "priority": "normal",
        "next_steps": ["Send the order number"],
    }
    return Reply(text=json.dumps(ticket))


@pytest.mark.timeout(150)
def test_the_example_runs_offline(tmp_path: Path) -> None:
    result = run_example("run_agent_scenario.py", tmp=tmp_path, timeout=120)
    out = result.stdout
    for expected in [
        "ingested returns_policy.md: 1 chunk(s) into 'support'",
        "ingested warranty.md: 1 chunk(s) into 'support'",
        "status: success (model xai-scripted",
        "Defective products may be returned within 90 days of delivery [",
        'query_demo_records({"product": "valve", "status": "open"}) -> {"count": 1',
        'calculate_rate({"numerator": 31, "denominator": 950, "kind": "defect_rate"})',
        '"percent": 3.26',
        '"priority": "high"',
    ]:
        assert expected in out, out
    references = out.split("references:\n", 1)[1].split("tool calls:", 1)[0]
    assert "returns_policy.md (support:returns_policy:0" in references
    assert "warranty.md (support:warranty:0" in references


def test_ingest_then_ask_json(
    openai_server: OpenAIWireServer,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    openai_server.script.add_responder(ticket_responder)
    cli_env(
        monkeypatch,
        tmp_path / "home",
        LLM_BASE_URL=openai_server.base_url,
        LLM_MODEL="cli-test-model",
    )
    knowledge = tmp_path / "knowledge"
    ingested = run_cli(
        capsys, "ingest", "--scenario", SCENARIO, "--knowledge-dir", knowledge, POLICY, WARRANTY
    )
    assert ingested.returncode == 0, ingested.stderr
    assert "into scenario 'support' as document 'returns_policy'" in ingested.stdout
    assert "into scenario 'support' as document 'warranty'" in ingested.stdout

    question = "How long do I have to return a valve?"
    asked = run_cli(
        capsys,
        "ask",
        "--scenario",
        SCENARIO,
        "--knowledge-dir",
        knowledge,
        "--documents",
        "returns_policy",
        "--json",
        question,
    )
    assert asked.returncode == 0, asked.stderr
    result = json.loads(asked.stdout)
    assert result["status"] == "success" and result["error"] is None
    assert result["model_name"] == "cli-test-model"
    assert result["answer"] == "You can return it within 30 days of delivery [1]."
    assert result["structured_output"] == {
        "reply": "You can return it within 30 days of delivery [1].",
        "category": "returns",
        "priority": "normal",
        "next_steps": ["Send the order number"],
    }
    assert result["references"], result
    for ref in result["references"]:  # --documents kept the warranty out
        assert ref["source_file"] == "returns_policy.md"
        assert ref["document_id"] == "returns_policy"
        assert ref["chunk_id"].startswith("support:returns_policy:")
        assert "30 days of delivery" in ref["content"] and 0 < ref["score"] <= 1
    assert result["tool_calls"] == [] and result["latency_ms"] > 0

    (request,) = openai_server.chat_requests()
    body = request.body
    assert body["model"] == "cli-test-model"
    assert body["response_format"]["json_schema"]["name"] == "TicketResponse"
    assert {t["function"]["name"] for t in body["tools"]} == {
        "query_demo_records",
        "calculate_rate",
    }
    system = body["messages"][0]["content"]
    assert "[1] (returns_policy.md)" in system and "warranty.md" not in system
    assert body["messages"][-1] == {"role": "user", "content": question}


def test_ask_finds_a_scenario_by_id_under_xai_home(
    openai_server: OpenAIWireServer,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    home = tmp_path / "home"
    (home / "scenarios").mkdir(parents=True)
    shutil.copy(SCENARIO, home / "scenarios" / "support.yaml")
    openai_server.script.add_responder(ticket_responder)
    cli_env(monkeypatch, home, LLM_BASE_URL=openai_server.base_url, LLM_MODEL="cli-test-model")
    asked = run_cli(capsys, "ask", "--scenario", "support", "Can I return a pump?")
    assert asked.returncode == 0, asked.stderr
    # Nothing was ingested under $XAI_HOME/knowledge: the answer comes without references.
    assert asked.stdout.startswith("You can return it within 30 days of delivery.")
    system = openai_server.chat_requests()[0].body["messages"][0]["content"]
    assert "No knowledge was found for this question" in system


def test_ask_with_an_unknown_scenario_id_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    cli_env(monkeypatch, home)
    asked = run_cli(capsys, "ask", "--scenario", "nosuch", "hello?")
    assert asked.returncode == 2 and asked.stdout == ""
    assert asked.stderr.strip() == (
        f"xai: no scenario 'nosuch': give a scenario file, or put nosuch.yaml in "
        f"{home / 'scenarios'}"
    )


def test_ask_with_an_invalid_scenario_names_the_field(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("scenario_id: support\noutput_type: poem\n", encoding="utf-8")
    cli_env(monkeypatch, tmp_path / "home")
    asked = run_cli(capsys, "ask", "--scenario", bad, "hello?")
    assert asked.returncode == 2
    assert f"xai: {bad}: output_type: Invalid enum value 'poem'" in asked.stderr


def test_ingesting_a_non_text_file_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    pdf = tmp_path / "manual.pdf"
    pdf.write_bytes(b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n")
    knowledge = tmp_path / "knowledge"
    cli_env(monkeypatch, tmp_path / "home")
    ingested = run_cli(capsys, "ingest", "--scenario", SCENARIO, "--knowledge-dir", knowledge, pdf)
    assert ingested.returncode == 2 and ingested.stdout == ""
    assert ingested.stderr.strip() == (
        f"xai: {pdf}: only text and markdown files can be ingested "
        "(.markdown, .md, .rst, .text, .txt)"
    )
