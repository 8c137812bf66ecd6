"""``orchestrator: dify``: a Dify app runs the loop, over its Service API (``xai-actors[dify]``).

Dify is a server: its app holds the model, the prompt, the tools and its own knowledge, and
the Service API takes a query. What maps to what: the scenario's system prompt (xai's
knowledge and the output schema included) → the app's prompt variable ``instructions``
(``inputs.instructions``; the app's prompt must use ``{{instructions}}``); the input →
``query``; the loop, the model and the tools → the app (its tools must be configured in it:
Dify calls them, not xai); each ``agent_thought`` that called tools → one ``ToolResult`` per
tool (``tool_input`` as the arguments, ``observation`` as the result); ``message_end`` →
``usage`` and ``retriever_resources`` (added to xai's ``references``); an ``error`` event or
a 4xx/5xx answer → a failed result with Dify's code and message; the structured output →
xai's parse with one repair, sent in the same conversation (``conversation_id``).

Settings: ``DIFY_BASE_URL`` (e.g. ``https://api.dify.ai/v1``) and ``DIFY_API_KEY`` (the app's
key, registered with the redaction net and never shown in ``repr``).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

import msgspec

from xai._redact import register_secret
from xai.core._adapters._common import conclude, guarded, prepare, require
from xai.core._knowledge import KnowledgeBase, Reference
from xai.core._result import AgentResult, RunOptions
from xai.core._scenario import ScenarioConfig
from xai.exceptions import (
    AuthenticationError,
    BadRequestError,
    ConfigurationError,
    ProviderError,
    RateLimitError,
    ServerError,
    StreamError,
    UsageError,
)
from xai.messages import ToolResult, Usage
from xai.tools import Tool

__all__ = ["DifyConfig", "DifyOrchestrator"]

EXTRA = "dify"


class DifyConfig(msgspec.Struct, frozen=True, kw_only=True):
    """Where the Dify app is and its key (``DIFY_BASE_URL``, ``DIFY_API_KEY``)."""

    base_url: str
    """The Service API's base, ending in ``/v1``."""
    api_key: str
    user: str = "xai"
    """The end-user identity Dify scopes conversations by."""
    timeout: float = 60.0
    """Seconds to wait for the first byte and between bytes of the stream."""
    instructions_variable: str = "instructions"
    """The app's prompt variable that receives the system prompt."""

    def __post_init__(self) -> None:
        register_secret(self.api_key)

    def __repr__(self) -> str:
        return f"DifyConfig(base_url={self.base_url!r}, api_key='***', user={self.user!r})"

    __str__ = __repr__

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None, **overrides: Any) -> DifyConfig:
        env = os.environ if env is None else env
        values: dict[str, Any] = {
            "base_url": env.get("DIFY_BASE_URL", "").strip(),
            "api_key": env.get("DIFY_API_KEY", "").strip(),
        }
        values.update(overrides)
        for field, variable in (("base_url", "DIFY_BASE_URL"), ("api_key", "DIFY_API_KEY")):
            if not values[field]:
                raise ConfigurationError(
                    f"{variable} is not set: the dify orchestrator needs the app's "
                    "Service API base URL and key",
                    variable=variable,
                )
        return cls(**values)


def _failure(status: int, code: str, message: str) -> ProviderError:
    text = f"Dify {status} {code}: {message}"
    if status in (401, 403):
        return AuthenticationError(text, status_code=status, provider="dify")
    if status == 429 or code == "provider_quota_exceeded":
        return RateLimitError(text, status_code=status, provider="dify")
    if status >= 500:
        return ServerError(text, status_code=status, provider="dify")
    return BadRequestError(text, status_code=status, provider="dify")


def _by_tool(text: str, names: list[str]) -> dict[str, Any]:
    """Dify's ``tool_input`` / ``observation``: JSON keyed by tool name, else one text."""
    try:
        value = msgspec.json.decode(text) if text else {}
    except msgspec.DecodeError:
        value = text
    if isinstance(value, dict) and all(name in value for name in names):
        return value
    return dict.fromkeys(names, value)


def _tool_results(thought: Mapping[str, Any]) -> list[ToolResult]:
    names = [n for n in str(thought.get("tool") or "").split(";") if n]
    inputs = _by_tool(str(thought.get("tool_input") or ""), names)
    observed = _by_tool(str(thought.get("observation") or ""), names)
    records = []
    for name in names:
        arguments = inputs[name]
        content = (
            observed[name]
            if isinstance(observed[name], str)
            else msgspec.json.encode(observed[name]).decode()
        )
        failed = content.startswith(("Error:", "tool invoke error"))
        try:
            value = msgspec.json.decode(content)
        except msgspec.DecodeError:
            value = content
        records.append(
            ToolResult(
                call_id=f"{thought.get('id', '')}:{name}",
                tool_name=name,
                success=not failed,
                arguments=arguments if isinstance(arguments, (dict, str)) else str(arguments),
                result=None if failed else value,
                error=content.removeprefix("Error: ") if failed else None,
                content=content,
            )
        )
    return records


class _Answer(msgspec.Struct, kw_only=True):
    text: str = ""
    conversation_id: str = ""
    usage: Usage = msgspec.field(default_factory=Usage)
    resources: list[Reference] = msgspec.field(default_factory=list)
    tools: list[ToolResult] = msgspec.field(default_factory=list)


