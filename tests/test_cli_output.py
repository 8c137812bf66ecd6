"""What the commands print is for a person and for a log file: ``xai ask`` says why an
answer is not the one asked for (and exits non-zero), and the batch progress bar redraws
in place only on a terminal."""

from __future__ import annotations

import datetime as dt
import errno
import io
import json
import shutil
from pathlib import Path

import anyio
import pytest

from tests.cli_helpers import offline, run_cli
from xai.agent import At, Cron, Every, Idle, OnEvent
from xai.cli import Renderer, explain
from xai.cli._people import duration, error_line, moment, trigger_line, usage_line
from xai.events import SessionFailed, TurnDone, TurnStarted
from xai.exceptions import ConfigurationError, ServerError
from xai.messages import ErrorInfo, TurnOutcome, TurnStatus, Usage
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


def test_values_read_as_words() -> None:
    now = 1_796_175_123.69
    assert [duration(s) for s in (5, 89, 300, 3600, 5400, 86_400 * 3)] == [
        "5 s",
        "89 s",
        "5 min",
        "1 h",
        "1 h 30 min",
        "3 days",
    ]
    assert moment(now + 300, now).endswith("(in 5 min)")
    assert moment(now - 7200, now).endswith("(2 h ago)")
    local = dt.datetime.fromtimestamp(now + 86_400 * 2).astimezone()
    assert moment(now + 86_400 * 2, now).startswith(local.strftime("%Y-%m-%d %H:%M"))
    assert trigger_line(At(time=now + 300), now).startswith("once, ")
    assert trigger_line(Every(seconds=90), now) == "every 2 min"
    assert trigger_line(Cron(expression="0 9 * * *"), now) == "on cron 0 9 * * * (UTC)"
    assert trigger_line(Idle(seconds=600), now) == "after 10 min with no conversation"
    assert trigger_line(OnEvent(name="deploy"), now) == "on the event deploy"
    assert usage_line(None) == "no tokens yet (no model calls)"
    usage = Usage(prompt_tokens=1234, completion_tokens=56, cached_tokens=1000, requests=2)
    assert usage_line(usage) == "1,234 tokens in, 56 out (1,000 of those in cached, 2 model calls)"
    assert usage_line(Usage(prompt_tokens=9, requests=1, estimated=True)).startswith("about 9")
    assert error_line(KeyError("no fact 'f1'")) == "no fact 'f1'"


def test_one_cause_is_said_once_per_turn() -> None:
    """An unreachable endpoint fails the turn and then the extraction after it: one line.
    The next turn that fails the same way says it again (it is a new answer that failed)."""
    out = io.StringIO()
    render = Renderer(out, color=False, endpoint="http://127.0.0.1:9/v1")
    unreachable = ErrorInfo(
        type="ProviderConnectionError",
        message="could not reach the model endpoint: ConnectError: All connection attempts failed",
    )
    failed = TurnOutcome(turn=1, status=TurnStatus.ERROR, error=unreachable)
    extraction = ErrorInfo(
        type="RunError", message=f"memory extraction failed ({unreachable.message})"
    )
    for _ in range(2):
        render.event(TurnStarted(turn=1, input=None))
        render.event(TurnDone(outcome=failed))
        render.event(SessionFailed(error=extraction, stage="extraction"))
    assert (
        out.getvalue().splitlines()
        == [
            "[turn error: cannot reach the model at http://127.0.0.1:9/v1: is it running? (LLM_BASE_URL)]"
        ]
        * 2
    )


@pytest.mark.parametrize(
    ("error", "line", "code"),
    [
        (
            PermissionError(errno.EACCES, "Permission denied", "/srv/xai/agent.json"),
            "cannot write /srv/xai/agent.json: Permission denied; choose a directory you can write",
            2,
        ),
        (
            OSError(errno.ENOSPC, "No space left on device", "/srv/xai/ledger.jsonl"),
            "no space left on the disk of /srv/xai/ledger.jsonl: free some space",
            1,
        ),
        (
            ConfigurationError(
                "LLM_API_KEY is not set: https://x.example needs an API key "
                "(set LLM_API_KEY, or pass api_key=...)",
                variable="LLM_API_KEY",
            ),
            "no model configured (LLM_API_KEY is not set: https://x.example needs an API key)",
            2,
        ),
        (
            ExceptionGroup("g", [ServerError("503 Service Unavailable")]),
            "the run failed: 503 Service Unavailable",
            1,
        ),
    ],
)
def test_errors_a_command_can_end_with_read_as_one_line(
    error: BaseException, line: str, code: int
) -> None:
    """The cases the process table cannot make as root (a permission) or safely (a full
    disk), through the one function that words them."""
    explained = explain(error)
    assert explained is not None
    assert explained.message.startswith(line) and explained.code == code


def test_an_error_xai_does_not_know_is_one_line_and_debug_shows_where(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(args: object) -> int:
        raise ValueError("a bug")

    monkeypatch.setattr("xai.cli._runner.run_command", broken)
    done = run_cli(capsys, "run", tmp_path / "in.json", "--outdir", tmp_path)
    assert done.returncode == 1
    assert done.stderr.splitlines() == [
        "xai: unexpected error: ValueError: a bug (run with --log-level debug to see where)"
    ]
    with pytest.raises(ValueError, match="a bug"):
        run_cli(capsys, "run", tmp_path / "in.json", "--outdir", tmp_path, "--log-level", "debug")
