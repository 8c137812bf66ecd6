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


@pytest.fixture
def looped(workdir: Path) -> Path:
    """A working folder with symlink loops in it: one to itself, one pair, one to a parent."""
    os.symlink("self", workdir / "self")
    os.symlink("ping", workdir / "pong")
    os.symlink("pong", workdir / "ping")
    os.symlink("..", workdir / "data" / "parent")
    return workdir


def assert_no_host_path(result: ToolResult, root: Path) -> None:
    for place in (str(root), str(root.resolve()), str(root.parent)):
        assert place not in result.content, result.content
        assert place not in (result.error or ""), result.error


async def test_symlink_loops_are_skipped_when_listing_and_searching(looped: Path) -> None:
    listed = await call(looped, "list_files")
    assert listed.success, listed.error
    assert listed.result["files"] == ["data/qc.csv", "notes.md"]
    found = await call(looped, "search_files", text="line c")
    assert found.success and found.result["count"] == 1
    for name in ("self", "ping"):
        result = await call(looped, "read_file", path=name)
        assert not result.success and "symlink loop" in (result.error or "")
        assert_no_host_path(result, looped)


async def test_errors_never_show_the_host_path(workdir: Path) -> None:
    (workdir / "locked.txt").write_text("no")
    (workdir / "locked.txt").chmod(0)
    (workdir / "folder").mkdir()
    unreadable: list[tuple[str, dict[str, str]]] = (
        [] if os.geteuid() == 0 else [("read_file", {"path": "locked.txt"})]
    )
    try:
        for name, arguments in [
            *unreadable,
            ("read_file", {"path": "folder"}),
            ("read_file", {"path": "missing.txt"}),
            ("summarize_csv", {"path": "../secret.txt"}),
            ("convert", {"source_format": "json", "target_format": "csv", "path": "nope"}),
            ("list_files", {"pattern": "a**b"}),
        ]:
            result = await call(workdir, name, **arguments)
            assert not result.success, (name, arguments)
            assert_no_host_path(result, workdir)
    finally:
        (workdir / "locked.txt").chmod(0o600)


async def test_a_hard_link_to_a_file_outside_the_root_is_refused(
    workdir: Path, tmp_path: Path
) -> None:
    os.link(tmp_path / "secret.txt", workdir / "innocent.txt")
    result = await call(workdir, "read_file", path="innocent.txt")
    assert not result.success and "hard links outside" in (result.error or "")
    assert "top secret" not in result.content
    found = await call(workdir, "search_files", text="secret")
    assert found.result["hits"] == []
    # Both links inside the root: fine.
    os.link(workdir / "notes.md", workdir / "data" / "notes-again.md")
    again = await call(workdir, "read_file", path="data/notes-again.md")
    assert again.success and again.result["content"].startswith("# Notes")


async def test_reads_are_capped(workdir: Path) -> None:
    (workdir / "big.txt").write_bytes(b"line\n" * 3_000_000)  # 15 MB
    read = await call(workdir, "read_file", path="big.txt", max_chars=10)
    assert read.result == {"path": "big.txt", "content": "line\nline\n", "truncated": True}
    searched = await call(workdir, "search_files", text="line", pattern="big.txt")
    assert searched.result["hits"] == []  # too big to search: skipped
    summarized = await call(workdir, "summarize_csv", path="big.txt")
    assert not summarized.success and "larger than 8 MiB" in (summarized.error or "")


@pytest.mark.parametrize(
    "expression", ["1e308 * 10", "-1e308 * 10", "1e308 + 1e308", "1e999 - 1e999", "exp(1000)"]
)
def test_the_calculator_refuses_an_overflow(expression: str) -> None:
    with pytest.raises(ToolError, match=r"finite|cannot compute"):
        safe_calculate(expression)


async def test_an_overflow_is_an_error_result_not_null(workdir: Path) -> None:
    result = await call(workdir, "calculate", expression="1e308 * 10")
    assert not result.success and "null" not in result.content
    (workdir / "inf.csv").write_text("x\n1e999\n2\n")
    summary = await call(workdir, "summarize_csv", path="inf.csv")
    assert summary.result["summary"]["x"]["type"] == "text"  # not a sum of inf (null in JSON)
