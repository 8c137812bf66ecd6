"""Experiment: the same question with and without the runner's long-term memory.

1. A "learn" run with ``save_memory: "global"``: the user states the quality
   target; after the turn the Session asks the model for memory candidates and
   the runner files them under ``$XAI_HOME/runner/memory``.
2. The same question three times with ``save_memory: "none"``:
   ``use_global_memory`` false, ``use_global_memory`` true, and
   ``selected_memory_ids`` naming the learnt fact. Only the runs that load the
   memory see the target in their system prompt, and only they can answer.

Everything lives in a temporary XAI_HOME, so your own home is never touched.
Offline (default): xai's OpenAI-wire test server plays a deterministic model
(it answers the memory-extraction request too); memory embeddings are the
local MiniLM model. Online: set LLM_MODEL (+ LLM_API_KEY, LLM_BASE_URL).

    python examples/experiments/memory_on_off.py [OUTDIR]

Prints a Markdown table and writes it, with each run's artifacts, to OUTDIR
(default: a temporary folder, removed at the end).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

from _experiment import cell, model, read_json, run_experiment

from xai.memory import LongTermMemory
from xai.providers import Provider
from xai.runner import RunReport, run_input, validate_input
from xai.session import EXTRACTION_MARKER
from xai.testing import Reply

LEARN = "Please remember this: our quality target is a defect rate below 2%."
QUESTION = "Line B has a defect rate of 3.26%. Does it meet our quality target?"
REMEMBERED = "What you remember from earlier conversations"  # the system prompt's memory heading
_USER_LINE = re.compile(r"^\[(\w+)\] USER: (.*)$", re.MULTILINE)


def scripted_model(body: Mapping[str, Any]) -> Reply:
    """Extracts the target as a memory candidate; answers from the system prompt only."""
    messages: list[Mapping[str, Any]] = body["messages"]
    content = str(messages[-1].get("content") or "")
    system = str(messages[0].get("content") or "") if messages[0]["role"] == "system" else ""
    if content.startswith(EXTRACTION_MARKER):
        candidates = [
            {
                "text": "The user's quality target is a defect rate below 2%.",
                "kind": "fact",
                "confidence": 0.9,
                "evidence": [message_id],
            }
            for message_id, said in _USER_LINE.findall(content)
            if "quality target is" in said
        ]
        return Reply(text=json.dumps({"candidates": candidates}))
    if "remember" in content.lower():
        return Reply(text="Noted: the target is a defect rate below 2%.")
    if "below 2%" in system:
        return Reply(text="No: 3.26% is above your quality target of a defect rate below 2%.")
    return Reply(text="I can't tell: I don't know your quality target.")


async def run(
    name: str, fields: dict[str, Any], outdir: Path, home: Path, provider: Provider
) -> tuple[RunReport, bool]:
    """One run; also whether its system prompt carried remembered facts."""
    inp = validate_input({"conversation_id": name, "toolset": "none", **fields}, outdir)
    report = await run_input(inp, outdir / name, home=home, provider=provider)
    messages = await read_json(outdir / name / "messages.json")
    return report, REMEMBERED in messages[0]["content"]


async def main(outdir: Path, home: Path) -> str:
    async with AsyncExitStack() as stack:
        provider = await model(stack, scripted_model)

        learnt, learnt_loaded = await run(
            "learn", {"user_input": LEARN, "save_memory": "global"}, outdir, home, provider
        )
        async with LongTermMemory(home / "runner" / "memory") as memory:
            facts = memory.facts()
        fact_ids = [fact.id for fact in facts]
        variants: list[tuple[str, dict[str, Any]]] = [
            ("memory-off", {"use_global_memory": False}),
            ("memory-on", {"use_global_memory": True}),
            ("selected-ids", {"selected_memory_ids": fact_ids}),
        ]
        rows = [
            "| run | memory options | memory in prompt | LLM calls | used the memory | answer |",
            "|---|---|---|---|---|---|",
            f"| learn | save_memory=global | {'yes' if learnt_loaded else 'no'} "
            f"| {learnt.llm_calls} | - | {cell(learnt.answer)} |",
        ]
        for name, options in variants:
            report, loaded = await run(
                name, {"user_input": QUESTION, **options}, outdir, home, provider
            )
            used = "2%" in report.answer
            shown = ", ".join(f"{k}={json.dumps(v)}" for k, v in options.items())
            rows.append(
                f"| {name} | {cell(shown, 60)} | {'yes' if loaded else 'no'} "
                f"| {report.llm_calls} | {'yes' if used else 'no'} | {cell(report.answer)} |"
            )
    remembered = "; ".join(f"{fact.id}: {fact.text}" for fact in facts) or "nothing"
    return "\n".join(rows) + f"\n\nRemembered after the learn run: {remembered}\n"


if __name__ == "__main__":
    run_experiment(main, "memory_on_off")
