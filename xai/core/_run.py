"""``run_agent(scenario_config, user_input, options) -> AgentResult``, on the Session/Query core.

The default ``LightweightOrchestrator`` reads the scenario, retrieves
knowledge when RAG is on, loads the scenario's tools, builds the system
prompt, runs one Session turn (the Query's tool loop), parses the structured
output (one repair retry), and returns an ``AgentResult``. It never raises for
a run-time failure: the result says ``failed`` and why. Other orchestrators
plug in behind the same ``Orchestrator`` protocol.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import anyio
import msgspec

from xai.config import LLMConfig, default_home
from xai.core._knowledge import KnowledgeBase
from xai.core._outputs import OUTPUT_TYPES, answer_text
from xai.core._result import (
    REPAIR_PROMPT,
    AgentResult,
    Orchestrator,
    OrchestratorName,
    RunOptions,
    system_prompt,
)
from xai.core._scenario import ScenarioConfig, load_scenario
from xai.core._tools import BUILTIN_TOOLS
from xai.events import ToolCallFinished
from xai.exceptions import UsageError
from xai.logs import get_logger
from xai.messages import TurnStatus
from xai.providers import OpenAIProvider, Provider
from xai.query import QueryConfig
from xai.session import Session, SessionConfig, SystemPrompt
from xai.structured import fallback_formats, format_refused, parse, response_format
from xai.tools import MCPServer, ToolSet

__all__ = [
    "AgentResult",
    "LightweightOrchestrator",
    "Orchestrator",
    "RunOptions",
    "arun_agent",
    "run_agent",
]

_log = get_logger(__name__)


class LightweightOrchestrator:
    """The default orchestrator: xai's own Session and Query, Chroma for knowledge."""

    def __init__(self, provider: Provider, knowledge: KnowledgeBase | None = None) -> None:
        self.provider = provider
        self.knowledge = knowledge

    async def run(
        self, scenario: ScenarioConfig, user_input: str, options: RunOptions
    ) -> AgentResult:
        started = time.perf_counter()
        result = AgentResult(
            model_name=scenario.model.model or self.provider.model, orchestrator="lightweight"
        )
        try:
            with anyio.fail_after(options.timeout):
                await self._run(scenario, user_input, options, result)
        except Exception as exc:  # the contract: a failed result, never an exception
            _log.warning("run_agent.failed", scenario=scenario.scenario_id, error=str(exc))
            result.status = "failed"
            result.error = f"{type(exc).__name__}: {exc}"
        result.latency_ms = round((time.perf_counter() - started) * 1000, 1)
        return result

    async def _run(
        self, scenario: ScenarioConfig, user_input: str, options: RunOptions, result: AgentResult
    ) -> None:
        if scenario.rag.enabled:
            if self.knowledge is None:
                raise UsageError("the scenario uses RAG but no knowledge base was given")
            result.references = await self.knowledge.retrieve(
                user_input,
                scenario.scenario_id,
                document_ids=options.document_ids,
                top_k=scenario.rag.top_k,
                min_score=scenario.rag.min_score,
            )
        output = OUTPUT_TYPES[scenario.output_type]
        tools = ToolSet(
            [BUILTIN_TOOLS[name] for name in scenario.tools],
            mcp=[MCPServer(config) for config in scenario.mcp_servers],
        )
        query = QueryConfig(
            max_rounds=scenario.max_rounds,
            max_tokens=scenario.model.max_tokens,
            temperature=scenario.model.temperature,
            response_format=response_format(output) if options.schema_format else None,
        )
        system = SystemPrompt(instructions=system_prompt(scenario, result.references, output))
        _, status, error = await self._converse(
            tools, query, system, user_input, output, options, result
        )
        if status is not TurnStatus.COMPLETED:
            result.status = "failed"
            result.error = error or f"the model's turn ended: {status.value}"

    async def _converse(
        self,
        tools: ToolSet,
        query: QueryConfig,
        system: SystemPrompt,
        user_input: str,
        output: Any,
        options: RunOptions,
        result: AgentResult,
    ) -> tuple[str, TurnStatus, str | None]:
        config = SessionConfig(query=query, extract_memory=False)
        async with Session(self.provider, tools=tools, config=config, system=system) as session:
            events = session.subscribe(buffer=100_000)
            outcome = await session.send(user_input)
            if (
                outcome.status is TurnStatus.ERROR
                and outcome.error is not None
                and query.response_format is not None
                and format_refused(outcome.error)
            ):
                # The endpoint refused the format: json_schema -> json_object -> instructions
                # alone (the system prompt carries the schema either way).
                _log.warning("run_agent.schema_format_refused", error=outcome.error.message)
                await session.close()
                _, fallback = fallback_formats(query.response_format)[:2]
                return await self._converse(
                    tools,
                    msgspec.structs.replace(query, response_format=fallback),
                    system,
                    user_input,
                    output,
                    options,
                    result,
                )
            result.raw_output = outcome.text
            if outcome.status is TurnStatus.COMPLETED:
                parsed = parse(outcome.text, output)
                if not parsed.ok and options.repair:
                    retry = await session.send(
                        REPAIR_PROMPT.format(error=parsed.error), origin="system"
                    )
                    if retry.status is TurnStatus.COMPLETED:
                        result.raw_output = retry.text
                        parsed = parse(retry.text, output)
                if parsed.ok:
                    result.structured_output = msgspec.to_builtins(parsed.value)
                    result.answer = answer_text(parsed.value)
                else:
                    result.answer = outcome.text
                    result.error = f"structured output: {parsed.error}"
            result.usage = result.usage + session.usage
        while (event := events.get_nowait()) is not None:
            if isinstance(event.event, ToolCallFinished):
                result.tool_calls.append(event.event.result)
        error = outcome.error.message if outcome.error is not None else None
        return outcome.text, outcome.status, error


