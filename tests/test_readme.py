"""The README and docs/cli.md list every ``xai`` subcommand and every example, each on a line
with a link; the README's first example (the one-liner) runs against the demo's scripted model
and remembers; the offline Quick start really remembers across two runs."""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from pathlib import Path

from tests.doc_snippets import DEMO_MODEL, ROOT, snippets
from tests.example_helpers import EXAMPLES, left_behind, offline_env
from tests.warm_python import run_python
from xai.cli import _parser

README = ROOT / "README.md"
CLI_DOC = ROOT / "docs" / "cli.md"
OFFLINE_QUICK_START = "<!-- quick start, offline -->"


def subcommands() -> list[str]:
    """Every subcommand the real parser registers, however it is added (``add_parser``
    inline or a module's ``add_*_parser``): read from the parser, not from a list here."""
    parser = _parser()
    found = [
        name
        for action in parser._actions
        if isinstance(action, argparse._SubParsersAction)
        for name in action.choices
    ]
    assert found, "the parser has no subcommands: has the way they are registered changed?"
    return found


def examples() -> list[str]:
    """The runnable examples: every .py file under examples/, in subfolders too, except
    helpers whose name starts with ``_`` (imported by the examples, not run)."""
    return sorted(
        str(path.relative_to(EXAMPLES))
        for path in EXAMPLES.rglob("*.py")
        if not path.name.startswith("_")
    )


def linked_lines(path: Path, needle: str) -> list[str]:
    """The lines of ``path`` that mention ``needle`` and carry a Markdown link."""
    return [
        line
        for line in path.read_text(encoding="utf-8").splitlines()
        if needle in line and "](" in line
    ]


def test_every_subcommand_is_listed_with_a_link() -> None:
    names = subcommands()
    assert {"demo", "chat", "ingest", "ask", "run", "batch", "eval"} <= set(names)
    for doc in (README, CLI_DOC):
        missing = [name for name in names if not linked_lines(doc, f"`xai {name}")]
        assert not missing, f"{doc.name} has no linked line for: {', '.join(missing)}"


def test_every_example_is_listed_in_the_readme() -> None:
    found = examples()
    assert "memory_eval.py" in found and "experiments/memory_on_off.py" in found
    assert "experiments/_experiment.py" not in found
    missing = [name for name in found if not linked_lines(README, f"](examples/{name})")]
    assert not missing, f"README.md's example table misses: {', '.join(missing)}"


def test_the_offline_quick_start_remembers_on_its_second_run(tmp_path: Path) -> None:
    (quick_start,) = [s for s in snippets(README) if s.marker == OFFLINE_QUICK_START]
    script = tmp_path / "quickstart.py"
    script.write_text(quick_start.code, encoding="utf-8")
    fresh = tmp_path / "TMPDIR"
    fresh.mkdir()
    runs = []
    for run in range(2):  # (each a process of its own, forked warm: tests/warm_python.py)
        done = run_python(
            script,
            (),
            stdin="",
            env=offline_env(TMPDIR=str(fresh)),
            cwd=tmp_path,
            timeout=120,
            scratch=tmp_path / f"streams-{run}",
        )
        assert done.returncode == 0, done.stderr[-3000:]
        assert "warning" not in done.stderr.lower(), done.stderr  # no extraction warnings
        runs.append(done.stdout.splitlines())
    first, second = runs
    assert first[0] == "Nothing yet: tell me about you."
    assert "The user grows tomatoes on their balcony in Porto." in first[1]
    assert "The user's name is Ada." in first[1]
    assert second[0].startswith("You told me:") and "tomatoes" in second[0]  # it remembers
    assert (tmp_path / "fern-offline").is_dir()  # the named folder the README tells about
    assert not left_behind(fresh)


def test_the_first_example_is_the_one_liner_and_remembers(tmp_path: Path) -> None:
    """Run as the README says: `python -m xai.testing serve --demo`, LLM_* pointed at it."""
    found = snippets(README)
    first = found[0]
    assert first.marker == DEMO_MODEL  # the first example of the README
    assert "ask_sync(" in first.code and "async " not in first.code  # one call from plain code
    script = tmp_path / "first.py"
    script.write_text(first.code, encoding="utf-8")
    fresh = tmp_path / "TMPDIR"
    fresh.mkdir()
    server = subprocess.Popen(
        [sys.executable, "-m", "xai.testing", "serve", "--demo"],
        stdout=subprocess.PIPE,
        text=True,
        env=offline_env(),
    )
    try:
        assert server.stdout is not None
        listening = server.stdout.readline()
        assert listening.startswith("listening on "), listening
        done = run_python(
            script,
            (),
            stdin="",
            env=offline_env(
                TMPDIR=str(fresh),
                XAI_HOME=str(tmp_path / "home"),
                LLM_BASE_URL=listening.split()[-1],
                LLM_MODEL="xai-scripted",
            ),
            cwd=tmp_path,
            timeout=120,
            scratch=tmp_path / "streams",
        )
    finally:
        server.terminate()
        server.wait(timeout=30)
        if server.stdout is not None:
            server.stdout.close()
    assert done.returncode == 0, done.stderr[-3000:]
    assert "warning" not in done.stderr.lower(), done.stderr  # no extraction warnings
    hello, remembered = done.stdout.splitlines()
    assert hello == "Nice to meet you, Ada!"
    assert remembered.startswith("You told me:")  # the second call knows the first
    assert "tomatoes on their balcony in Porto" in remembered and "Ada" in remembered
    shown = README.read_text(encoding="utf-8").split(first.code, 1)[1]
    printed = re.search(r"```text\n(.*?)```", shown, re.DOTALL)
    assert printed is not None and printed.group(1).splitlines()[0] == hello  # as printed
    assert (tmp_path / "home" / "agents" / "fern").is_dir()  # where the README says
    assert not left_behind(fresh)
