"""One scenario on all four orchestrators behind ``run_agent``, side by side.

The same scripted model answers each: it asks for ``calculate_rate``, then writes a first
answer that is not JSON, then the JSON after xai shows it the parse error. ``lightweight``,
``openai-agents`` and ``langgraph`` talk to xai's OpenAI-wire test server over real HTTP;
``dify`` talks to the Dify Service API double (a Dify app whose model is the same script).
Needs ``xai-actors[openai-agents,langgraph,dify]``; runs offline.

    python examples/orchestrators.py
"""

from __future__ import annotations

import json

import anyio

from xai.core import BUILTIN_TOOLS, ORCHESTRATORS, RunOptions, arun_agent
from xai.testing import DifyServer, OpenAIWireServer, Reply, ScriptedCall

SCENARIO = {
    "scenario_id": "quality",
    "instructions": "You review inspection figures. Compute rates with calculate_rate.",
    "tools": ["calculate_rate"],
    "model": {"model": "xai-scripted"},
}
QUESTION = "Line B inspected 950 parts and found 31 defects. What is its defect rate?"
FINAL = {"answer": "Line B's defect rate is 3.26%.", "key_points": ["31 defects in 950 parts"]}


def script() -> list[Reply]:
    call = ScriptedCall(
        name="calculate_rate",
        arguments={"numerator": 31, "denominator": 950, "kind": "defect_rate"},
    )
    return [
        Reply(tool_calls=(call,)),
        Reply(text="The defect rate is about 3.3%."),  # not JSON: repaired once
        Reply(text=json.dumps(FINAL)),
    ]


async def main() -> None:
    async with (
        OpenAIWireServer() as wire,
        DifyServer(tools=BUILTIN_TOOLS.values()) as dify,
        wire.provider() as provider,  # the lightweight orchestrator's model
    ):
        print("| orchestrator | status | answer | tool calls | model requests | tokens |")
        print("|---|---|---|---|---|---|")
        for name in ORCHESTRATORS:
            if name == "dify":
                from xai.core import DifyConfig, DifyOrchestrator

                dify.push(*script())
                config = DifyConfig(base_url=dify.base_url, api_key=dify.api_key)
                result = await arun_agent(SCENARIO, QUESTION, orchestrator=DifyOrchestrator(config))
            else:
                wire.push(*script())
                result = await arun_agent(
                    SCENARIO,
                    QUESTION,
                    RunOptions(orchestrator=name),
                    provider=provider,  # used by lightweight
                    llm=wire.llm_config(),  # used by the peers
                )
            calls = ", ".join(f"{c.tool_name} -> {c.result['percent']}%" for c in result.tool_calls)
            print(
                f"| {result.orchestrator} | {result.status} | {result.answer} | {calls} "
                f"| {result.usage.requests} | {result.usage.total_tokens} |"
            )


if __name__ == "__main__":
    anyio.run(main)
