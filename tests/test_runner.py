"""The file runner: validation, artifacts, fixture replay, multi-turn, prompt modes, batch, resume."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from tests.test_demo import ROOT, clean_env
from xai.cli import main
from xai.testing import Delay, OpenAIWireServer, Reply, ScriptedCall

EXAMPLES = ROOT / "examples" / "runner"


def write_input(folder: Path, **fields: Any) -> Path:
    path = folder / "input.json"
    path.write_text(json.dumps({"conversation_id": "c1", **fields}))
    return path


def xai_run(*args: str, env: Mapping[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "xai", "run", *args],
        capture_output=True,
        text=True,
        timeout=180,
        env=dict(env)
        if env
        else clean_env(XAI_HOME=str(Path(tempfile.gettempdir()) / "xai-test-home")),
        cwd=ROOT,
    )


def test_invalid_input_reports_every_problem_and_writes_nothing(tmp_path: Path) -> None:
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
    done = xai_run(str(path), "--outdir", str(out))
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


def test_fixture_mode_replays_without_a_model(tmp_path: Path) -> None:
    out = tmp_path / "out"
    done = xai_run(str(EXAMPLES / "fixture_input.json"), "--outdir", str(out))
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


def test_multi_turn_integrated_run(tmp_path: Path) -> None:
    with OpenAIWireServer() as server:
        scripted(server)
        env = clean_env(
            LLM_BASE_URL=server.base_url, LLM_MODEL="scripted", XAI_HOME=str(tmp_path / "home")
        )
        done = xai_run(
            str(EXAMPLES / "multi_turn_input.json"), "--outdir", str(tmp_path / "out"), env=env
        )
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


def test_compare_mode_runs_each_template(tmp_path: Path) -> None:
    with OpenAIWireServer() as server:
        server.script.add_responder(
            lambda body: Reply(text="template said: " + body["messages"][0]["content"][:20])
        )
        path = write_input(tmp_path, user_input="hello", prompt_mode="compare", toolset="none")
        env = clean_env(
            LLM_BASE_URL=server.base_url, LLM_MODEL="scripted", XAI_HOME=str(tmp_path / "home")
        )
        done = xai_run(str(path), "--outdir", str(tmp_path / "out"), env=env)
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


def test_batch_runs_every_task_and_one_failure_stops_none(tmp_path: Path) -> None:
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
        env = clean_env(
            LLM_BASE_URL=server.base_url, LLM_MODEL="scripted", XAI_HOME=str(tmp_path / "home")
        )
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "xai",
                "batch",
                str(batch),
                "--outdir",
                str(tmp_path / "out"),
                "--concurrency",
                "3",
            ],
            capture_output=True,
            text=True,
            timeout=180,
            env=env,
            cwd=ROOT,
        )
    assert done.returncode == 0, done.stderr
    assert "5/5" in done.stderr  # the progress bar reached the end
    summary = json.loads((tmp_path / "out" / "batch_summary.json").read_text())
    assert summary["total"] == 5 and summary["successes"] == 4 and summary["errors"] == 1
    assert [t["conversation_id"] for t in summary["tasks"]] == [f"t{i}" for i in range(5)]
    assert all((tmp_path / "out" / f"t{i}" / "trace.json").exists() for i in range(5))
    assert "| t2 | failed |" in (tmp_path / "out" / "batch_report.md").read_text()


def test_resume_after_sigkill_does_not_repeat_finished_calls(tmp_path: Path) -> None:
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
        child = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "tests.runner_crash_child",
                str(path),
                str(out),
                server.base_url,
            ],
            cwd=ROOT,
            env=clean_env(XAI_HOME=str(tmp_path / "home")),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            deadline = time.monotonic() + 60
            while len(server.chat_requests()) < 4:
                assert child.poll() is None and time.monotonic() < deadline, (
                    "the run never reached the kill point"
                )
                time.sleep(0.02)
            child.send_signal(signal.SIGKILL)
            child.wait(timeout=10)
        finally:
            if child.poll() is None:
                child.kill()
                child.wait()
        assert (out / ".checkpoint").exists() and not (out / "trace.json").exists()
        before = len(server.chat_requests())
        server.push(Reply(text="Line B: 3.26%."))
        env = clean_env(
            LLM_BASE_URL=server.base_url, LLM_MODEL="scripted", XAI_HOME=str(tmp_path / "home")
        )
        done = xai_run(str(path), "--outdir", str(out), "--resume", env=env)
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


def test_cli_exit_code_for_a_missing_model(tmp_path: Path) -> None:
    path = write_input(tmp_path, user_input="hello", toolset="none")
    assert main(["run", str(path), "--outdir", str(tmp_path / "out")]) == 1


def test_compaction_keeps_the_full_record(tmp_path: Path) -> None:
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
        env = clean_env(
            LLM_BASE_URL=server.base_url, LLM_MODEL="scripted", XAI_HOME=str(tmp_path / "home")
        )
        done = xai_run(str(path), "--outdir", str(tmp_path / "out"), env=env)
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


def test_fixture_flag_switches_to_fixture_mode(tmp_path: Path) -> None:
    path = write_input(tmp_path, user_input="What is the defect rate of line B?")
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "xai",
            "run",
            str(path),
            "--outdir",
            str(tmp_path / "out"),
            "--fixture",
            "examples/runner/fixtures/basic",
        ],
        capture_output=True,
        text=True,
        timeout=180,
        env=clean_env(XAI_HOME=str(tmp_path / "home")),
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr
    assert "3.26%" in (tmp_path / "out" / "final_answer.md").read_text()
