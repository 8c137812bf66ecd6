"""What a run reports: the ``RunReport`` (also the line it appends to ``runtime_log.jsonl``)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import msgspec

__all__ = ["RunReport", "append_line"]


class RunReport(msgspec.Struct, kw_only=True):
    conversation_id: str
    status: str
    outdir: str
    answer: str = ""
    error: str | None = None
    llm_calls: int = 0
    duration_ms: float = 0.0
    resumed: bool = False
    orchestrator: str = "lightweight"
    """Who ran the loop (the input's ``orchestrator``)."""


def append_line(path: Path, record: Any) -> None:
    with path.open("ab") as f:
        f.write(msgspec.json.encode(record) + b"\n")
        f.flush()
        os.fsync(f.fileno())
