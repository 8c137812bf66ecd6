"""Every example runs offline (subprocesses, no LLM_* in the environment) and leaves
nothing in the temporary directory."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.example_helpers import run_example


def run(script: str, *args: str, tmp: Path, stdin: str = "") -> str:
    return run_example(script, *args, tmp=tmp, stdin=stdin).stdout


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
    script: str, args: tuple[str, ...], stdin: str, expected: str, tmp_path: Path
) -> None:
    assert expected in run(script, *args, tmp=tmp_path, stdin=stdin)


def test_the_repl_example_remembers(tmp_path: Path) -> None:
    out = run("repl.py", tmp=tmp_path, stdin="Hi, I'm Ada\n")
    assert 'remembered: ["The user\'s name is Ada."]' in out
