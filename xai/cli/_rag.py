"""``xai ingest`` and ``xai ask``: the run_agent facade from the command line."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import anyio
import msgspec

from xai.cli._errors import EXIT_FAILED, EXIT_OK
from xai.config import LLMConfig, default_home
from xai.core import KnowledgeBase, ScenarioConfig, ScenarioError, arun_agent, load_scenario

__all__ = ["ask_command", "ingest_command", "resolve_scenario", "run_ask", "run_ingest"]


def resolve_scenario(value: str) -> ScenarioConfig:
    """A scenario file path, or an id found under ``$XAI_HOME/scenarios``."""
    path = Path(value).expanduser()
    if path.is_file():
        return load_scenario(path)
    for suffix in (".yaml", ".yml", ".json"):
        candidate = default_home() / "scenarios" / f"{value}{suffix}"
        if candidate.is_file():
            return load_scenario(candidate)
    raise ScenarioError(
        f"no scenario {value!r}: give a scenario file, or put {value}.yaml in "
        f"{default_home() / 'scenarios'}"
    )


def _knowledge_dir(args: argparse.Namespace) -> Path:
    return (args.knowledge_dir or default_home() / "knowledge").expanduser()


def ingest_command(args: argparse.Namespace) -> int:
    path = Path(args.scenario).expanduser()
    scenario_id = load_scenario(path).scenario_id if path.is_file() else args.scenario
    return anyio.run(run_ingest, args, scenario_id)


def ask_command(args: argparse.Namespace) -> int:
    scenario = resolve_scenario(args.scenario)
    config = LLMConfig.from_env()
    if scenario.model.model:
        config = msgspec.structs.replace(config, model=scenario.model.model)
    config.validated()  # no model: the one message every command gives (main says it)
    return anyio.run(run_ask, args, scenario)


async def run_ingest(args: argparse.Namespace, scenario_id: str) -> int:
    knowledge = await anyio.to_thread.run_sync(KnowledgeBase, _knowledge_dir(args))
    try:
        for file in args.files:
            count = await knowledge.ingest_file(scenario_id, file)
            print(
                f"{file}: {count} chunk(s) into scenario {scenario_id!r} as document {file.stem!r}"
            )
    finally:
        await knowledge.aclose()
    return 0


async def run_ask(args: argparse.Namespace, scenario: ScenarioConfig) -> int:
    documents = (
        [d.strip() for d in args.documents.split(",") if d.strip()] if args.documents else None
    )
    options = {"document_ids": documents, "knowledge_dir": str(_knowledge_dir(args))}
    result = await arun_agent(scenario, args.question, options)
    if args.json:
        sys.stdout.write(msgspec.json.format(msgspec.json.encode(result).decode(), indent=2) + "\n")
    else:
        print(result.answer or result.raw_output)
        for n, ref in enumerate(result.references, start=1):
            print(f"  [{n}] {ref.source_file} (score {ref.score:.2f}): {ref.content[:100]}")
        for call in result.tool_calls:
            status = "ok" if call.success else f"error: {call.error}"
            print(f"  tool {call.tool_name}({call.arguments}) -> {status}")
    if result.error is not None:
        # A failed run, or an answer that is not the scenario's structured output (its raw
        # text is printed above): either way not the answer asked for.
        print(f"xai: {_for_a_person(result.error)}", file=sys.stderr)
        return EXIT_FAILED
    return EXIT_OK


def _for_a_person(error: str) -> str:
    """``AgentResult.error`` without the Python class name it may start with."""
    kind, sep, rest = error.partition(": ")
    if sep and kind.isidentifier() and kind[:1].isupper() and kind.endswith("Error"):
        return rest
    if kind == "structured output":
        return f"the answer is not the structured output the scenario asks for: {rest}"
    return f"the run failed: {error}"
