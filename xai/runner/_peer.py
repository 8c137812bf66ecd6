"""A runtime input on a peer orchestrator (``orchestrator:`` in the input file).

Each user input is one ``run_agent`` call on the peer (OpenAI Agents SDK, LangGraph, Dify)
with the input's template and system prompt as instructions, its ``max_turns`` as the round
limit and the runner's tools, so one experiment can compare orchestrators on the same cases.
The artifacts are the runner's (``messages.json``, ``trace.json``, ``final_answer.md``,
``runtime_log.jsonl``), each recording the orchestrator. A peer carries no history from one
input to the next (each call is a new conversation), keeps no checkpoint and has no memory:
the Session's features stay with ``lightweight``, and the input's validation says so.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import msgspec

from xai._files import write_atomic
from xai.core import AgentResult, RunOptions, ScenarioConfig, create_orchestrator
from xai.messages import Usage
from xai.runner._basic_tools import basic_tools
from xai.runner._input import RunInput
from xai.runner._report import RunReport, append_line

__all__ = ["run_with_peer"]


def _turn(number: int, result: AgentResult) -> dict[str, Any]:
    return {
        "turn": number,
        "status": result.status,
        "answer": result.answer,
        "error": result.error,
        "tool_calls": [
            {
                "tool_name": c.tool_name,
                "success": c.success,
                "arguments": c.arguments,
                "error": c.error,
            }
            for c in result.tool_calls
        ],
        "usage": result.usage,
        "latency_ms": result.latency_ms,
        "model_name": result.model_name,
    }


async def run_with_peer(
    inp: RunInput, outdir: Path, *, progress: Callable[[str], None] = lambda _: None
) -> RunReport:
    started = time.time()
    await anyio.Path(outdir).mkdir(parents=True, exist_ok=True)
    extra = f"\n\n{inp.system_prompt.strip()}" if inp.system_prompt else ""
    instructions = inp.prompt_templates[inp.prompt_template] + extra
    scenario = ScenarioConfig(
        scenario_id="runner",
        instructions=instructions,
        max_rounds=min(inp.max_turns, 50),
        mcp_servers=inp.mcp_servers,
    )
    tools = basic_tools(inp.tool_root) if inp.toolset == "basic_tools" else []
    orchestrator = create_orchestrator(inp.orchestrator, tools=tools)
    messages: list[dict[str, Any]] = [{"role": "system", "content": instructions}]
    turns: list[dict[str, Any]] = []
    usage = Usage()
    last: AgentResult | None = None
    for number, text in enumerate(inp.user_inputs, start=1):
        progress(f"turn {number} on {inp.orchestrator}")
        last = await orchestrator.run(scenario, text, RunOptions())
        usage = usage + last.usage
        turns.append(_turn(number, last))
        messages.append({"role": "user", "content": text})
        if last.raw_output:
            messages.append({"role": "assistant", "content": last.raw_output})
        if last.status == "failed":
            break
    assert last is not None  # validation: at least one input
    ok = last.status == "success" and len(turns) == len(inp.user_inputs)
    trace: dict[str, Any] = {
        "conversation_id": inp.conversation_id,
        "status": "success" if ok else "failed",
        "error": last.error if not ok else None,
        "execution_mode": inp.execution_mode,
        "orchestrator": inp.orchestrator,
        "prompt_mode": inp.prompt_mode,
        "template_used": inp.prompt_template,
        "llm_calls": usage.requests,
        "usage": usage,
        "turns": turns,
        "multi_turn": {"inputs": len(inp.user_inputs), "processed": len(turns)},
        "started_at": started,
        "duration_ms": round((time.time() - started) * 1000, 1),
    }
    for name, data in (
        ("messages.json", msgspec.json.format(msgspec.json.encode(messages), indent=2)),
        ("trace.json", msgspec.json.format(msgspec.json.encode(trace), indent=2)),
        ("final_answer.md", (last.answer.strip() + "\n").encode()),
    ):
        await anyio.to_thread.run_sync(write_atomic, outdir / name, data)
    report = RunReport(
        conversation_id=inp.conversation_id,
        status=str(trace["status"]),
        outdir=str(outdir),
        answer=last.answer,
        error=trace["error"],
        llm_calls=usage.requests,
        duration_ms=float(trace["duration_ms"]),
        orchestrator=inp.orchestrator,
    )
    await anyio.to_thread.run_sync(
        append_line,
        outdir / "runtime_log.jsonl",
        {**msgspec.to_builtins(report), "at": time.time()},
    )
    return report
