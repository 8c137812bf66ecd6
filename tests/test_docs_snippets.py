"""Every ```python block in README.md and docs/ runs offline, exits cleanly and leaves
nothing in the temporary directory.

Rule: a block runs unless the line before its fence is ``<!-- needs a model: LLM_* -->``
(the README's first Quick start, which talks to your model). The blocks of every page
run in one child process (``tests/doc_snippets_child.py``: one interpreter and model
start-up, not one per page), each in fresh globals and a fresh working folder, each page
with ``TMPDIR`` pointed at an empty folder of its own that must stay empty.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import msgspec
import pytest

from tests.doc_snippets import DEMO_MODEL, ROOT, Snippet, markdown_files, snippets
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


@pytest.fixture(scope="module")
def ran(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Ran]:
    """Every page's blocks, run by one child (one interpreter and model start-up for all
    of them, not one per page): each block in a fresh working folder, each page with a
    ``TMPDIR`` of its own that must stay empty. What ran, by block name."""
    root = tmp_path_factory.mktemp("snippets")
    todo = [(str(root / str(n) / "TMPDIR"), _runnable(page)) for n, page in enumerate(PAGES)]
    for folder, _ in todo:
        Path(folder).mkdir(parents=True)  # (and the page's XAI_HOME is the folder beside it)
    done = subprocess.run(
        [sys.executable, "-m", "tests.doc_snippets_child", str(root / "work")],
        input=msgspec.json.encode(todo),
        capture_output=True,
        timeout=900,  # all pages: ~20 s of CPU, a few minutes at load 20
        env=offline_env(),
        cwd=ROOT,
        check=False,
    )
    assert done.returncode == 0, done.stderr.decode()[-3000:]
    lines = (root / "work" / "ran.jsonl").read_bytes().splitlines()
    return {r.name: r for r in (msgspec.json.decode(line, type=Ran) for line in lines)}


def _runnable(page: Path) -> list[Snippet]:
    return [s for s in snippets(page) if not s.needs_model]


@pytest.mark.timeout(900)  # the first of them waits for the child running every page
@pytest.mark.parametrize("page", PAGES, ids=[str(p.relative_to(ROOT)) for p in PAGES])
def test_the_snippets_of_a_page_run_offline_and_clean_up(page: Path, ran: dict[str, Ran]) -> None:
    todo = _runnable(page)
    assert [s.name for s in todo if s.name in ran] == [s.name for s in todo]
    done = [ran[s.name] for s in todo]
    failed = {r.name: r.error for r in done if r.error is not None}
    assert not failed, "\n".join(f"{name}:\n{error}" for name, error in failed.items())
    dirty = [r for r in done if r.left]  # the first one left it; the others find it there
    assert not dirty, f"{dirty[0].name} left {dirty[0].left} in TMPDIR"
