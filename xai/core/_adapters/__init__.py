"""The peer orchestrators behind ``run_agent``: each in its own module, each importing its
peer's library only when it runs (the library comes with the extra of the same name)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from xai.config import LLMConfig
from xai.core._knowledge import KnowledgeBase
from xai.core._result import OrchestratorName
from xai.exceptions import UsageError
from xai.tools import Tool

if TYPE_CHECKING:
    from xai.core._result import Orchestrator

__all__ = ["create_orchestrator"]


def create_orchestrator(
    name: OrchestratorName,
    *,
    llm: LLMConfig | None = None,
    knowledge: KnowledgeBase | None = None,
    tools: Sequence[Tool] = (),
) -> Orchestrator:
    """The peer orchestrator ``name``, configured by the environment unless ``llm`` is given
    (``lightweight`` runs on a provider: see ``arun_agent``). ``tools`` join the scenario's."""
    if name == "openai-agents":
        from xai.core._adapters._openai_agents import OpenAIAgentsOrchestrator

        return OpenAIAgentsOrchestrator(llm, knowledge, tools=tools)
    if name == "langgraph":
        from xai.core._adapters._langgraph import LangGraphOrchestrator

        return LangGraphOrchestrator(llm, knowledge, tools=tools)
    if name == "dify":
        from xai.core._adapters._dify import DifyOrchestrator

        return DifyOrchestrator(knowledge=knowledge, tools=tools)
    raise UsageError(f"{name!r} is not a peer orchestrator (the lightweight one needs a provider)")
