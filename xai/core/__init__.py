"""The one-shot facades: ``ask_sync`` / ``ask`` (one prompt, one answer, an Agent's memory
if you name one), and ``run_agent(scenario, input) -> AgentResult`` with RAG, tools and
structured output, built on the Session/Query core."""

from xai.core._ask import agent_directory, ask, ask_sync
from xai.core._knowledge import MAX_DOCUMENT_BYTES, KnowledgeBase, Reference, chunk_text
from xai.core._outputs import (
    OUTPUT_TYPES,
    DocumentReviewReport,
    GeneralAnswer,
    OutputType,
    QualityReport,
    RiskAuditReport,
    TicketResponse,
)
from xai.core._run import (
    AgentResult,
    LightweightOrchestrator,
    Orchestrator,
    RunOptions,
    arun_agent,
    run_agent,
)
from xai.core._scenario import (
    MAX_SCENARIO_BYTES,
    ModelOverrides,
    RagSettings,
    ScenarioConfig,
    ScenarioError,
    load_scenario,
)
from xai.core._tools import BUILTIN_TOOLS, demo_records

__all__ = [
    "BUILTIN_TOOLS",
    "MAX_DOCUMENT_BYTES",
    "MAX_SCENARIO_BYTES",
    "OUTPUT_TYPES",
    "AgentResult",
    "DocumentReviewReport",
    "GeneralAnswer",
    "KnowledgeBase",
    "LightweightOrchestrator",
    "ModelOverrides",
    "Orchestrator",
    "OutputType",
    "QualityReport",
    "RagSettings",
    "Reference",
    "RiskAuditReport",
    "RunOptions",
    "ScenarioConfig",
    "ScenarioError",
    "TicketResponse",
    "agent_directory",
    "arun_agent",
    "ask",
    "ask_sync",
    "chunk_text",
    "demo_records",
    "load_scenario",
    "run_agent",
]
