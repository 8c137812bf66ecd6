"""Batch: many runtime inputs (``tasks`` over ``common_config``) concurrently, one folder each."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any, TextIO

import anyio
import msgspec

from xai._files import write_atomic
from xai.runner._input import InputError, RunInput, read_input_file, validate_input
from xai.runner._memory import RunnerMemory
from xai.runner._run import RunReport, run_input

__all__ = ["is_batch", "load_batch", "run_batch"]


def load_batch(path: Path, *, fixture: str | None = None) -> list[RunInput]:
    """Every task merged over ``common_config`` and validated; all problems reported at once."""
    data = read_input_file(path)
    if not isinstance(data, dict) or not isinstance(data.get("tasks"), list) or not data["tasks"]:
        raise InputError(str(path), ["tasks: a non-empty list of inputs is required"])
    common = data.get("common_config") or {}
    if not isinstance(common, dict):
        raise InputError(str(path), ["common_config: must be an object"])
    base = path.parent.resolve()
    inputs: list[RunInput] = []
    problems: list[str] = []
    seen: set[str] = set()
    for i, task in enumerate(data["tasks"]):
        if not isinstance(task, dict):
            problems.append(f"tasks[{i}]: must be an object")
            continue
        try:
            inp = validate_input({**common, **task}, base, origin=f"tasks[{i}]", fixture=fixture)
        except InputError as exc:
            problems.extend(f"tasks[{i}].{p}" for p in exc.problems)
            continue
        if inp.conversation_id in seen:
            problems.append(f"tasks[{i}].conversation_id: {inp.conversation_id!r} is used twice")
        seen.add(inp.conversation_id)
        inputs.append(inp)
    if problems:
        raise InputError(str(path), problems)
    return inputs


class _Progress:
    def __init__(self, total: int, out: TextIO) -> None:
        self.total, self.done, self.failed, self.out = total, 0, 0, out
        self.started = time.monotonic()
        self.live = out.isatty()

    def update(self, report: RunReport | None) -> None:
        self.done += 1
        if report is None or report.status != "success":
            self.failed += 1
        width = 30
        filled = int(width * self.done / self.total)
        elapsed = time.monotonic() - self.started
        line = (
            f"[{'#' * filled}{'.' * (width - filled)}] {self.done}/{self.total} "
            f"({self.failed} failed, {elapsed:.1f}s)"
        )
        if self.live:  # redrawn in place
            self.out.write(f"\r{line}" + ("\n" if self.done == self.total else ""))
        else:  # a log file or a pipe: one whole line per finished task, no \r
            self.out.write(line + "\n")
        self.out.flush()


async def run_batch(
    inputs: list[RunInput], outdir: Path, *, concurrency: int, home: Path, out: TextIO | None = None
) -> dict[str, Any]:
    limiter = anyio.CapacityLimiter(max(1, concurrency))
    progress = _Progress(len(inputs), out or sys.stderr)
    results: dict[str, dict[str, Any]] = {}
    started = time.time()

    async def one(inp: RunInput) -> None:
        async with limiter:
            try:
                report = await run_input(
                    inp, outdir / inp.conversation_id, home=home, memory=memory
                )
                results[inp.conversation_id] = msgspec.to_builtins(report)
            except Exception as exc:  # one failing task never stops the others
                results[inp.conversation_id] = {
                    "conversation_id": inp.conversation_id,
                    "status": "failed",
                    "error": f"{type(exc).__name__}: {exc}",
                    "fatal": True,
                    "outdir": str(outdir / inp.conversation_id),
                }
                report = None
            progress.update(report)

    # One Agent per memory for the whole batch: tasks saving to the global memory share it.
    async with RunnerMemory(home) as memory, anyio.create_task_group() as group:
        for inp in inputs:
            group.start_soon(one, inp)
    ordered = [results[inp.conversation_id] for inp in inputs]
    successes = sum(1 for r in ordered if r["status"] == "success")
    summary = {
        "total": len(ordered),
        "successes": successes,
        "errors": len(ordered) - successes,
        "elapsed_s": round(time.time() - started, 3),
        "concurrency": concurrency,
        "tasks": ordered,
    }
    await anyio.to_thread.run_sync(
        write_atomic,
        outdir / "batch_summary.json",
        msgspec.json.format(msgspec.json.encode(summary), indent=2),
    )
    lines = [
        "# Batch report",
        "",
        f"{successes}/{len(ordered)} tasks succeeded in {summary['elapsed_s']} s (concurrency {concurrency}).",
        "",
        "| task | status | LLM calls | time (ms) | answer / error |",
        "|---|---|---|---|---|",
    ]
    for r in ordered:
        text = (
            (r.get("error") or r.get("answer") or "").replace("\n", " ").replace("|", "\\|")[:120]
        )
        lines.append(
            f"| {r['conversation_id']} | {r['status']} | {r.get('llm_calls', 0)} | "
            f"{r.get('duration_ms', 0)} | {text} |"
        )
    await anyio.to_thread.run_sync(
        write_atomic, outdir / "batch_report.md", ("\n".join(lines) + "\n").encode()
    )
    return summary


def is_batch(path: Path) -> bool:
    try:
        data = read_input_file(path)
    except InputError:
        return False  # loading it as a single input reports why
    return isinstance(data, dict) and "tasks" in data
