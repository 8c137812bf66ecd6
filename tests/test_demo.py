"""The README's main job and the `xai` command line."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path

import pytest

from xai.cli import main
from xai.cli._demo import fallback_reason, run_demo
from xai.config import LLMConfig
from xai.memory._ledger import Ledger
from xai.testing import HttpError, OpenAIWireServer, Reply

ROOT = Path(__file__).resolve().parent.parent


def clean_env(**extra: str) -> dict[str, str]:
    env = {
        k: v for k, v in os.environ.items() if not k.startswith(("LLM_", "EMBEDDING_", "OPENAI_"))
    }
    return {**env, "PYTHONPATH": str(ROOT), **extra}


def xai(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "xai", *args],
        capture_output=True,
        text=True,
        timeout=180,
        env=env or clean_env(),
        cwd=ROOT,
    )


def offline(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(os.environ):
        if name.startswith(("LLM_", "EMBEDDING_", "OPENAI_")):
            monkeypatch.delenv(name)


def test_demo_tours_a_whole_agent_and_remembers_across_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``xai demo`` twice, in this process (the entry point itself is run as a program by
    ``test_chat_without_a_model_says_how_to_configure_one``)."""
    offline(monkeypatch)
    assert main(["demo", "--agent-dir", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "SCRIPTED model" in out and "no LLM_* set" in out and "It remembers 0 fact(s)" in out
    assert "✓ get_weather [ok]" in out and "Tokyo: clear, 71.6 °F" in out  # a tool call streamed
    assert "[memory: add" in out  # candidates adjudicated into chromadb
    assert "- The user's name is Ada." in out  # the second Session's prefix
    assert "assistant: Your name is Ada." in out
    assert "[helper] assistant: (helper) Done" in out  # a delegated sub-task
    assert "[wake-up demo-morning]" in out and "[wake-up] assistant: Good morning, Ada!" in out
    # Each step's output is complete before the next step's heading (no sleeps, no races).
    assert out.index("[memory: add") < out.index('remembered: "The user\'s name is Ada."')
    assert out.index("Good morning, Ada!") < out.index("6. Done.")
    assert main(["demo", "--agent-dir", str(tmp_path)]) == 0
    assert "It remembers 1 fact(s) from earlier runs" in capsys.readouterr().out
    decisions = Ledger.read_path(tmp_path / "memory" / "ledger.jsonl")
    assert [d.kind for d in decisions] == ["add", "reinforce"]
    (fact,) = list(Ledger.replay(tmp_path / "memory" / "ledger.jsonl").facts.values())
    assert fact.count == 2  # seen in two Sessions, one per run


def test_chat_without_a_model_says_how_to_configure_one(tmp_path: Path) -> None:
    done = xai("chat", "--agent-dir", str(tmp_path))
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "LLM_API_KEY, LLM_BASE_URL and LLM_MODEL" in lines[0]
    assert "xai demo" in lines[0]


def test_help_and_usage_errors(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([]) == 2
    with pytest.raises(SystemExit) as done:
        main(["--help"])
    out = capsys.readouterr().out
    assert done.value.code == 0 and "demo" in out and "exit codes" in out
    assert main(["demo", "--log-level", "chatty"]) == 2
    assert "unknown log level" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("env", "reason"),
    [
        ({}, "no LLM_* set"),
        ({"LLM_MODEL": "gpt-4o-mini"}, "LLM_API_KEY is missing (the OpenAI API needs a key;"),
        (
            {"LLM_MODEL": "m", "LLM_BASE_URL": "https://api.example.com/v1"},
            "LLM_API_KEY is missing (https://api.example.com/v1 needs a key;",
        ),
        ({"LLM_API_KEY": "sk-test"}, "LLM_* incomplete: LLM_MODEL is missing"),
        ({"LLM_BASE_URL": "https://api.example.com/v1"}, "LLM_MODEL and LLM_API_KEY are missing"),
    ],
)
def test_the_fallback_names_what_is_missing(env: dict[str, str], reason: str) -> None:
    assert reason in fallback_reason(LLMConfig.from_env(env))


def test_a_half_configured_model_is_named_not_silently_replaced(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--model`` alone is not a configured model: the tour says which variable is missing."""
    offline(monkeypatch)
    assert main(["demo", "--agent-dir", str(tmp_path), "--model", "gpt-4o-mini"]) == 0
    first = capsys.readouterr().out.splitlines()[0]
    assert "LLM_* incomplete: LLM_API_KEY is missing" in first and "SCRIPTED" in first
    assert "no LLM_* set" not in first


@pytest.mark.anyio
async def test_the_demo_promises_to_remember_only_what_is_in_memory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A model that refuses every request: each step fails, nothing is remembered, and the
    tour says so instead of "Run `xai demo` again: the Agent will remember"."""
    offline(monkeypatch)
    refusing = Reply(fault=HttpError(status=401, message="invalid api key"))
    with OpenAIWireServer() as server:
        server.script.default = refusing
        env = {"LLM_BASE_URL": server.base_url, "LLM_MODEL": server.model}  # local: no key
        out = io.StringIO()
        assert await run_demo(tmp_path, env=env, out=out) == 1
    text = out.getvalue()
    assert "0 fact(s) in memory" in text and "A step failed" in text
    assert "will remember" not in text
    assert "Nothing is in memory, so a second run starts from scratch." in text
