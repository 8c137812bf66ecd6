"""``xai batch`` compares orchestrators on the same cases: each task names its
``orchestrator``, every one answers the same scripted replies (a tool call, then the answer),
and the artifacts record which orchestrator ran."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.cli_helpers import offline, run_cli
from xai.core import BUILTIN_TOOLS, ORCHESTRATORS
from xai.runner import InputError, basic_tools, validate_input
from xai.testing import DifyServer, OpenAIWireServer, Reply, ScriptedCall

ANSWER = {"answer": "The defect rate of line B is 3.26%.", "key_points": []}


def script() -> list[Reply]:
    call = ScriptedCall(
        name="calculate_rate",
        arguments={"numerator": 31, "denominator": 950, "kind": "defect_rate"},
    )
    return [Reply(tool_calls=(call,)), Reply(text=json.dumps(ANSWER))]


def test_one_batch_compares_the_orchestrators(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    tools = [*basic_tools(tmp_path), *BUILTIN_TOOLS.values()]
    # The Dify app has the runner's tools (in Dify they are configured in the app).
    unique = {t.name: t for t in tools}
    with OpenAIWireServer() as wire, DifyServer(tools=unique.values()) as dify:
        for name in ORCHESTRATORS:  # the same replies for every task
            (dify if name == "dify" else wire).push(*script())
        batch = tmp_path / "batch.json"
        batch.write_text(
            json.dumps(
                {
                    "common_config": {"toolset": "basic_tools", "user_input": "Line B: 31 of 950?"},
                    "tasks": [
                        {"conversation_id": f"on-{name}", "orchestrator": name}
                        for name in ORCHESTRATORS
                    ],
                }
            )
        )
        offline(
            monkeypatch,
            XAI_HOME=str(tmp_path / "home"),
            LLM_BASE_URL=wire.base_url,
            LLM_MODEL="scripted",
            **dify.env(),
        )
        done = run_cli(capsys, "batch", batch, "--outdir", tmp_path / "out", "--concurrency", "1")
    assert done.returncode == 0, done.stderr
    summary = json.loads((tmp_path / "out" / "batch_summary.json").read_text())
    assert summary["successes"] == len(ORCHESTRATORS), summary
    for name in ORCHESTRATORS:
        folder = tmp_path / "out" / f"on-{name}"
        trace = json.loads((folder / "trace.json").read_text())
        assert trace["orchestrator"] == name and trace["status"] == "success"
        log = [json.loads(line) for line in (folder / "runtime_log.jsonl").read_text().splitlines()]
        assert log[-1]["orchestrator"] == name
        answer = (folder / "final_answer.md").read_text()
        if name == "lightweight":  # the Session answers in free text: the reply as written
            assert json.loads(answer) == ANSWER
        else:  # a peer's answer is parsed (general_answer) and its text kept
            assert answer.strip() == ANSWER["answer"]
            (turn,) = trace["turns"]
            (call,) = turn["tool_calls"]
            assert call["tool_name"] == "calculate_rate" and call["success"]


def test_a_peer_refuses_the_sessions_features(tmp_path: Path) -> None:
    data: dict[str, Any] = {
        "conversation_id": "c",
        "user_input": "hi",
        "orchestrator": "langgraph",
        "prompt_mode": "compare",
        "save_memory": "global",
    }
    with pytest.raises(InputError) as caught:
        validate_input(data, tmp_path)
    assert any(p.startswith("prompt_mode:") for p in caught.value.problems)
    assert any(p.startswith("save_memory:") for p in caught.value.problems)
    fine = validate_input({**data, "orchestrator": "lightweight"}, tmp_path)
    assert fine.orchestrator == "lightweight"
    with pytest.raises(InputError) as unknown:
        validate_input({**data, "orchestrator": "crewai"}, tmp_path)
    assert any(p.startswith("orchestrator:") for p in unknown.value.problems)


@pytest.mark.timeout(150)
def test_the_orchestrators_example_runs_offline(tmp_path: Path) -> None:
    from tests.example_helpers import run_example

    done = run_example("orchestrators.py", tmp=tmp_path, timeout=120)
    rows = [
        line for line in done.stdout.splitlines() if line.startswith("| ") and "success" in line
    ]
    assert [row.split(" | ")[0].strip("| ") for row in rows] == list(ORCHESTRATORS)
    assert all("Line B's defect rate is 3.26%." in row for row in rows), done.stdout
