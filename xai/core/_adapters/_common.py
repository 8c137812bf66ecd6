"""What every peer adapter shares, so the four orchestrators keep one contract.

xai does the parts that must not differ between peers: the knowledge retrieval
(``references``), the system prompt, the tools (each call runs through xai's
``ToolSet``, so every orchestrator records the same ``ToolResult``), parsing the
structured output with one repair, the timeout and the rule that a failure is a
``failed`` result, never an exception. The peer runs the loop in between.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

import anyio
import msgspec

from xai.config import LLMConfig
from xai.core._knowledge import KnowledgeBase
from xai.core._outputs import OUTPUT_TYPES, answer_text
from xai.core._result import REPAIR_PROMPT, AgentResult, RunOptions, system_prompt
from xai.core._scenario import ScenarioConfig
from xai.core._tools import BUILTIN_TOOLS
from xai.exceptions import ConfigurationError, UsageError
from xai.logs import get_logger
from xai.messages import ErrorInfo, ToolCall, ToolSpec
from xai.structured import fallback_formats, format_refused, parse, response_format
from xai.tools import MCPServer, Tool, ToolSet

__all__ = [
    "Prepared",
    "ToolRecorder",
    "conclude",
    "guarded",
    "model_config",
    "on_asyncio",
    "prepare",
    "require",
    "with_format_fallback",
]

_log = get_logger(__name__)


def require(module: str, extra: str) -> Any:
    """Import a peer's library, or say which extra installs it."""
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError:
        raise ConfigurationError(
            f"the {extra!r} orchestrator needs {module!r}: pip install 'xai-actors[{extra}]'"
        ) from None


class ModelPeer:
    """What an orchestrator that calls the model itself holds: the endpoint, the knowledge
    base and the tools beside the scenario's built-ins."""

    def __init__(
        self,
        llm: LLMConfig | None = None,
        knowledge: KnowledgeBase | None = None,
        *,
        tools: Sequence[Tool] = (),
    ) -> None:
        self.llm = llm
        """The endpoint (default: the ``LLM_*`` environment, read when a run starts)."""
        self.knowledge = knowledge
        self.tools = tuple(tools)
        """Tools beside the scenario's built-ins (the file runner's, say)."""


def openai_client(config: LLMConfig) -> Any:
    """An ``openai.AsyncOpenAI`` client for ``config`` (endpoint, key, timeout, retries and
    extra headers): the peer's own, which the adapter opens and closes around its run."""
    import openai

    return openai.AsyncOpenAI(
        api_key=config.api_key or "not-needed",
        base_url=config.base_url,
        timeout=config.timeout,
        max_retries=config.max_retries,
        default_headers=config.extra_headers or None,
    )


def model_config(llm: LLMConfig, scenario: ScenarioConfig) -> LLMConfig:
    """The endpoint settings a peer's client gets: the scenario's model wins over ``LLM_MODEL``."""
    if scenario.model.model:
        llm = msgspec.structs.replace(llm, model=scenario.model.model)
    return llm.validated()  # type: ignore[no-any-return]


SYNTHETIC_ID = "xai-call-"
"""The prefix of a call id made up here, for a peer that does not hand its id to a tool."""


class ToolRecorder:
    """Runs a peer's tool calls through xai's ``ToolSet`` and keeps each ``ToolResult``."""

    def __init__(self, tools: ToolSet, result: AgentResult) -> None:
        self.tools = tools
        self._result = result
        self._calls = 0

    @property
    def specs(self) -> tuple[ToolSpec, ...]:
        return self.tools.specs

    async def call(self, name: str, arguments: str, call_id: str | None = None) -> str:
        """The text the model sees (an error text when the call failed: never raises)."""
        self._calls += 1
        call = ToolCall(call_id or f"{SYNTHETIC_ID}{self._calls}", name, arguments or "{}")
        record = await self.tools.call(call)
        self._result.tool_calls.append(record)
        return record.content

    def name_calls(self, calls: list[tuple[str, str, str]]) -> None:
        """Give records whose id was made up here the peer's id, from ``(id, name, content)``
        of the peer's tool messages (same name, same text: that call's answer)."""
        free = list(calls)
        for i, record in enumerate(self._result.tool_calls):
            if not record.call_id.startswith(SYNTHETIC_ID):
                continue
            match = next(
                (c for c in free if c[1] == record.tool_name and c[2] == record.content), None
            )
            if match is not None:
                free.remove(match)
                self._result.tool_calls[i] = msgspec.structs.replace(record, call_id=match[0])


@dataclass(frozen=True)
class Prepared:
    """Everything a peer needs for one run, built the same way for every peer."""

    system: str
    output: type[Any]
    tools: ToolSet
    response_format: dict[str, Any] | None
    temperature: float | None
    max_tokens: int | None
    max_rounds: int


