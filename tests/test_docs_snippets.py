"""Every ```python block in README.md and docs/ runs offline, exits cleanly and leaves
nothing in the temporary directory.

Rule: a block runs unless the line before its fence is ``<!-- needs a model: LLM_* -->``
(the README's first Quick start, which talks to your model). The blocks of one page run
in one child process (``tests/doc_snippets_child.py``), each in fresh globals and a fresh
working folder, with ``TMPDIR`` pointed at an empty folder that must stay empty.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import msgspec
import pytest

from tests.doc_snippets import DEMO_MODEL, ROOT, markdown_files, snippets
from tests.doc_snippets_child import Ran
from tests.example_helpers import offline_env

PAGES = [path for path in markdown_files() if any(not s.needs_model for s in snippets(path))]


def test_the_rule_leaves_out_only_the_blocks_that_need_a_model() -> None:
    found = [s for path in markdown_files() for s in snippets(path)]
    assert len(found) >= 70  # the fences are found
    skipped = [s for s in found if s.needs_model]
    # The Quick start, and the first example (which test_readme runs against the demo model).
    assert [s.name.split(":")[0] for s in skipped] == ["README.md", "README.md"]
    demo = [s for s in skipped if s.marker == DEMO_MODEL]
    assert len(demo) == 1 and "ask_sync(" in demo[0].code
    assert all("from_env(" in s.code for s in skipped if s not in demo)  # it does read LLM_*


@pytest.mark.timeout(120)
@pytest.mark.parametrize("page", PAGES, ids=[str(p.relative_to(ROOT)) for p in PAGES])
def test_the_snippets_of_a_page_run_offline_and_clean_up(page: Path, tmp_path: Path) -> None:
    todo = [s for s in snippets(page) if not s.needs_model]
    fresh = tmp_path / "TMPDIR"
    fresh.mkdir()
    done = subprocess.run(
        [sys.executable, "-m", "tests.doc_snippets_child", str(tmp_path / "work")],
        input=msgspec.json.encode(todo),
        capture_output=True,
        timeout=100,
        env=offline_env(TMPDIR=str(fresh), XAI_HOME=str(tmp_path / "home")),
        cwd=ROOT,
        check=False,
    )
    assert done.returncode == 0, done.stderr.decode()[-3000:]
    lines = (tmp_path / "work" / "ran.jsonl").read_bytes().splitlines()
    ran = [msgspec.json.decode(line, type=Ran) for line in lines]
    assert [r.name for r in ran] == [s.name for s in todo]
    failed = {r.name: r.error for r in ran if r.error is not None}
    assert not failed, "\n".join(f"{name}:\n{error}" for name, error in failed.items())
    dirty = [r for r in ran if r.left]  # the first one left it; the others find it there
    assert not dirty, f"{dirty[0].name} left {dirty[0].left} in TMPDIR"
