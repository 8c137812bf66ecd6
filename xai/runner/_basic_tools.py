"""The ``basic_tools`` toolset: files confined to a root (``Sandbox``), a safe calculator, CSV
summaries, format conversion — plus the ``run_agent`` built-ins.

``..``, absolute paths and symlinks pointing out of the root are refused with a
clear error result; errors name paths relative to the root. The calculator
(``safe_calculate``) never calls ``eval``.
"""

from __future__ import annotations

import csv
import io
import json
import math
import statistics
from pathlib import Path
from typing import Any, Literal

from xai.exceptions import ToolError
from xai.runner._calculator import safe_calculate
from xai.runner._sandbox import Sandbox
from xai.tools import Tool

__all__ = ["MAX_LISTED", "MAX_READ_CHARS", "basic_tools", "convert_format"]

MAX_READ_CHARS = 50_000
"""The most ``read_file`` returns of one file."""
MAX_LISTED = 200
"""The most files ``list_files`` returns (and ``search_files`` searches)."""


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
    except RecursionError:
        raise ToolError(f"the {source} content is nested too deeply") from None
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
        limit = max(1, min(max_chars, MAX_READ_CHARS))
        text, truncated = sandbox.read_text(path, max_chars=limit)
        return {
            "path": sandbox.show(sandbox.resolve(path)),
            "content": text,
            "truncated": truncated,
        }

    def list_files(pattern: str = "**/*") -> dict[str, Any]:
        """List files in the working folder matching a glob pattern (e.g. "**/*.csv").

        Args:
            pattern: A glob relative to the working folder.
        """
        found: list[str] = []
        for name in sandbox.files(pattern):
            found.append(name)
            if len(found) >= MAX_LISTED:
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
                lines = sandbox.read_text(name)[0].splitlines()
            except (ToolError, OSError):  # not text, too big, linked outside: not searched
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
        text, _ = sandbox.read_text(path)
        try:
            rows = list(csv.DictReader(io.StringIO(text, newline="")))
        except csv.Error as exc:
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
                if numbers and all(map(math.isfinite, numbers)):
                    summary[column] = {
                        "type": "number",
                        "min": min(numbers),
                        "max": max(numbers),
                        "mean": round(statistics.fmean(numbers), 4),
                        "sum": round(math.fsum(numbers), 4),
                    }
                    continue
            counts: dict[str, int] = {}
            for v in values:
                counts[v] = counts.get(v, 0) + 1
            top = sorted(counts.items(), key=lambda kv: -kv[1])[:5]
            summary[column] = {"type": "text", "distinct": len(counts), "top": dict(top)}
        return {
            "path": sandbox.show(sandbox.resolve(path)),
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
        text = content if content is not None else sandbox.read_text(path or "")[0]
        return {
            "format": target_format,
            "content": convert_format(text, source_format, target_format),
        }

    own = [
        Tool(sandbox.guard(f))
        for f in (read_file, list_files, search_files, calculate, summarize_csv, convert)
    ]
    return [*own, *BUILTIN_TOOLS.values()]
