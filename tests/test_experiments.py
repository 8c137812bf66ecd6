"""The runner experiments in examples/experiments run offline, print a Markdown table and
leave nothing in the temporary directory."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.example_helpers import offline_env, run_example

TABLE_RULE = re.compile(r"^\|(?:-{3,}\|){2,}$", re.MULTILINE)  # |---|---|...


@pytest.mark.timeout(200)
@pytest.mark.parametrize(
    ("script", "keep", "expected"),
    [
        ("compare_max_turns.py", True, ["| 1 | failed | budget_exhausted |", "| 4 | success |"]),
        (  # no folder given: everything goes to a temporary folder, removed at the end
            "compare_prompt_templates.py",
            False,
            [f"| {name} | success |" for name in ("file_expert", "calculation_expert")],
        ),
        ("memory_on_off.py", True, ["| memory-off |", "| memory-on |", "| yes | 1 | yes |"]),
    ],
)
def test_experiment_runs_offline(
    script: str, keep: bool, expected: list[str], tmp_path: Path
) -> None:
    outdir = tmp_path / "out"
    done = run_example(
        Path("experiments") / script,
        *([str(outdir)] if keep else []),
        tmp=tmp_path,
        env=offline_env(XAI_HOME=str(tmp_path / "home")),
    )
    assert TABLE_RULE.search(done.stdout), done.stdout
    for text in expected:
        assert text in done.stdout, done.stdout
    if keep:
        written = outdir / script.replace(".py", ".md")
        assert TABLE_RULE.search(written.read_text(encoding="utf-8"))
    assert not (tmp_path / "home").exists()  # the experiments use a throwaway XAI_HOME
