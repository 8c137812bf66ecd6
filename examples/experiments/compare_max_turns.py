"""Experiment: the same task with ``max_turns`` 1, 2 and 4.

``max_turns`` is the runner's limit on model rounds per user input. The task
needs four rounds (list the files, summarise the CSV, compute the rate,
answer), so 1 and 2 stop early as ``budget_exhausted`` and 4 finishes.

Offline (default): xai's OpenAI-wire test server plays a deterministic model
over real HTTP. Online: set LLM_MODEL (+ LLM_API_KEY, LLM_BASE_URL) and the
same inputs go to your model.

    python examples/experiments/compare_max_turns.py [OUTDIR]

Prints a Markdown table and writes it, with each run's artifacts, to OUTDIR
(default: a temporary folder, removed at the end).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

from _experiment import cell, model, read_json, run_experiment

from xai.runner import run_input, validate_input
from xai.testing import Reply, ScriptedCall

RUNNER = Path(__file__).resolve().parent.parent / "runner"  # the shipped examples/runner
TASK = "What is the overall defect rate across all lines in the CSV file?"
LIMITS = (1, 2, 4)


def scripted_model(body: Mapping[str, Any]) -> Reply:
    """Four rounds: list_files, summarize_csv, calculate_rate, then the answer."""
    messages: list[Mapping[str, Any]] = body["messages"]
    start = max(i for i, m in enumerate(messages) if m["role"] == "user")
    results = [json.loads(m["content"]) for m in messages[start:] if m["role"] == "tool"]
    if not results:
        return Reply(
            text="Let me find the CSV file.",
            tool_calls=(ScriptedCall(name="list_files", arguments={"pattern": "**/*.csv"}),),
        )
    if len(results) == 1:
        path = results[0]["files"][0]
        return Reply(
            text=f"Summarising {path}.",
            tool_calls=(ScriptedCall(name="summarize_csv", arguments={"path": path}),),
        )
    if len(results) == 2:
        summary = results[1]["summary"]
        arguments = {
            "numerator": summary["defects"]["sum"],
            "denominator": summary["inspected"]["sum"],
            "kind": "defect_rate",
        }
        return Reply(
            text="Computing the rate.",
            tool_calls=(ScriptedCall(name="calculate_rate", arguments=arguments),),
        )
    rate = results[2]
    return Reply(
        text=f"The overall defect rate is {rate['percent']}% "
        f"({rate['numerator']:g} defects in {rate['denominator']:g} inspected)."
    )


def call_label(call: Mapping[str, Any]) -> str:
    """A tool call's name, marked when it failed or never ran (the round limit came first)."""
    if call.get("success"):
        return str(call["name"])
    if str(call.get("result", "")).startswith("[not run"):
        return f"{call['name']} (not run)"
    return f"{call['name']} (error)"


async def main(outdir: Path, home: Path) -> str:
    async with AsyncExitStack() as stack:
        provider = await model(stack, scripted_model)
        rows = [
            "| max_turns | status | turn status | rounds used | tool calls | LLM calls | answer |",
            "|---|---|---|---|---|---|---|",
        ]
        for limit in LIMITS:
            inp = validate_input(
                {
                    "conversation_id": f"max-turns-{limit}",
                    "user_input": TASK,
                    "toolset": "basic_tools",
                    "tool_root": "workdir",  # relative to RUNNER, like in an input file there
                    "max_turns": limit,
                },
                RUNNER,
            )
            report = await run_input(
                inp, outdir / f"max_turns_{limit}", home=home, provider=provider
            )
            trace = await read_json(Path(report.outdir) / "trace.json")
            turn = trace["turns"][0]
            calls = ", ".join(call_label(call) for call in turn["tool_calls"])
            rows.append(
                f"| {limit} | {report.status} | {turn['status']} | {trace['tool_rounds_used']} "
                f"| {cell(calls or '-')} | {trace['llm_calls']} | {cell(report.answer)} |"
            )
    return "\n".join(rows) + "\n"


if __name__ == "__main__":
    run_experiment(main, "compare_max_turns")
