"""The scripts in examples/ run offline, as a user would run them, and finish cleanly."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def run_example(name: str) -> subprocess.CompletedProcess[str]:
    # Without LLM_* / EMBEDDING_* the examples use the local scripted model and embeddings.
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LLM_", "EMBEDDING_"))}
    return subprocess.run(
        [sys.executable, str(ROOT / "examples" / name)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.mark.timeout(150)
@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("query_with_tools.py", ["[calling unit_price(", "Twelve mangoes cost 24.00 euros."]),
        (
            "proactive_wakeup.py",
            [
                "memory: promote (judged important)",
                "[Fri 08:00] wake-up 'good-morning' fired (scheduled time)",
                "Good morning! I remember that your chemistry exam is on Friday at 9 am",
            ],
        ),
    ],
)
def test_example_runs_offline(name: str, expected: list[str]) -> None:
    result = run_example(name)
    assert result.returncode == 0, result.stderr
    for line in expected:
        assert line in result.stdout, result.stdout
