"""The facades import downwards only: the command line sits on top of the runner, the
evaluation and run_agent (``core``); ``core`` imports none of them (no cycle with the CLI)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import xai

PACKAGE = Path(xai.__file__).parent

ABOVE = {
    "core": ("xai.cli", "xai.runner", "xai.eval"),
    "runner": ("xai.cli", "xai.eval"),
    "eval": ("xai.cli", "xai.runner"),
}


def imported(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
    return found


@pytest.mark.parametrize("package", sorted(ABOVE))
def test_a_facade_imports_no_facade_above_it(package: str) -> None:
    bad = {
        f"{path.relative_to(PACKAGE)}: {name}"
        for path in (PACKAGE / package).rglob("*.py")
        for name in imported(path)
        if name.startswith(ABOVE[package])
    }
    assert not bad, sorted(bad)


@pytest.mark.parametrize("package", ["cli", "core", "runner"])
def test_facades_wait_for_events_never_for_time(package: str) -> None:
    """No sleep to let something happen (the demo's and the REPL's printers are waited on)."""
    sleeps = {
        f"{path.relative_to(PACKAGE)}:{node.lineno}"
        for path in (PACKAGE / package).rglob("*.py")
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.Call)
        and (
            (isinstance(node.func, ast.Attribute) and node.func.attr in ("sleep", "checkpoint"))
            or (isinstance(node.func, ast.Name) and node.func.id == "sleep")
        )
    }
    assert not sleeps, sorted(sleeps)