class DifyOrchestrator:
    """Runs a scenario on a Dify app through its Service API (streaming chat messages)."""

    def __init__(
        self,
        config: DifyConfig | None = None,
        *,
        knowledge: KnowledgeBase | None = None,
        tools: Sequence[Tool] = (),
    ) -> None:
        self.config = config
        """The app (default: ``DIFY_BASE_URL`` / ``DIFY_API_KEY``, read when a run starts)."""
        self.knowledge = knowledge
        self.tools = tuple(tools)
        """Tools beside the scenario's built-ins: the app must have them too (it runs them)."""

    async def run(
        self, scenario: ScenarioConfig, user_input: str, options: RunOptions
    ) -> AgentResult:
        result = AgentResult(model_name=scenario.model.model or "dify", orchestrator=EXTRA)

        async def body() -> None:
            httpx = require("httpx", EXTRA)
            config = self.config or DifyConfig.from_env()
            if scenario.mcp_servers:
                raise UsageError(
                    "a Dify app cannot use the scenario's MCP servers: add them to the app"
                )
            prepared = await prepare(
                scenario, user_input, options, self.knowledge, result, self.tools
            )
            inputs = {config.instructions_variable: prepared.system}
            async with httpx.AsyncClient(
                base_url=config.base_url.rstrip("/") + "/",
                headers={"Authorization": f"Bearer {config.api_key}"},
                timeout=config.timeout,
            ) as client:
                wanted = [*scenario.tools, *(t.name for t in self.tools)]
                if wanted:
                    await self._check_tools(client, wanted)

                async def send(query: str, conversation_id: str) -> _Answer:
                    answer = await self._send(client, config, inputs, query, conversation_id)
                    result.usage = result.usage + answer.usage
                    result.tool_calls.extend(answer.tools)
                    result.references.extend(
                        r for r in answer.resources if r not in result.references
                    )
                    return answer

                first = await send(user_input, "")

                async def repair(message: str) -> str | None:
                    return (await send(message, first.conversation_id)).text

                await conclude(result, prepared.output, options, first.text, repair)

        return await guarded(result, scenario, options, body)

    async def _check_tools(self, client: Any, names: list[str]) -> None:
        """The app runs the tools, so it must have the scenario's: ``GET /meta`` lists them."""
        response = await client.get("meta")
        if response.status_code != 200:
            raise _failure(response.status_code, "", response.text[:200])
        icons = response.json().get("tool_icons") or {}
        missing = [name for name in names if name not in icons]
        if missing:
            raise ConfigurationError(
                f"the Dify app has no tool named {', '.join(map(repr, missing))}: "
                "add the scenario's tools to the app (Dify runs them, not xai)"
            )

    async def _send(
        self,
        client: Any,
        config: DifyConfig,
        inputs: dict[str, str],
        query: str,
        conversation_id: str,
    ) -> _Answer:
        request = {
            "inputs": inputs,
            "query": query,
            "response_mode": "streaming",
            "conversation_id": conversation_id,
            "user": config.user,
            "auto_generate_name": False,
        }
        answer = _Answer(conversation_id=conversation_id)
        thoughts: dict[str, dict[str, Any]] = {}
        failure: ProviderError | None = None
        ended = False
        async with client.stream("POST", "chat-messages", json=request) as response:
            if response.status_code != 200:
                raw = await response.aread()
                try:
                    error = msgspec.json.decode(raw)
                except msgspec.DecodeError:
                    error = {}
                if not isinstance(error, dict):
                    error = {}
                raise _failure(
                    response.status_code,
                    str(error.get("code", "")),
                    str(error.get("message", raw[:200].decode(errors="replace"))),
                )
            # Read to the end even after ``message_end`` or ``error`` (Dify ends the stream
            # there): leaving httpx's line iterator early leaves its inner generators open.
            async for line in response.aiter_lines():
                event = _event(line)
                if event is None or failure is not None or ended:
                    continue
                kind = event.get("event")
                answer.conversation_id = event.get("conversation_id") or answer.conversation_id
                if kind in ("message", "agent_message"):
                    answer.text += str(event.get("answer", ""))
                elif kind == "message_replace":
                    answer.text = str(event.get("answer", ""))
                elif kind == "agent_thought":
                    thoughts[str(event.get("id", len(thoughts)))] = event
                elif kind == "error":
                    failure = _failure(
                        int(event.get("status") or 500),
                        str(event.get("code", "")),
                        str(event.get("message", "")),
                    )
                elif kind == "message_end":
                    metadata = event.get("metadata") or {}
                    answer.usage = _usage(metadata.get("usage") or {})
                    answer.resources = [
                        _reference(r) for r in metadata.get("retriever_resources") or []
                    ]
                    ended = True
        if failure is not None:
            raise failure
        if not ended:
            raise StreamError("the Dify stream ended without message_end", provider="dify")
        for thought in sorted(thoughts.values(), key=lambda t: int(t.get("position") or 0)):
            answer.tools.extend(_tool_results(thought))
        return answer


def _event(line: str) -> dict[str, Any] | None:
    """One ``data:`` line of the stream as an event (``ping`` and blank lines: ``None``)."""
    if not line.startswith("data:"):
        return None
    try:
        event = msgspec.json.decode(line[5:].strip())
    except msgspec.DecodeError:
        raise StreamError(
            f"Dify sent an event that is not JSON: {line[:80]!r}", provider="dify"
        ) from None
    return event if isinstance(event, dict) else None


def _usage(usage: Mapping[str, Any]) -> Usage:
    return Usage(
        prompt_tokens=int(usage.get("prompt_tokens") or 0),
        completion_tokens=int(usage.get("completion_tokens") or 0),
        requests=1,
    )


def _reference(resource: Mapping[str, Any]) -> Reference:
    return Reference(
        content=str(resource.get("content", "")),
        source_file=str(resource.get("document_name", "")),
        document_id=str(resource.get("document_id", "")),
        chunk_id=str(resource.get("segment_id", "")),
        score=float(resource.get("score") or 0.0),
    )
