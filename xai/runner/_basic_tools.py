"""The ``basic_tools`` toolset: files confined to a root, a safe calculator, CSV summaries,
format conversion — plus the ``run_agent`` built-ins.

Every path a model gives is resolved (symlinks followed) and must stay inside
the configured root: ``..``, absolute paths and symlinks pointing out are
refused with a clear error result. The calculator parses arithmetic with
``ast`` and evaluates only numbers, operators and a few math functions; it
never calls ``eval``.
"""

from __future__ import annotations

import ast
import csv
import io
import json
import math
import operator
import statistics
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

from xai.exceptions import ToolError
from xai.tools import Tool

__all__ = ["Sandbox", "basic_tools", "convert_format", "safe_calculate"]

MAX_READ_CHARS = 50_000


class Sandbox:
    """Resolves model-given paths inside ``root``, refusing anything that escapes it."""

    def __init__(self, root: str | Path) -> None:
        self.root = Path(root).expanduser().resolve(strict=True)

    def resolve(self, relative: str) -> Path:
        if not relative or "\x00" in relative:
            raise ToolError("give a path relative to the working folder")
        candidate = (self.root / relative).resolve(strict=False)  # follows symlinks
        if not candidate.is_relative_to(self.root):
            raise ToolError(f"{relative!r} is outside the working folder")
        return candidate

    def file(self, relative: str) -> Path:
        path = self.resolve(relative)
        if not path.is_file():
            raise ToolError(f"no file {relative!r} in the working folder")
        return path

    def show(self, path: Path) -> str:
        return path.relative_to(self.root).as_posix()


_BINARY: dict[type[ast.operator], Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}
_UNARY: dict[type[ast.unaryop], Callable[[Any], Any]] = {
    ast.UAdd: operator.pos,
    ast.USub: operator.neg,
}
_FUNCTIONS: dict[str, Callable[..., float]] = {
    "abs": abs,
    "round": round,
    "min": min,
    "max": max,
    "sqrt": math.sqrt,
    "log": math.log,
    "log10": math.log10,
    "exp": math.exp,
    "sin": math.sin,
    "cos": math.cos,
    "tan": math.tan,
    "floor": math.floor,
    "ceil": math.ceil,
}
_CONSTANTS = {"pi": math.pi, "e": math.e}


def safe_calculate(expression: str) -> float:
    """Evaluate arithmetic safely: numbers, + - * / // % **, parentheses, a few functions."""
    if len(expression) > 500:
        raise ToolError("the expression is too long (500 characters at most)")
    try:
        tree = ast.parse(expression.replace("^", "**"), mode="eval")
    except SyntaxError as exc:
        raise ToolError(f"not an arithmetic expression ({exc.msg})") from None

    def value(node: ast.AST) -> float:
        if isinstance(node, ast.Expression):
            return value(node.body)
        if (
            isinstance(node, ast.Constant)
            and isinstance(node.value, (int, float))
            and not isinstance(node.value, bool)
        ):
            return node.value
        if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
            left, right = value(node.left), value(node.right)
            if isinstance(node.op, ast.Pow) and abs(right) > 1000:
                raise ToolError("exponent too large")
            return float(_BINARY[type(node.op)](left, right))
        if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
            return float(_UNARY[type(node.op)](value(node.operand)))
        if isinstance(node, ast.Name) and node.id in _CONSTANTS:
            return _CONSTANTS[node.id]
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in _FUNCTIONS
            and not node.keywords
        ):
            return _FUNCTIONS[node.func.id](*(value(a) for a in node.args))
        raise ToolError(f"not allowed in a calculation: {ast.unparse(node)!r}")

    try:
        result = value(tree)
    except ZeroDivisionError:
        raise ToolError("division by zero") from None
    except (OverflowError, ValueError, TypeError) as exc:
        raise ToolError(f"cannot compute it: {exc}") from None
    return float(result)


Format = Literal["json", "yaml", "csv", "markdown"]


def _rows(data: Any) -> list[dict[str, Any]]:
    if isinstance(data, dict):
        data = [data]
    if not isinstance(data, list) or not all(isinstance(r, dict) for r in data):
        raise ToolError("CSV and Markdown need a list of objects (one per row)")
    return data


def convert_format(content: str, source: Format, target: Format) -> str:
    """Convert between JSON, YAML, CSV and Markdown tables (Markdown is output only)."""
    import yaml

    try:
        if source == "json":
            data: Any = json.loads(content)
        elif source == "yaml":
            data = yaml.safe_load(content)
        elif source == "csv":
            data = list(csv.DictReader(io.StringIO(content)))
        else:
            raise ToolError("Markdown can be produced, not read")
    except (ValueError, yaml.YAMLError) as exc:
        raise ToolError(f"the content is not valid {source}: {exc}") from None
    if target == "json":
        return json.dumps(data, ensure_ascii=False, indent=2)
    if target == "yaml":
        return str(yaml.safe_dump(data, allow_unicode=True, sort_keys=False))
    rows = _rows(data)
    columns = list(dict.fromkeys(k for r in rows for k in r))
    if target == "csv":
        out = io.StringIO()
        writer = csv.DictWriter(out, fieldnames=columns, lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
        return out.getvalue()
    cells = [[str(r.get(c, "")).replace("|", "\\|") for c in columns] for r in rows]
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(row) + " |" for row in cells]
    return "\n".join(lines)


