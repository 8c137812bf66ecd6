"""The contract every orchestrator keeps: ``RunOptions`` in, ``AgentResult`` out, and the
prompt they all build from a scenario (so each peer sees the same system prompt)."""

from __future__ import annotations

from typing import Any, Literal, Protocol, runtime_checkable

import msgspec

from xai.core._knowledge import Reference
from xai.core._scenario import ORCHESTRATORS, OrchestratorName, ScenarioConfig
from xai.messages import ToolResult, Usage

__all__ = [
    "ORCHESTRATORS",
    "REPAIR_PROMPT",
    "AgentResult",
    "Orchestrator",
    "OrchestratorName",
    "RunOptions",
    "system_prompt",
]

REPAIR_PROMPT = (
    "That answer was not valid JSON for the schema ({error}). "
    "Reply again with the JSON object only."
)
"""What every orchestrator says, once, when the answer does not parse."""


class RunOptions(msgspec.Struct, frozen=True, kw_only=True):
    document_ids: list[str] | None = None
    """Restrict retrieval to these documents (default: all of the scenario's)."""
    knowledge_dir: str | None = None
    """Where the knowledge base lives (default: ``$XAI_HOME/knowledge``)."""
    schema_format: bool = True
    """Ask for a schema-constrained ``response_format`` (falls back to instructions if refused)."""
    repair: bool = True
    """Show the model its parse error once and let it answer again."""
    timeout: float = 300.0
    orchestrator: OrchestratorName | None = None
    """Run with this orchestrator instead of the scenario's ``orchestrator``."""


class AgentResult(msgspec.Struct, kw_only=True):
    answer: str = ""
    structured_output: dict[str, Any] | None = None
    references: list[Reference] = msgspec.field(default_factory=list)
    tool_calls: list[ToolResult] = msgspec.field(default_factory=list)
    raw_output: str = ""
    model_name: str = ""
    latency_ms: float = 0.0
    status: Literal["success", "failed"] = "success"
    error: str | None = None
    usage: Usage = msgspec.field(default_factory=Usage)
    """Tokens and model calls of the whole run, as the orchestrator reported them."""
    orchestrator: str = ""
    """Which orchestrator produced this result: one of ``ORCHESTRATORS``, or the class name of
    an ``orchestrator=`` object that left it empty."""


@runtime_checkable
class Orchestrator(Protocol):
    """Anything that turns a scenario and an input into an ``AgentResult`` (never raising)."""

    async def run(
        self, scenario: ScenarioConfig, user_input: str, options: RunOptions
    ) -> AgentResult: ...


def system_prompt(scenario: ScenarioConfig, references: list[Reference], output: Any) -> str:
    """The system prompt of a run: instructions, the numbered knowledge, the output schema."""
    parts = [scenario.instructions.strip()]
    if references:
        listing = "\n".join(
            f"[{n}] ({r.source_file}) {r.content}" for n, r in enumerate(references, start=1)
        )
        parts.append("Use this knowledge where it helps and cite it as [n]:\n" + listing)
    elif scenario.rag.enabled:
        parts.append("No knowledge was found for this question: say so if it matters.")
    schema = msgspec.json.encode(msgspec.json.schema(output)).decode()
    parts.append(
        f"Answer with one JSON object matching this JSON schema, and nothing else:\n{schema}"
    )
    return "\n\n".join(parts)
