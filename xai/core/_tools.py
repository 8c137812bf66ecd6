"""The four built-in tools of ``run_agent`` scenarios."""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from typing import Any, Literal

from xai.exceptions import ToolError
from xai.tools import Tool, tool

__all__ = ["BUILTIN_TOOLS", "demo_records"]


@tool
def calculate_rate(
    numerator: float,
    denominator: float,
    kind: Literal["pass_rate", "defect_rate", "share"] = "share",
    decimals: int = 2,
) -> dict[str, Any]:
    """Compute a rate as a percentage: pass rate, defect rate or a share of a total.

    Args:
        numerator: Passed items, defective items, or the part.
        denominator: Inspected items, or the total.
        kind: Which rate this is (for the label only).
        decimals: Digits after the decimal point.
    """
    if denominator == 0:
        raise ToolError("the denominator is zero: a rate of nothing is undefined")
    if numerator < 0 or denominator < 0:
        raise ToolError("counts cannot be negative")
    if numerator > denominator:
        raise ToolError(f"the numerator ({numerator:g}) exceeds the denominator ({denominator:g})")
    if not 0 <= decimals <= 6:
        raise ToolError("decimals must be between 0 and 6")
    percent = round(numerator / denominator * 100, decimals)
    return {"kind": kind, "percent": percent, "numerator": numerator, "denominator": denominator}


@cache
def demo_records() -> tuple[dict[str, Any], ...]:
    """The bundled demo data set (quality inspection records)."""
    text = resources.files("xai.core").joinpath("data/demo_records.json").read_text("utf-8")
    return tuple(json.loads(text))


@tool
def query_demo_records(
    product: str | None = None,
    line: str | None = None,
    month: str | None = None,
    status: Literal["open", "closed"] | None = None,
    limit: int = 20,
) -> dict[str, Any]:
    """Query the demo quality-inspection records (product, line, month YYYY-MM, status).

    Args:
        product: valve, pump or sensor.
        line: Production line, e.g. "A".
        month: Month as YYYY-MM.
        status: open or closed.
        limit: At most this many records (1-100).
    """
    if not 1 <= limit <= 100:
        raise ToolError("limit must be between 1 and 100")
    wanted = {"product": product, "line": line, "month": month, "status": status}
    rows = [
        r
        for r in demo_records()
        if all(v is None or str(r.get(k, "")).lower() == v.lower() for k, v in wanted.items())
    ]
    return {
        "count": len(rows),
        "records": rows[:limit],
        "totals": {
            "inspected": sum(r["inspected"] for r in rows),
            "defects": sum(r["defects"] for r in rows),
        },
    }


@tool
def check_required_fields(record: dict[str, Any], required: list[str]) -> dict[str, Any]:
    """Check which required fields of a record are missing or empty.

    Args:
        record: The record, as a JSON object.
        required: Names of the fields that must be present and non-empty.
    """
    if not required:
        raise ToolError("give at least one required field name")
    missing = [
        name for name in required if name not in record or record[name] in (None, "", [], {})
    ]
    return {"complete": not missing, "missing": missing, "checked": len(required)}


@tool
def generate_action_items(
    issues: list[str], owner: str = "unassigned", due_in_days: int = 7
) -> dict[str, Any]:
    """Turn a list of issues into action items with an owner and a due date.

    Args:
        issues: One line per issue.
        owner: Who the items go to.
        due_in_days: Days until they are due (1-365).
    """
    cleaned = [i.strip() for i in issues if i.strip()]
    if not cleaned:
        raise ToolError("no issues to act on")
    if not 1 <= due_in_days <= 365:
        raise ToolError("due_in_days must be between 1 and 365")
    items = [
        {
            "id": f"A-{n:03d}",
            "action": f"Resolve: {issue}",
            "owner": owner,
            "due_in_days": due_in_days,
        }
        for n, issue in enumerate(dict.fromkeys(cleaned), start=1)
    ]
    return {"count": len(items), "items": items}


BUILTIN_TOOLS: dict[str, Tool] = {
    t.name: t
    for t in (calculate_rate, query_demo_records, check_required_fields, generate_action_items)
}
