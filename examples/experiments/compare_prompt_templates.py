"""Experiment: one question under each of the four shipped prompt templates.

Runs a single input with ``prompt_mode: "compare"``: the runner answers it once
per template (general_tool_agent, file_expert, calculation_expert,
conversion_expert), each in a Session of its own, and records every answer in
``trace.json`` → ``compare`` and every conversation in ``compare/NAME/messages.json``.

Offline (default): xai's OpenAI-wire test server plays a deterministic model
that follows whichever template it is given (the file expert reads the file,
the calculation expert shows its expression, ...). Online: set LLM_MODEL
(+ LLM_API_KEY, LLM_BASE_URL) and the same input goes to your model.

    python examples/experiments/compare_prompt_templates.py [OUTDIR]

Prints a Markdown table and writes it, with the run's artifacts, to OUTDIR
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
QUESTION = "What is the defect rate of line B in data/qc.csv?"


def scripted_model(body: Mapping[str, Any]) -> Reply:
    """Plays a model that does what its system prompt (the template) asks."""
    messages: list[Mapping[str, Any]] = body["messages"]
    system = str(messages[0].get("content") or "")
    results = [json.loads(m["content"]) for m in messages if m["role"] == "tool"]
    if "file expert" in system:
        if not results:
            return Reply(
                text="Reading the file first.",
                tool_calls=(ScriptedCall(name="read_file", arguments={"path": "data/qc.csv"}),),
            )
        lines = results[0]["content"].splitlines()
        number, row = next((i, r) for i, r in enumerate(lines, start=1) if r.startswith("B,"))
        _, inspected, defects = row.split(",")
        return Reply(
            text=f"data/qc.csv line {number} (`{row}`): {defects} defects in {inspected} "
            f"inspected, about {int(defects) / int(inspected):.1%}."
        )
    if "calculation expert" in system:
        if not results:
            return Reply(
                tool_calls=(ScriptedCall(name="calculate", arguments={"expression": "31/950*100"}),)
            )
        value = results[0]["value"]
        return Reply(text=f"Evaluated `31 / 950 * 100` = {value:.4f}, i.e. {value:.2f} % (2 dp).")
    if "conversion expert" in system:
        if not results:
            arguments = {"source_format": "csv", "target_format": "json", "path": "data/qc.csv"}
            return Reply(tool_calls=(ScriptedCall(name="convert", arguments=arguments),))
        row = next(r for r in json.loads(results[0]["content"]) if r["line"] == "B")
        return Reply(text=f"Line B as JSON: `{json.dumps(row)}` (rate not computed).")
    if not results:
        return Reply(
            tool_calls=(
                ScriptedCall(
                    name="calculate_rate",
                    arguments={"numerator": 31, "denominator": 950, "kind": "defect_rate"},
                ),
            )
        )
    return Reply(text=f"Line B's defect rate is {results[0]['percent']}% (used calculate_rate).")


async def main(outdir: Path, home: Path) -> str:
    async with AsyncExitStack() as stack:
        provider = await model(stack, scripted_model)
        inp = validate_input(
            {
                "conversation_id": "compare-templates",
                "user_input": QUESTION,
                "toolset": "basic_tools",
                "tool_root": "workdir",  # relative to RUNNER, like in an input file there
                "max_turns": 4,
                "prompt_mode": "compare",
            },
            RUNNER,
        )
        report = await run_input(inp, outdir / "templates", home=home, provider=provider)
    trace = await read_json(Path(report.outdir) / "trace.json")
    rows = [
        "| template | status | LLM calls | tool calls | answer |",
        "|---|---|---|---|---|",
    ]
    for name, result in sorted(trace["compare"].items()):
        path = Path(report.outdir) / "compare" / name / "messages.json"
        messages = await read_json(path)
        calls = [c["function"]["name"] for m in messages for c in m.get("tool_calls") or []]
        rows.append(
            f"| {name} | {result['status']} | {result['llm_calls']} "
            f"| {', '.join(calls) or '-'} | {cell(result['answer'], 100)} |"
        )
    return "\n".join(rows) + "\n"


if __name__ == "__main__":
    run_experiment(main, "compare_prompt_templates")
