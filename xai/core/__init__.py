"""The one-shot facades: ``ask_sync`` / ``ask`` (one prompt, one answer, an Agent's memory
if you name one), and ``run_agent(scenario, input) -> AgentResult`` with RAG, tools and
structured output, built on the Session/Query core."""

from xai.core._adapters import create_orchestrator
from xai.core._adapters._dify import DifyConfig, DifyOrchestrator
from xai.core._adapters._langgraph import LangGraphOrchestrator
from xai.core._adapters._openai_agents import OpenAIAgentsOrchestrator
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
from xai.core._result import ORCHESTRATORS, AgentResult, Orchestrator, OrchestratorName, RunOptions
from xai.core._run import LightweightOrchestrator, arun_agent, run_agent
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
    "ORCHESTRATORS",
    "OUTPUT_TYPES",
    "AgentResult",
    "DifyConfig",
    "DifyOrchestrator",
    "DocumentReviewReport",
    "GeneralAnswer",
    "KnowledgeBase",
    "LangGraphOrchestrator",
    "LightweightOrchestrator",
    "ModelOverrides",
    "OpenAIAgentsOrchestrator",
    "Orchestrator",
    "OrchestratorName",
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
    "create_orchestrator",
    "demo_records",
    "load_scenario",
    "run_agent",
]
