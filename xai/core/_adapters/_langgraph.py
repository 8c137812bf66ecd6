"""``orchestrator: langgraph``: a LangGraph graph runs the loop (``xai-actors[langgraph]``).

What maps to what: the scenario's system prompt → a ``SystemMessage`` before the
conversation; the model settings → ``langchain_openai.ChatOpenAI`` with the ``LLM_*`` base
URL, key, model and extra headers (``default_headers``), temperature and max tokens; each
tool → a LangChain ``StructuredTool`` whose ``args_schema`` is xai's JSON schema and whose
call runs through xai's ``ToolSet``, executed by LangGraph's ``ToolNode``; the loop → a
two-node ``StateGraph`` (model, tools) with ``tools_condition``; ``max_rounds`` → the
graph's ``recursion_limit``; the output type → ``response_format`` bound with the tools
(LangChain's native structured output of a tool-calling model), parsed and repaired by xai.
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
from xai.exceptions import RunError
from xai.messages import Usage

__all__ = ["LangGraphOrchestrator"]

EXTRA = "langgraph"


def _tools(recorder: ToolRecorder) -> list[Any]:
    from langchain_core.tools import StructuredTool

    def invoker(name: str) -> Any:
        async def invoke(**arguments: Any) -> str:
            import msgspec

            return await recorder.call(name, msgspec.json.encode(arguments).decode())

        return invoke

    return [
        StructuredTool.from_function(
            coroutine=invoker(spec.name),
            name=spec.name,
            description=spec.description,
            args_schema=spec.parameters,
            infer_schema=False,
        )
        for spec in recorder.specs
    ]


def _text(message: Any) -> str:
    content = message.content
    if isinstance(content, str):
        return content
    return "".join(
        part.get("text", "") if isinstance(part, dict) else str(part) for part in content
    )


def _usage(messages: list[Any]) -> Usage:
    total = Usage()
    for message in messages:
        used = getattr(message, "usage_metadata", None)
        if getattr(message, "type", "") != "ai":
            continue
        total = total + Usage(
            prompt_tokens=int((used or {}).get("input_tokens", 0)),
            completion_tokens=int((used or {}).get("output_tokens", 0)),
            requests=1,
        )
    return total


class LangGraphOrchestrator(ModelPeer):
    """Runs a scenario as a LangGraph tool-calling graph on ``langchain-openai``."""

    async def run(
        self, scenario: ScenarioConfig, user_input: str, options: RunOptions
    ) -> AgentResult:
        result = AgentResult(model_name=scenario.model.model or "", orchestrator=EXTRA)

        async def body() -> None:
            require("langgraph", EXTRA)
            require("langchain_openai", EXTRA)
            config = model_config(self.llm or LLMConfig.from_env(), scenario)
            result.model_name = config.model or ""
            prepared = await prepare(
                scenario, user_input, options, self.knowledge, result, self.tools
            )
            await on_asyncio(lambda: self._run(config, prepared, user_input, options, result))

        return await guarded(result, scenario, options, body)

    async def _run(
        self,
        config: LLMConfig,
        prepared: Prepared,
        user_input: str,
        options: RunOptions,
        result: AgentResult,
    ) -> None:
        from langchain_core.messages import HumanMessage, SystemMessage
        from langchain_openai import ChatOpenAI
        from langgraph.errors import GraphRecursionError
        from langgraph.graph import END, START, MessagesState, StateGraph
        from langgraph.prebuilt import ToolNode, tools_condition

        # Our own client, closed after the run: left to itself, langchain-openai shares one
        # HTTP client per process, bound to the first event loop that used it.
        client = openai_client(config)
        async with client, prepared.tools.open():
            recorder = ToolRecorder(prepared.tools, result)
            tools = _tools(recorder)
            settings: dict[str, Any] = {
                "model": config.model,
                "base_url": config.base_url,
                "api_key": config.api_key or "not-needed",
                "root_async_client": client,
                "async_client": client.chat.completions,
                # The graph only calls ``ainvoke``; a sync client would never be used.
                "client": client.chat.completions,
                "temperature": prepared.temperature,
                "max_tokens": prepared.max_tokens,
            }
            model = ChatOpenAI(**settings)

            async def attempt(fmt: dict[str, Any] | None) -> None:
                # The format goes as a plain request field: LangChain's own
                # ``response_format`` makes every tool strict (all parameters required),
                # which would change the tools' schemas, and parses the answer itself.
                bound: Any = model.bind_tools(tools) if tools else model
                if fmt is not None:
                    bound = bound.bind(extra_body={"response_format": fmt})
                system = SystemMessage(prepared.system)

                async def call_model(state: MessagesState) -> dict[str, Any]:
                    return {"messages": [await bound.ainvoke([system, *state["messages"]])]}

                graph = StateGraph(MessagesState)
                graph.add_node("model", call_model)
                graph.add_edge(START, "model")
                if tools:
                    graph.add_node("tools", ToolNode(tools))
                    graph.add_conditional_edges("model", tools_condition)
                    graph.add_edge("tools", "model")
                else:
                    graph.add_edge("model", END)
                app: Any = graph.compile()
                # One round is a model step and a tools step; the last model step answers.
                limit = {"recursion_limit": 2 * prepared.max_rounds + 1}

                async def turn(messages: list[Any]) -> list[Any]:
                    try:
                        state = await app.ainvoke({"messages": messages}, config=limit)
                    except GraphRecursionError:
                        raise RunError(
                            f"the graph reached its round limit ({prepared.max_rounds} rounds)"
                        ) from None
                    produced: list[Any] = state["messages"][len(messages) :]
                    result.usage = result.usage + _usage(produced)
                    recorder.name_calls(
                        [
                            (m.tool_call_id, str(m.name), _text(m))
                            for m in produced
                            if getattr(m, "type", "") == "tool"
                        ]
                    )
                    return list(state["messages"])

                first = await turn([HumanMessage(user_input)])

                async def repair(message: str) -> str | None:
                    again = await turn([*first, HumanMessage(message)])
                    return _text(again[-1])

                await conclude(result, prepared.output, options, _text(first[-1]), repair)

            await with_format_fallback(prepared.response_format, attempt)
