"""The runner experiments in examples/experiments run offline and print a Markdown table."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
EXPERIMENTS = ROOT / "examples" / "experiments"
TABLE_RULE = re.compile(r"^\|(?:-{3,}\|){2,}$", re.MULTILINE)  # |---|---|...


def offline_env(home: Path) -> dict[str, str]:
    """No model and no embeddings endpoint configured; a throwaway XAI_HOME."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LLM_", "EMBEDDING_"))}
    return {**env, "PYTHONPATH": str(ROOT), "XAI_HOME": str(home)}


@pytest.mark.timeout(200)
@pytest.mark.parametrize(
    ("script", "expected"),
    [
        ("compare_max_turns.py", ["| 1 | failed | budget_exhausted |", "| 4 | success |"]),
        (
            "compare_prompt_templates.py",
            [f"| {name} | success |" for name in ("file_expert", "calculation_expert")],
        ),
        ("memory_on_off.py", ["| memory-off |", "| memory-on |", "| yes | 1 | yes |"]),
    ],
)
def test_experiment_runs_offline(script: str, expected: list[str], tmp_path: Path) -> None:
    outdir = tmp_path / "out"
    done = subprocess.run(
        [sys.executable, str(EXPERIMENTS / script), str(outdir)],
        cwd=ROOT,
        env=offline_env(tmp_path / "home"),
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert TABLE_RULE.search(done.stdout), done.stdout
    for text in expected:
        assert text in done.stdout, done.stdout
    written = outdir / script.replace(".py", ".md")
    assert TABLE_RULE.search(written.read_text(encoding="utf-8"))
