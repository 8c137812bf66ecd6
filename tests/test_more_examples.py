"""Every example runs offline (subprocesses, no LLM_* in the environment)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.test_demo import ROOT, clean_env


def run(script: str, *args: str, stdin: str = "") -> str:
    done = subprocess.run(
        [sys.executable, str(ROOT / "examples" / script), *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=180,
        env=clean_env(),
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


@pytest.mark.parametrize(
    ("script", "args", "stdin", "expected"),
    [
        ("structured_output.py", (), "", "value: Ticket(title='Login fails', priority=1"),
        ("delegation.py", (), "", "[helper] assistant: (helper) Done"),
        ("many_sessions.py", ("50",), "", "50/50 sessions completed a turn"),
        ("repl.py", (), "Hi, I'm Ada\nWhat is my name?\n", "Your name is Ada."),
        ("memory_eval.py", (), "", "hybrid      evidence recall @1 100, @3 100"),
        (
            "mcp_tools.py",
            (),
            "",
            "[pantry_level -> {'item': 'eggs', 'amount': 6, 'unit': 'pieces'}]",
        ),
    ],
)
def test_example_runs_offline(
    script: str, args: tuple[str, ...], stdin: str, expected: str
) -> None:
    assert expected in run(script, *args, stdin=stdin)


def test_the_repl_example_remembers() -> None:
    out = run("repl.py", stdin="Hi, I'm Ada\n")
    assert 'remembered: ["The user\'s name is Ada."]' in out