async def prepare(
    scenario: ScenarioConfig,
    user_input: str,
    options: RunOptions,
    knowledge: KnowledgeBase | None,
    result: AgentResult,
    extra_tools: Sequence[Tool] = (),
) -> Prepared:
    if scenario.rag.enabled:
        if knowledge is None:
            raise UsageError("the scenario uses RAG but no knowledge base was given")
        result.references = await knowledge.retrieve(
            user_input,
            scenario.scenario_id,
            document_ids=options.document_ids,
            top_k=scenario.rag.top_k,
            min_score=scenario.rag.min_score,
        )
    output = OUTPUT_TYPES[scenario.output_type]
    tools = ToolSet(
        [*(BUILTIN_TOOLS[name] for name in scenario.tools), *extra_tools],
        mcp=[MCPServer(config) for config in scenario.mcp_servers],
    )
    return Prepared(
        system=system_prompt(scenario, result.references, output),
        output=output,
        tools=tools,
        response_format=response_format(output) if options.schema_format else None,
        temperature=scenario.model.temperature,
        max_tokens=scenario.model.max_tokens,
        max_rounds=scenario.max_rounds,
    )


def format_refused_by(exc: BaseException) -> bool:
    """Whether a peer's request failed because the endpoint refused its ``response_format``
    (the rule the lightweight orchestrator follows: ``xai.structured.format_refused``)."""
    import openai

    if not isinstance(exc, openai.APIStatusError):
        return False
    status = exc.status_code
    kind = "BadRequestError" if status in (400, 404, 422) else type(exc).__name__
    if status >= 500:
        kind = "ServerError"
    return format_refused(ErrorInfo(type=kind, message=str(exc), status_code=status))


async def with_format_fallback(
    first: dict[str, Any] | None, attempt: Callable[[dict[str, Any] | None], Awaitable[None]]
) -> None:
    """Run ``attempt`` with ``first``; when the endpoint refuses that format, again with the
    next one (``json_schema`` -> ``json_object`` -> the schema in the prompt alone)."""
    formats = fallback_formats(first)
    for n, fmt in enumerate(formats):
        try:
            await attempt(fmt)
            return
        except Exception as exc:
            if n == len(formats) - 1 or not format_refused_by(exc):
                raise
            _log.warning("run_agent.schema_format_refused", error=str(exc))


async def conclude(
    result: AgentResult,
    output: type[Any],
    options: RunOptions,
    text: str,
    repair: Callable[[str], Awaitable[str | None]],
) -> None:
    """Parse the answer; on failure show the model its error once (``repair`` sends it in the
    same conversation and returns the new answer, or ``None``)."""
    result.raw_output = text
    parsed = parse(text, output)
    if not parsed.ok and options.repair:
        again = await repair(REPAIR_PROMPT.format(error=parsed.error))
        if again is not None:
            result.raw_output = again
            parsed = parse(again, output)
    if parsed.ok:
        result.structured_output = msgspec.to_builtins(parsed.value)
        result.answer = answer_text(parsed.value)
    else:
        result.answer = text
        result.error = f"structured output: {parsed.error}"


async def guarded(
    result: AgentResult,
    scenario: ScenarioConfig,
    options: RunOptions,
    body: Callable[[], Awaitable[None]],
) -> AgentResult:
    """Run ``body`` within the timeout; any failure becomes ``status="failed"`` with the error."""
    started = time.perf_counter()
    try:
        with anyio.fail_after(options.timeout):
            await body()
    except Exception as exc:  # the contract: a failed result, never an exception
        _log.warning(
            "run_agent.failed",
            scenario=scenario.scenario_id,
            orchestrator=result.orchestrator,
            error=str(exc),
        )
        result.status = "failed"
        result.error = f"{type(exc).__name__}: {exc}"
    result.latency_ms = round((time.perf_counter() - started) * 1000, 1)
    return result


def _on_asyncio() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:  # no asyncio loop runs this thread: trio does
        return False
    return True


async def on_asyncio(body: Callable[[], Awaitable[None]]) -> None:
    """Run ``body`` on asyncio: right here when this loop is asyncio, else on an asyncio loop
    of its own in a worker thread. (The OpenAI Agents SDK and LangGraph create asyncio tasks
    and futures directly, so they cannot run on trio.) Cancelling the caller (its timeout)
    cancels the worker's task at once; the thread ends as that task unwinds."""
    if _on_asyncio():
        await body()
        return
    lock = threading.Lock()
    state: dict[str, Any] = {}

    async def main() -> None:
        await body()

    def worker() -> None:
        loop = asyncio.new_event_loop()
        try:
            with lock:
                if state.get("cancelled"):
                    return
                task = loop.create_task(main())
                state["cancel"] = lambda: loop.call_soon_threadsafe(task.cancel)
            loop.run_until_complete(task)
        finally:
            loop.run_until_complete(loop.shutdown_asyncgens())
            loop.close()

    try:
        await anyio.to_thread.run_sync(worker, abandon_on_cancel=True)
    except anyio.get_cancelled_exc_class():
        with lock:
            state["cancelled"] = True
            cancel = state.get("cancel")
        if cancel is not None:
            cancel()
        raise
