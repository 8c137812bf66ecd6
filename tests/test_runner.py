"""The file runner: validation, artifacts, fixture replay, multi-turn, prompt modes, batch, resume.

``xai run`` / ``xai batch`` run by ``main`` in this process (the kill test runs a child).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest

from tests.cli_helpers import Ran, offline, run_cli
from tests.crash_helpers import kill_when
from tests.test_demo import ROOT
from xai.testing import Delay, OpenAIWireServer, Reply, ScriptedCall

EXAMPLES = ROOT / "examples" / "runner"


def write_input(folder: Path, **fields: Any) -> Path:
    path = folder / "input.json"
    path.write_text(json.dumps({"conversation_id": "c1", **fields}))
    return path


@pytest.fixture
def cli(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> Callable[..., Ran]:
    """``cli("run", ...)`` with no model configured and ``XAI_HOME`` in ``tmp_path``;
    ``cli.model(server)`` points the runs at the wire server first."""
    offline(monkeypatch, XAI_HOME=str(tmp_path / "home"))
    return lambda *args: run_cli(capsys, *args)


def use_model(monkeypatch: pytest.MonkeyPatch, server: OpenAIWireServer) -> None:
    monkeypatch.setenv("LLM_BASE_URL", server.base_url)
    monkeypatch.setenv("LLM_MODEL", "scripted")


def test_invalid_input_reports_every_problem_and_writes_nothing(
    tmp_path: Path, cli: Callable[..., Ran]
) -> None:
    path = write_input(
        tmp_path,
        user_input="",
        user_inputs=["x"],
        max_turns="many",
        toolset="all",
        bogus=1,
        system_prompt_path="missing.md",
    )
    out = tmp_path / "out"
    done = cli("run", path, "--outdir", out)
    assert done.returncode == 2
    for problem in [
        "bogus: unknown field",
        "toolset: Invalid enum value 'all'",
        "max_turns: Expected `int`, got `str`",
        "user_input / user_inputs: give exactly one of them",
        "missing.md: cannot read the system prompt",
    ]:
        assert problem in done.stderr
    assert not out.exists()


def test_fixture_mode_replays_without_a_model(tmp_path: Path, cli: Callable[..., Ran]) -> None:
    out = tmp_path / "out"
    done = cli("run", EXAMPLES / "fixture_input.json", "--outdir", out)
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in out.iterdir()) == [
        "final_answer.md",
        "messages.json",
        "runtime_log.jsonl",
        "trace.json",
    ]
    assert "3.26%" in (out / "final_answer.md").read_text()
    messages = json.loads((out / "messages.json").read_text())
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "tool", "assistant"]
    assert "defect rate below 2%" in messages[0]["content"]  # the preset memory
    assert messages[3]["content"].startswith('{"kind":"defect_rate"')
    trace = json.loads((out / "trace.json").read_text())
    assert trace["status"] == "success" and trace["execution_mode"] == "fixture"
    assert trace["prompt_mode"] == "auto" and trace["template_used"] == "calculation_expert"
    assert trace["llm_calls"] == 2 and trace["tool_rounds_used"] == 2
    assert trace["turns"][0]["tool_calls"][0]["name"] == "calculate_rate"
    log = (out / "runtime_log.jsonl").read_text().splitlines()
    assert len(log) == 1 and json.loads(log[0])["status"] == "success"


def scripted(server: OpenAIWireServer) -> None:
    def respond(body: Mapping[str, Any]) -> Reply | None:
        last = body["messages"][-1]
        if last.get("role") == "tool":
            return Reply(text=f"Done: {last['content'][:60]}")
        content = str(last.get("content"))
        if "Summarise" in content:
            return Reply(
                tool_calls=(ScriptedCall(name="summarize_csv", arguments={"path": "data/qc.csv"}),)
            )
        if "defect rate" in content:
            return Reply(
                tool_calls=(
                    ScriptedCall(
                        name="calculate_rate", arguments={"numerator": 31, "denominator": 950}
                    ),
                )
            )
        return Reply(text=f"answer to: {content}")

    server.script.add_responder(respond)


def test_multi_turn_integrated_run(
    tmp_path: Path, cli: Callable[..., Ran], monkeypatch: pytest.MonkeyPatch
) -> None:
    with OpenAIWireServer() as server:
        scripted(server)
        use_model(monkeypatch, server)
        done = cli("run", EXAMPLES / "multi_turn_input.json", "--outdir", tmp_path / "out")
    assert done.returncode == 0, done.stderr
    trace = json.loads((tmp_path / "out" / "trace.json").read_text())
    assert trace["multi_turn"] == {"inputs": 2, "processed": 2}
    first, second = trace["turns"]
    assert (
        first["tool_calls"][0]["name"] == "summarize_csv"
        and '"rows":3' in first["tool_calls"][0]["result"]
    )
    assert (
        second["tool_calls"][0]["name"] == "calculate_rate"
        and "3.26" in second["tool_calls"][0]["result"]
    )
    assert trace["checkpoint"]["resumed"] is False
    assert not (tmp_path / "out" / ".checkpoint").exists()  # a finished run leaves none


def test_compare_mode_runs_each_template(
    tmp_path: Path, cli: Callable[..., Ran], monkeypatch: pytest.MonkeyPatch
) -> None:
    with OpenAIWireServer() as server:
        server.script.add_responder(
            lambda body: Reply(text="template said: " + body["messages"][0]["content"][:20])
        )
        path = write_input(tmp_path, user_input="hello", prompt_mode="compare", toolset="none")
        use_model(monkeypatch, server)
        done = cli("run", path, "--outdir", tmp_path / "out")
    assert done.returncode == 0, done.stderr
    trace = json.loads((tmp_path / "out" / "trace.json").read_text())
    assert set(trace["compare"]) == {
        "general_tool_agent",
        "file_expert",
        "calculation_expert",
        "conversion_expert",
    }
    assert trace["compare"]["file_expert"]["answer"].startswith("template said: You are a file exp")
    assert (tmp_path / "out" / "final_answer.md").read_text().count("## ") == 4


def test_batch_runs_every_task_and_one_failure_stops_none(
    tmp_path: Path, cli: Callable[..., Ran], monkeypatch: pytest.MonkeyPatch
) -> None:
    with OpenAIWireServer() as server:
        server.script.add_responder(
            lambda body: (
                Reply(text="ok")
                if "broken" not in str(body["messages"][-1].get("content"))
                else Reply(text="", finish_reason="length")
            )
        )
        batch = tmp_path / "batch.json"
        batch.write_text(
            json.dumps(
                {
                    "common_config": {"toolset": "none"},
                    "tasks": [
                        {
                            "conversation_id": f"t{i}",
                            "user_input": "broken" if i == 2 else f"task {i}",
                        }
                        for i in range(5)
                    ],
                }
            )
        )
        use_model(monkeypatch, server)
        done = cli("batch", batch, "--outdir", tmp_path / "out", "--concurrency", "3")
    assert done.returncode == 0, done.stderr
    assert "5/5" in done.stderr  # the progress bar reached the end
    summary = json.loads((tmp_path / "out" / "batch_summary.json").read_text())
    assert summary["total"] == 5 and summary["successes"] == 4 and summary["errors"] == 1
    assert [t["conversation_id"] for t in summary["tasks"]] == [f"t{i}" for i in range(5)]
    assert all((tmp_path / "out" / f"t{i}" / "trace.json").exists() for i in range(5))
    assert "| t2 | failed |" in (tmp_path / "out" / "batch_report.md").read_text()


def test_resume_after_sigkill_does_not_repeat_finished_calls(
    tmp_path: Path, cli: Callable[..., Ran], monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "job"
    (folder / "data").mkdir(parents=True)
    (folder / "data" / "qc.csv").write_text("line,inspected,defects\nA,1200,18\nB,950,31\n")
    path = write_input(
        folder,
        user_inputs=["Summarise data/qc.csv.", "Now the defect rate of line B."],
        toolset="basic_tools",
    )
    out = tmp_path / "out"
    with OpenAIWireServer() as server:
        server.push(
            Reply(
                tool_calls=(ScriptedCall(name="summarize_csv", arguments={"path": "data/qc.csv"}),)
            ),
            Reply(text="Summary: 2 lines."),
            Reply(
                tool_calls=(
                    ScriptedCall(
                        name="calculate_rate", arguments={"numerator": 31, "denominator": 950}
                    ),
                )
            ),
            Reply(fault=Delay(seconds=60)),  # the process is killed while this request waits
        )
        kill_when(
            "runner_crash_child",
            [str(path), str(out), server.base_url],
            lambda: len(server.chat_requests()) >= 4,
            timeout=50,
        )
        assert (out / ".checkpoint").exists() and not (out / "trace.json").exists()
        before = len(server.chat_requests())
        server.push(Reply(text="Line B: 3.26%."))
        use_model(monkeypatch, server)
        done = cli("run", path, "--outdir", out, "--resume")
        after = server.chat_requests()[before:]
    assert done.returncode == 0, done.stderr
    assert len(after) == 1  # only the request that was interrupted; nothing finished was repeated
    assert after[0].body["messages"][-1]["role"] == "tool"  # the tool result from before the kill
    trace = json.loads((out / "trace.json").read_text())
    assert trace["checkpoint"]["resumed"] is True and trace["checkpoint"]["resumed_from_turn"] == 2
    assert [t["input"] for t in trace["turns"]] == [
        "Summarise data/qc.csv.",
        "Now the defect rate of line B.",
    ]
    assert trace["turns"][1]["answer"] == "Line B: 3.26%."
    assert not (out / ".checkpoint").exists()


def test_cli_exit_code_for_a_missing_model(tmp_path: Path, cli: Callable[..., Ran]) -> None:
    path = write_input(tmp_path, user_input="hello", toolset="none")
    done = cli("run", path, "--outdir", tmp_path / "out")
    assert done.returncode == 2  # a configuration to fix, like every command's (issue 33)
    (line,) = done.stderr.strip().splitlines()  # the error itself, not an ExceptionGroup
    assert line.startswith("xai: no model configured (LLM_MODEL is not set)"), line


def test_compaction_keeps_the_full_record(
    tmp_path: Path, cli: Callable[..., Ran], monkeypatch: pytest.MonkeyPatch
) -> None:
    def respond(body: Mapping[str, Any]) -> Reply:
        last = str(body["messages"][-1].get("content"))
        if last.startswith("[xai:compaction]"):
            return Reply(text="Summary of the earlier questions.")
        return Reply(text=f"Long answer to {last!r}: " + "details " * 250)

    with OpenAIWireServer() as server:
        server.script.add_responder(respond)
        path = write_input(
            tmp_path,
            user_inputs=[f"question {i}" for i in range(1, 5)],
            toolset="none",
            max_context_tokens=1000,
        )
        use_model(monkeypatch, server)
        done = cli("run", path, "--outdir", tmp_path / "out")
    assert done.returncode == 0, done.stderr
    trace = json.loads((tmp_path / "out" / "trace.json").read_text())
    assert trace["compression_events"], "the history should have been compacted"
    assert trace["multi_turn"] == {"inputs": 4, "processed": 4}
    assert [t["input"] for t in trace["turns"]] == [f"question {i}" for i in range(1, 5)]
    assert all(t["status"] == "completed" for t in trace["turns"])
    messages = json.loads((tmp_path / "out" / "messages.json").read_text())
    assert [m["content"] for m in messages if m["role"] == "user"] == [
        f"question {i}" for i in range(1, 5)
    ]


def test_fixture_flag_switches_to_fixture_mode(
    tmp_path: Path, cli: Callable[..., Ran], monkeypatch: pytest.MonkeyPatch
) -> None:
    path = write_input(tmp_path, user_input="What is the defect rate of line B?")
    monkeypatch.chdir(ROOT)  # a relative --fixture resolves from where the command runs
    done = cli(
        "run", path, "--outdir", tmp_path / "out", "--fixture", "examples/runner/fixtures/basic"
    )
    assert done.returncode == 0, done.stderr
    assert "3.26%" in (tmp_path / "out" / "final_answer.md").read_text()


@pytest.mark.parametrize("approved", [True, False])
def test_a_fixture_scripts_a_persons_decisions(
    tmp_path: Path, cli: Callable[..., Ran], approved: bool
) -> None:
    """``approvals.json``: the call waits for approval and is decided as scripted; a denied
    call is never replayed, the model is told why."""
    import shutil

    fixture = tmp_path / "fixture"
    shutil.copytree(EXAMPLES / "fixtures" / "basic", fixture)
    decision = {"call_id": "call_1", "approved": approved, "reason": "not this line"}
    if approved:
        decision["arguments"] = {"numerator": 30, "denominator": 950, "kind": "defect_rate"}
    (fixture / "approvals.json").write_text(json.dumps([decision]))
    path = write_input(
        tmp_path, user_input="What is the defect rate of line B?", execution_mode="fixture",
        fixture_dir=str(fixture),
    )  # fmt: skip
    out = tmp_path / "out"
    done = cli("run", path, "--outdir", out)
    assert done.returncode == 0, done.stderr
    messages = json.loads((out / "messages.json").read_text())
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "tool", "assistant"]
    result = messages[3]["content"]
    if approved:
        assert result.startswith("[a person approved this call with edited arguments")
        assert '"numerator":30' in result and '"percent":3.26' in result
    else:
        assert result == "[not run: a person denied this tool call: not this line]"
