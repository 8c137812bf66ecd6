"""Scenario configuration: YAML or JSON, validated with errors that name the field."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, Literal, TypeAlias

import msgspec

from xai._reading import MiB, decode_json, decode_yaml, read_capped
from xai.core._outputs import OutputType
from xai.exceptions import ConfigurationError, ScenarioError
from xai.tools import MCPServerConfig

__all__ = [
    "MAX_SCENARIO_BYTES",
    "ORCHESTRATORS",
    "ModelOverrides",
    "OrchestratorName",
    "RagSettings",
    "ScenarioConfig",
    "ScenarioError",
    "load_scenario",
]

OrchestratorName: TypeAlias = Literal["lightweight", "openai-agents", "langgraph", "dify"]
"""Who runs the agent loop: xai's own Session/Query (``lightweight``), the OpenAI Agents SDK,
LangGraph, or a Dify app over its Service API."""

ORCHESTRATORS: tuple[OrchestratorName, ...] = ("lightweight", "openai-agents", "langgraph", "dify")

MAX_SCENARIO_BYTES = 1 * MiB
"""The largest scenario file ``load_scenario`` reads."""


class RagSettings(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    enabled: bool = False
    top_k: Annotated[int, msgspec.Meta(ge=1, le=50)] = 4
    min_score: float = 0.0
    """References scoring below this cosine similarity are left out."""


class ModelOverrides(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    model: str | None = None
    temperature: Annotated[float, msgspec.Meta(ge=0, le=2)] | None = None
    max_tokens: Annotated[int, msgspec.Meta(ge=1)] | None = None


class ScenarioConfig(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """One scenario: what the agent is for, what it may use, what it must return."""

    scenario_id: Annotated[str, msgspec.Meta(pattern=r"^[A-Za-z0-9_.-]{1,64}$")]
    name: str = ""
    instructions: str = "Answer the user's question helpfully and precisely."
    rag: RagSettings = RagSettings()
    tools: list[str] = msgspec.field(default_factory=list)
    mcp_servers: list[MCPServerConfig] = msgspec.field(default_factory=list)
    """MCP servers whose tools the agent may use, each ``{"transport": "stdio", "name": ...,
    "command": ..., "args": [...]}`` or ``{"transport": "http", "name": ..., "url": ...}``;
    started for the run and stopped after it."""
    output_type: OutputType = "general_answer"
    model: ModelOverrides = ModelOverrides()
    max_rounds: Annotated[int, msgspec.Meta(ge=1, le=50)] = 6
    orchestrator: OrchestratorName = "lightweight"
    """Who runs the loop: ``lightweight`` (xai's Session/Query), ``openai-agents``,
    ``langgraph`` or ``dify`` (each peer behind its extra; see docs/adapters.md)."""


def _where(exc: msgspec.ValidationError) -> str:
    text = str(exc)
    if " - at `$." in text:
        message, path = text.split(" - at `$.", 1)
        return f"{path.rstrip('`')}: {message}"
    return text


def load_scenario(source: ScenarioConfig | Mapping[str, Any] | str | Path) -> ScenarioConfig:
    """A validated scenario from an object, a mapping, or a ``.yaml`` / ``.yml`` / ``.json`` file."""
    if isinstance(source, ScenarioConfig):
        return source
    origin = "scenario"
    if isinstance(source, (str, Path)):
        path = Path(source)
        origin = str(path)
        try:
            raw = read_capped(path, MAX_SCENARIO_BYTES, what="the scenario")
            if path.suffix.lower() in (".yaml", ".yml"):
                data = decode_yaml(raw, path, what="the scenario")
            else:
                data = decode_json(raw, path, what="the scenario")
        except ConfigurationError as exc:
            raise ScenarioError(str(exc)) from None
    else:
        data = dict(source)
    if not isinstance(data, dict):
        raise ScenarioError(f"{origin}: a scenario is a mapping of fields")
    try:
        scenario = msgspec.convert(data, ScenarioConfig)
    except msgspec.ValidationError as exc:
        raise ScenarioError(f"{origin}: {_where(exc)}") from None
    from xai.core._tools import BUILTIN_TOOLS

    for i, name in enumerate(scenario.tools):
        if name not in BUILTIN_TOOLS:
            known = ", ".join(sorted(BUILTIN_TOOLS))
            raise ScenarioError(f"{origin}: tools[{i}]: unknown tool {name!r} (known: {known})")
    return scenario
