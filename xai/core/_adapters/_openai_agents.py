"""``orchestrator: openai-agents``: the OpenAI Agents SDK runs the loop (``xai-actors[openai-agents]``).

What maps to what: the scenario's system prompt → ``Agent.instructions``; the model settings →
an ``OpenAIChatCompletionsModel`` on an ``AsyncOpenAI`` client with the ``LLM_*`` base URL, key,
model and extra headers, plus ``ModelSettings`` (temperature, max tokens); each tool → a
``FunctionTool`` with xai's JSON schema (not strict: xai validates the arguments itself),
whose call runs through xai's ``ToolSet``; the output type → the SDK's native output schema
(``AgentOutputSchemaBase``, sent as ``response_format``), parsed and repaired by xai;
``max_rounds`` → ``max_turns``. Tracing is off for the run (``RunConfig``): it would
export to OpenAI's servers.
"""

from __future__ import annotations

from typing import Any

from xai.config import LLMConfig
from xai.core._adapters._common import (
    ModelPeer,
    Prepared,
    ToolRecorder,
    conclude,
    guarded,
    model_config,
    on_asyncio,
    openai_client,
    prepare,
    require,
    with_format_fallback,
)
from xai.core._result import AgentResult, RunOptions
from xai.core._scenario import ScenarioConfig
from xai.exceptions import ConfigurationError
from xai.messages import Usage

__all__ = ["OpenAIAgentsOrchestrator"]

EXTRA = "openai-agents"


def _output_schema(agents: Any, requested: dict[str, Any] | None) -> Any:
    """The SDK's native output type, carrying xai's schema (plain text for any other format:
    the SDK only sends ``json_schema``); validation is left to xai (it parses with one
    repair, as every orchestrator does), so any text passes here."""
    fmt = requested if requested and requested.get("type") == "json_schema" else None

    class XaiOutputSchema(agents.AgentOutputSchemaBase):  # type: ignore[misc]
        def is_plain_text(self) -> bool:
            return fmt is None

        def name(self) -> str:
            return str(fmt["json_schema"]["name"]) if fmt else "str"

        def json_schema(self) -> dict[str, Any]:
            return dict(fmt["json_schema"]["schema"]) if fmt else {}

        def is_strict_json_schema(self) -> bool:
            return bool(fmt and fmt["json_schema"].get("strict"))

        def validate_json(self, json_str: str) -> Any:
            return json_str

    return XaiOutputSchema()


def _tools(agents: Any, recorder: ToolRecorder) -> list[Any]:
    def invoker(name: str) -> Any:
        async def invoke(context: Any, arguments: str) -> str:
            return await recorder.call(name, arguments, getattr(context, "tool_call_id", None))

        return invoke

    return [
        agents.FunctionTool(
            name=spec.name,
            description=spec.description,
            params_json_schema=spec.parameters,
            on_invoke_tool=invoker(spec.name),
            strict_json_schema=False,
        )
        for spec in recorder.specs
    ]


class OpenAIAgentsOrchestrator(ModelPeer):
    """Runs a scenario with the OpenAI Agents SDK against any OpenAI-compatible endpoint."""

    async def run(
        self, scenario: ScenarioConfig, user_input: str, options: RunOptions
    ) -> AgentResult:
        result = AgentResult(model_name=scenario.model.model or "", orchestrator=EXTRA)

        async def body() -> None:
            agents = require("agents", EXTRA)
            if not hasattr(agents, "Runner"):  # the SDK's package is named `agents`
                raise ConfigurationError(
                    f"the module 'agents' at {getattr(agents, '__file__', '?')} shadows the "
                    "OpenAI Agents SDK: rename it"
                )
            config = model_config(self.llm or LLMConfig.from_env(), scenario)
            result.model_name = config.model or ""
            prepared = await prepare(
                scenario, user_input, options, self.knowledge, result, self.tools
            )
            await on_asyncio(
                lambda: self._run(agents, config, prepared, user_input, options, result)
            )

        return await guarded(result, scenario, options, body)

    async def _run(
        self,
        agents: Any,
        config: LLMConfig,
        prepared: Prepared,
        user_input: str,
        options: RunOptions,
        result: AgentResult,
    ) -> None:

        client = openai_client(config)
        async with client, prepared.tools.open():
            recorder = ToolRecorder(prepared.tools, result)
            tools = _tools(agents, recorder)
            run_config = agents.RunConfig(tracing_disabled=True)

            async def attempt(fmt: dict[str, Any] | None) -> None:
                plain = fmt if fmt and fmt.get("type") != "json_schema" else None
                agent = agents.Agent(
                    name="xai",
                    instructions=prepared.system,
                    model=agents.OpenAIChatCompletionsModel(
                        model=config.model, openai_client=client
                    ),
                    model_settings=agents.ModelSettings(
                        temperature=prepared.temperature,
                        max_tokens=prepared.max_tokens,
                        extra_body={"response_format": plain} if plain else None,
                    ),
                    tools=tools,
                    output_type=_output_schema(agents, fmt),
                )

                async def turn(items: Any) -> Any:
                    done = await agents.Runner.run(
                        agent, items, max_turns=prepared.max_rounds, run_config=run_config
                    )
                    used = done.context_wrapper.usage
                    result.usage = result.usage + Usage(
                        prompt_tokens=used.input_tokens,
                        completion_tokens=used.output_tokens,
                        reasoning_tokens=used.output_tokens_details.reasoning_tokens or 0,
                        cached_tokens=used.input_tokens_details.cached_tokens or 0,
                        requests=used.requests,
                    )
                    return done

                first = await turn(user_input)

                async def repair(message: str) -> str | None:
                    again = await turn(
                        [*first.to_input_list(), {"role": "user", "content": message}]
                    )
                    return str(again.final_output)

                await conclude(result, prepared.output, options, str(first.final_output), repair)

            await with_format_fallback(prepared.response_format, attempt)
