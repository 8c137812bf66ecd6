"""What the commands print is for a person and for a log file: ``xai ask`` says why an
answer is not the one asked for (and exits non-zero), and the batch progress bar redraws
in place only on a terminal."""

from __future__ import annotations

import io
import json
import shutil
from pathlib import Path

import anyio
import pytest

from tests.cli_helpers import offline, run_cli
from xai.runner import load_batch, run_batch
from xai.testing import OpenAIWireServer, Reply

ROOT = Path(__file__).resolve().parent.parent
SCENARIO = "scenario_id: s\ninstructions: help\noutput_type: ticket_response\n"


def test_ask_exits_non_zero_when_the_answer_is_not_the_structured_output(
    openai_server: OpenAIWireServer,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The model answers prose twice (the first answer and the repair): the raw text is
    printed, and the error is one line for a person, exit code 1 (it was 0)."""
    openai_server.script.add_responder(lambda _body: Reply(text="Sure, happy to help!"))
    offline(
        monkeypatch,
        XAI_HOME=str(tmp_path / "home"),
        LLM_BASE_URL=openai_server.base_url,
        LLM_MODEL="scripted",
    )
    scenario = tmp_path / "s.yaml"
    scenario.write_text(SCENARIO)
    done = run_cli(capsys, "ask", "--scenario", scenario, "Can I return it?")
    assert done.returncode == 1, done.stderr
    assert "Sure, happy to help!" in done.stdout
    (line,) = [x for x in done.stderr.splitlines() if x.startswith("xai: ")]
    assert line.startswith("xai: the answer is not the structured output the scenario asks for")


def test_ask_names_an_unreachable_model_without_a_class_name(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    offline(
        monkeypatch,
        XAI_HOME=str(tmp_path / "home"),
        LLM_BASE_URL="http://127.0.0.1:9/v1",  # nothing listens on the discard port
        LLM_MODEL="scripted",
    )
    scenario = tmp_path / "s.yaml"
    scenario.write_text(SCENARIO)
    done = run_cli(capsys, "ask", "--scenario", scenario, "hi", "--log-level", "error")
    assert done.returncode == 1
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith("xai: the run failed: could not reach the model endpoint"), line


def test_the_batch_progress_bar_writes_no_carriage_return_into_a_log(tmp_path: Path) -> None:
    workdir = tmp_path / "runner"
    shutil.copytree(ROOT / "examples" / "runner", workdir)
    tasks = [
        {"conversation_id": f"t{n}", "user_input": "What is the defect rate of line B?"}
        for n in range(3)
    ]
    common = {"execution_mode": "fixture", "fixture_dir": "fixtures/basic"}
    path = workdir / "batch.json"
    path.write_text(json.dumps({"common_config": common, "tasks": tasks}))
    log = io.StringIO()  # not a terminal
    summary = anyio.run(
        lambda: run_batch(
            load_batch(path), tmp_path / "out", concurrency=2, home=tmp_path / "home", out=log
        )
    )
    assert summary["successes"] == 3
    assert "\r" not in log.getvalue()
    assert [line.split("] ")[1].split(" (")[0] for line in log.getvalue().splitlines()] == [
        "1/3",
        "2/3",
        "3/3",
    ]
