"""The README's main job and the `xai` command line."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from xai.cli import main
from xai.memory._ledger import Ledger

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


def test_demo_tours_a_whole_agent_and_remembers_across_runs(tmp_path: Path) -> None:
    first = xai("demo", "--agent-dir", str(tmp_path))
    assert first.returncode == 0, first.stderr
    out = first.stdout
    assert "SCRIPTED model" in out and "It remembers 0 fact(s)" in out
    assert "✓ get_weather [ok]" in out and "Tokyo: clear, 71.6 °F" in out  # a tool call streamed
    assert "[memory: add" in out  # candidates adjudicated into chromadb
    assert "- The user's name is Ada." in out  # the second Session's prefix
    assert "assistant: Your name is Ada." in out
    assert "[helper] assistant: (helper) Done" in out  # a delegated sub-task
    assert "[wake-up demo-morning]" in out and "[wake-up] assistant: Good morning, Ada!" in out
    second = xai("demo", "--agent-dir", str(tmp_path))
    assert second.returncode == 0, second.stderr
    assert "It remembers 1 fact(s) from earlier runs" in second.stdout
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


def test_help_and_usage_errors(capsys: object) -> None:
    assert main([]) == 2
    done = xai("--help")
    assert done.returncode == 0 and "demo" in done.stdout and "exit codes" in done.stdout
    bad = xai("demo", "--log-level", "chatty")
    assert bad.returncode == 2 and "unknown log level" in bad.stderr