async def arun_agent(
    scenario_config: ScenarioConfig | Mapping[str, Any] | str | Path,
    user_input: str,
    options: RunOptions | Mapping[str, Any] | None = None,
    *,
    orchestrator: Orchestrator | None = None,
    provider: Provider | None = None,
    knowledge: KnowledgeBase | None = None,
    llm: LLMConfig | None = None,
) -> AgentResult:
    """``run_agent`` for code that already runs an event loop.

    The orchestrator is ``options.orchestrator``, else the scenario's ``orchestrator``
    (``lightweight`` by default); an ``orchestrator`` object given here wins over both.
    ``provider`` is the model of the ``lightweight`` orchestrator; the peers build their own
    client from ``llm`` (default: the ``LLM_*`` environment). An invalid scenario raises
    ``ScenarioError`` (a usage error naming the field); everything that fails at run time,
    a peer's missing extra included, comes back as ``failed``.
    """
    scenario = load_scenario(scenario_config)
    opts = (
        options
        if isinstance(options, RunOptions)
        else msgspec.convert(dict(options or {}), RunOptions)
    )
    if orchestrator is not None:
        result = await orchestrator.run(scenario, user_input, opts)
        result.orchestrator = result.orchestrator or type(orchestrator).__name__
        return result
    name: OrchestratorName = opts.orchestrator or scenario.orchestrator
    owned: OpenAIProvider | None = None
    try:
        if name == "lightweight" and provider is None:
            config = LLMConfig.from_env()
            if scenario.model.model:
                config = msgspec.structs.replace(config, model=scenario.model.model)
            owned = provider = OpenAIProvider(config)
    except UsageError as exc:
        return AgentResult(status="failed", error=f"{type(exc).__name__}: {exc}", orchestrator=name)
    owned_knowledge: KnowledgeBase | None = None
    try:
        if knowledge is None and scenario.rag.enabled:
            directory = (
                Path(opts.knowledge_dir) if opts.knowledge_dir else default_home() / "knowledge"
            )
            knowledge = owned_knowledge = await anyio.to_thread.run_sync(KnowledgeBase, directory)
        if name == "lightweight":
            assert provider is not None
            runner: Orchestrator = LightweightOrchestrator(provider, knowledge)
        else:
            from xai.core._adapters import create_orchestrator

            runner = create_orchestrator(name, llm=llm, knowledge=knowledge)
        return await runner.run(scenario, user_input, opts)
    finally:
        if owned is not None:
            await owned.aclose()
        if owned_knowledge is not None:
            await owned_knowledge.aclose()


def run_agent(
    scenario_config: ScenarioConfig | Mapping[str, Any] | str | Path,
    user_input: str,
    options: RunOptions | Mapping[str, Any] | None = None,
    **kwargs: Any,
) -> AgentResult:
    """Run a scenario once, for code without an event loop (see ``arun_agent``)."""

    async def main() -> AgentResult:
        return await arun_agent(scenario_config, user_input, options, **kwargs)

    return anyio.run(main)
