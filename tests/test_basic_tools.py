"""The basic_tools toolset: files confined to a root (no traversal, no symlink escape), a
calculator that never evaluates code, CSV summaries, format conversion."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from xai.exceptions import ToolError
from xai.messages import ToolCall, ToolResult
from xai.runner import basic_tools, convert_format, safe_calculate
from xai.tools import ToolSet

pytestmark = pytest.mark.anyio


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    root = tmp_path / "work"
    (root / "data").mkdir(parents=True)
    (root / "notes.md").write_text("# Notes\nThe pump on line C leaks.\nAll good on line A.\n")
    (root / "data" / "qc.csv").write_text("line,inspected,defects\nA,100,2\nB,80,5\nA,120,1\n")
    (tmp_path / "secret.txt").write_text("top secret")
    os.symlink(tmp_path / "secret.txt", root / "escape.txt")
    os.symlink(tmp_path, root / "up")
    return root


async def call(root: Path, name: str, **arguments: Any) -> ToolResult:
    return await ToolSet(basic_tools(root)).call(ToolCall("c", name, json.dumps(arguments)))


async def test_reading_inside_the_root(workdir: Path) -> None:
    result = await call(workdir, "read_file", path="notes.md")
    assert result.success and result.result["content"].startswith("# Notes")
    listed = await call(workdir, "list_files", pattern="**/*.csv")
    assert listed.result == {"count": 1, "files": ["data/qc.csv"]}


@pytest.mark.parametrize(
    "path", ["../secret.txt", "/etc/passwd", "data/../../secret.txt", "escape.txt", "up/secret.txt"]
)
async def test_nothing_outside_the_root_is_reachable(workdir: Path, path: str) -> None:
    result = await call(workdir, "read_file", path=path)
    assert not result.success
    assert "outside the working folder" in (result.error or "")
    assert "top secret" not in result.content


async def test_listing_and_search_skip_escaping_links(workdir: Path) -> None:
    listed = await call(workdir, "list_files")
    assert "escape.txt" not in listed.result["files"] and not any(
        f.startswith("up/") for f in listed.result["files"]
    )
    found = await call(workdir, "search_files", text="LINE C")
    assert found.result["hits"] == [
        {"path": "notes.md", "line": 2, "text": "The pump on line C leaks."}
    ]
    assert not (await call(workdir, "search_files", text="secret", pattern="../*")).success


def test_calculator_never_runs_code() -> None:
    assert safe_calculate("(1200 - 18) / 1200 * 100") == pytest.approx(98.5)
    assert safe_calculate("2^10 + sqrt(16) - abs(-1)") == 1027
    for bad, message in [
        ("__import__('os').system('true')", "not allowed"),
        ("(1).__class__", "not allowed"),
        ("1 / 0", "division by zero"),
        ("9 ** 99999", "exponent too large"),
        ("1 +", "not an arithmetic expression"),
    ]:
        with pytest.raises(ToolError, match=message):
            safe_calculate(bad)


async def test_csv_summary(workdir: Path) -> None:
    result = await call(workdir, "summarize_csv", path="data/qc.csv")
    assert result.result["rows"] == 3 and result.result["columns"] == [
        "line",
        "inspected",
        "defects",
    ]
    summary = result.result["summary"]
    assert summary["defects"] == {
        "type": "number",
        "min": 1.0,
        "max": 5.0,
        "mean": 2.6667,
        "sum": 8.0,
    }
    assert summary["line"] == {"type": "text", "distinct": 2, "top": {"A": 2, "B": 1}}


def test_format_conversion() -> None:
    rows = '[{"line": "A", "defects": 2}, {"line": "B|C", "defects": 5}]'
    assert convert_format(rows, "json", "csv") == "line,defects\nA,2\nB|C,5\n"
    assert convert_format(rows, "json", "markdown").splitlines()[3] == "| B\\|C | 5 |"
    assert json.loads(
        convert_format(convert_format(rows, "json", "yaml"), "yaml", "json")
    ) == json.loads(rows)
    assert json.loads(convert_format("a,b\n1,2\n", "csv", "json")) == [{"a": "1", "b": "2"}]
    with pytest.raises(ToolError, match="not valid json"):
        convert_format("{nope", "json", "yaml")
    with pytest.raises(ToolError, match="list of objects"):
        convert_format("[1, 2]", "json", "csv")


async def test_the_run_agent_builtins_are_included(workdir: Path) -> None:
    names = [t.name for t in basic_tools(workdir)]
    assert {
        "calculate_rate",
        "query_demo_records",
        "check_required_fields",
        "generate_action_items",
    } <= set(names)
    converted = await call(
        workdir, "convert", source_format="csv", target_format="markdown", path="data/qc.csv"
    )
    assert converted.result["content"].startswith("| line | inspected | defects |")