def basic_tools(root: str | Path) -> list[Tool]:
    """The toolset, with file access confined to ``root``."""
    from xai.core import BUILTIN_TOOLS

    sandbox = Sandbox(root)

    def read_file(path: str, max_chars: int = 20_000) -> dict[str, Any]:
        """Read a text file in the working folder.

        Args:
            path: Path relative to the working folder.
            max_chars: Return at most this many characters.
        """
        target = sandbox.file(path)
        try:
            text = target.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            raise ToolError(f"{path!r} is not a UTF-8 text file") from None
        limit = max(1, min(max_chars, MAX_READ_CHARS))
        return {
            "path": sandbox.show(target),
            "content": text[:limit],
            "truncated": len(text) > limit,
        }

    def list_files(pattern: str = "**/*") -> dict[str, Any]:
        """List files in the working folder matching a glob pattern (e.g. "**/*.csv").

        Args:
            pattern: A glob relative to the working folder.
        """
        if pattern.startswith("/") or ".." in Path(pattern).parts:
            raise ToolError("the pattern must stay inside the working folder")
        found = []
        for item in sorted(sandbox.root.glob(pattern)):
            resolved = item.resolve()
            if item.is_file() and resolved.is_relative_to(sandbox.root):
                found.append(sandbox.show(item))
            if len(found) >= 200:
                break
        return {"count": len(found), "files": found}

    def search_files(text: str, pattern: str = "**/*", max_hits: int = 50) -> dict[str, Any]:
        """Find lines containing some text in the working folder's files.

        Args:
            text: What to look for (case-insensitive).
            pattern: Which files to search (a glob).
            max_hits: Stop after this many matching lines.
        """
        if not text:
            raise ToolError("give some text to look for")
        hits: list[dict[str, Any]] = []
        needle = text.lower()
        for name in list_files(pattern)["files"]:
            try:
                lines = (sandbox.root / name).read_text(encoding="utf-8").splitlines()
            except (UnicodeDecodeError, OSError):
                continue
            for number, line in enumerate(lines, start=1):
                if needle in line.lower():
                    hits.append({"path": name, "line": number, "text": line.strip()[:300]})
                    if len(hits) >= max_hits:
                        return {"count": len(hits), "hits": hits, "complete": False}
        return {"count": len(hits), "hits": hits, "complete": True}

    def calculate(expression: str) -> dict[str, Any]:
        """Evaluate an arithmetic expression safely (no code execution).

        Args:
            expression: e.g. "(1200 - 18) / 1200 * 100" or "sqrt(2) * pi".
        """
        return {"expression": expression, "value": safe_calculate(expression)}

    def summarize_csv(path: str, max_columns: int = 30) -> dict[str, Any]:
        """Summarise a CSV table: rows, columns, numeric statistics, frequent values.

        Args:
            path: CSV file relative to the working folder.
            max_columns: Summarise at most this many columns.
        """
        target = sandbox.file(path)
        try:
            with target.open(encoding="utf-8", newline="") as f:
                rows = list(csv.DictReader(f))
        except (UnicodeDecodeError, csv.Error) as exc:
            raise ToolError(f"{path!r} is not a readable CSV file: {exc}") from None
        columns = list(rows[0].keys()) if rows else []
        summary: dict[str, Any] = {}
        for column in columns[:max_columns]:
            values = [r.get(column) or "" for r in rows]
            numbers: list[float] = []
            for v in values:
                try:
                    numbers.append(float(v))
                except ValueError:
                    break
            else:
                if numbers:
                    summary[column] = {
                        "type": "number",
                        "min": min(numbers),
                        "max": max(numbers),
                        "mean": round(statistics.fmean(numbers), 4),
                        "sum": round(sum(numbers), 4),
                    }
                    continue
            counts: dict[str, int] = {}
            for v in values:
                counts[v] = counts.get(v, 0) + 1
            top = sorted(counts.items(), key=lambda kv: -kv[1])[:5]
            summary[column] = {"type": "text", "distinct": len(counts), "top": dict(top)}
        return {
            "path": sandbox.show(target),
            "rows": len(rows),
            "columns": columns,
            "summary": summary,
        }

    def convert(
        source_format: Format,
        target_format: Format,
        content: str | None = None,
        path: str | None = None,
    ) -> dict[str, Any]:
        """Convert data between JSON, YAML, CSV and Markdown tables.

        Args:
            source_format: json, yaml or csv.
            target_format: json, yaml, csv or markdown.
            content: The data itself (or give path).
            path: A file in the working folder to read the data from.
        """
        if (content is None) == (path is None):
            raise ToolError("give exactly one of content or path")
        text = (
            content if content is not None else sandbox.file(path or "").read_text(encoding="utf-8")
        )
        return {
            "format": target_format,
            "content": convert_format(text, source_format, target_format),
        }

    own = [
        Tool(f) for f in (read_file, list_files, search_files, calculate, summarize_csv, convert)
    ]
    return [*own, *BUILTIN_TOOLS.values()]
