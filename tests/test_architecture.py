"""Structural rules over the whole import graph of ``xai/``, and the short front door.

Every module under ``xai/`` is parsed with ``ast`` and every import in it is
counted, wherever it stands: at the top, inside a function (a lazy import is
still a dependency, only a later one), and inside ``if TYPE_CHECKING:`` (a
type-only import still makes the importer know the imported layer's types: if
those change, the importer's annotations break; the arrows are about what a
layer knows, not about what runs first). Each module belongs to a *unit*: a
package (``xai/session/…`` → ``session``), a top-level module (``xai/events.py``
→ ``events``), the front door (``xai/__init__.py`` → ``xai``) or ``__main__``.
Inside one unit anything goes; between units, the layer table below rules.
"""

from __future__ import annotations

import ast
import types
from pathlib import Path

import msgspec

import xai

PACKAGE = Path(xai.__file__).parent

# Rank of every unit: a unit imports only units of a strictly lower rank, so two
# units on one rank never import each other. Derived from DESIGN.md ("facades →
# Agent → Session → Query → providers/tools; events/messages/exceptions are
# leaves") and from what the code needs; the notes say why where the design is silent.
LAYERS: dict[str, int] = {
    # The console entry point (`python -m xai`): runs the CLI.
    "__main__": 11,
    # The `xai` command drives every facade.
    "cli": 10,
    # The file runner runs scenarios with the built-in tools of `run_agent` (core).
    "runner": 9,
    # Hosts on a Ray cluster (`xai[ray]`): a facade over the host of Agents and a `Backend` of
    # the gateway (serve), whose in-process backend each host actor runs for the web page's
    # calls; only the CLI imports it.
    "cluster": 9,
    # The front door (`xai/__init__.py`) re-exports names from every layer up to `run_agent`
    # (core), loaded on first use; nothing inside xai imports through it but the CLI, for
    # `__version__`.
    "xai": 9,
    # Facades over the Agent: `run_agent` + RAG, and the evaluation harness.
    "core": 8,
    "eval": 8,
    # An Agent served over MCP (`xai mcp serve`): a facade over the Agent, like core.
    "mcp": 8,
    # The HTTP + SSE gateway (`xai serve`) over a host of Agents: a facade, like mcp; only the
    # CLI imports it.
    "serve": 8,
    "agent": 7,
    # The test doubles stand in for a model: they speak the provider protocol and never use a
    # Query. One of them, `demo_model` (the scripted model of `xai demo` and the offline Quick
    # start), answers the Session's extraction and the memory's judge prompts, so it knows
    # their markers: above session and memory. The facades run them (the offline demo, the
    # scripted runner and eval).
    "testing": 7,
    # Session and memory are siblings under the Agent: a Session never reaches the Agent's
    # memory store (rule 8), and the store knows nothing of Sessions (rule 7: the Agent writes it).
    "session": 6,
    "memory": 6,
    # Structured output (JSON asked of a model through a Query): used by the Session's
    # extraction, the memory judge, `run_agent` and the evaluation's scorer.
    "structured": 5,
    "query": 4,
    "providers": 3,
    "tools": 3,
    # Shared support: atomic files (logs), logging and configuration (redaction), events
    # (messages); then the leaves that import nothing from xai.
    "_files": 2,
    # OpenTelemetry spans and metrics: every layer from Query up may hold a `Telemetry` and
    # call it; it knows messages only, reading providers and requests by their shape.
    "telemetry": 2,
    # Reading user-named files capped (inputs, prompts, scenarios, datasets): the facades.
    "_reading": 1,
    "config": 1,
    "events": 1,
    "logs": 1,
    "_actor": 0,
    # uvicorn on a socket of our own, for the facades that serve HTTP (serve, mcp).
    "_http": 0,
    "_redact": 0,
    "exceptions": 0,
    "messages": 0,
    # The mood values and their arithmetic (issue 30): a leaf, so that events carry them
    # and the Session and the Agent share them; the Query never imports it.
    "mood": 0,
}

# Violations found in files this branch does not own, waiting for their fix (issue 13).
# Each must still occur: once fixed, the test fails until its line here is removed.
KNOWN_VIOLATIONS: set[str] = set()


class Import(msgspec.Struct, frozen=True):
    importer: str
    path: Path
    line: int
    target: str
    """The module imported (``from m import sub`` names ``m.sub`` when that is a module)."""
    names: tuple[str, ...] = ()
    """For ``from m import a, b`` that is not a submodule: ``a``, ``b``."""


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def is_module(name: str) -> bool:
    relative = Path(*name.split("."))
    return (PACKAGE.parent / relative.with_suffix(".py")).exists() or (
        PACKAGE.parent / relative / "__init__.py"
    ).exists()


def unit_of(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


def imports_in(path: Path) -> list[Import]:
    """Every import of an xai module in ``path``, at any depth (functions, TYPE_CHECKING)."""
    return parse_imports(path.read_text(), path)


def parse_imports(source: str, path: Path) -> list[Import]:
    importer = module_name(path)
    package = importer if path.name == "__init__.py" else importer.rpartition(".")[0]
    found: list[Import] = []
    for node in ast.walk(ast.parse(source, str(path))):
        if isinstance(node, ast.Import):
            found.extend(
                Import(importer, path, node.lineno, alias.name)
                for alias in node.names
                if alias.name.split(".")[0] == "xai"
            )
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative: resolve against the importer's package
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                origin = ".".join([*base, *([node.module] if node.module else [])])
            else:
                origin = node.module or ""
            if origin.split(".")[0] != "xai":
                continue
            names: list[str] = []
            for alias in node.names:
                if is_module(f"{origin}.{alias.name}"):
                    found.append(Import(importer, path, node.lineno, f"{origin}.{alias.name}"))
                else:
                    names.append(alias.name)
            if names:
                found.append(Import(importer, path, node.lineno, origin, tuple(names)))
    return sorted(found, key=lambda f: f.line)  # ast.walk goes breadth first


def all_imports() -> list[Import]:
    return [found for path in sorted(PACKAGE.rglob("*.py")) for found in imports_in(path)]


def where(found: Import) -> str:
    return f"{found.path.relative_to(PACKAGE.parent)}:{found.line} {found.importer}"


def layering_violations(imports: list[Import]) -> list[str]:
    problems: list[str] = []
    for found in imports:
        mine, theirs = unit_of(found.importer), unit_of(found.target)
        if mine == theirs:
            continue
        if mine not in LAYERS or theirs not in LAYERS:
            unknown = mine if mine not in LAYERS else theirs
            problems.append(f"{where(found)}: unit {unknown!r} has no row in LAYERS")
        elif LAYERS[theirs] >= LAYERS[mine]:
            relation = "a layer above it" if LAYERS[theirs] > LAYERS[mine] else "a sibling layer"
            problems.append(
                f"{where(found)} imports {found.target} ({relation}: "
                f"{mine} {LAYERS[mine]} -> {theirs} {LAYERS[theirs]})"
            )
    return problems


def private_violations(imports: list[Import]) -> list[str]:
    """``xai.a._b`` (or ``from xai.a import _b``) imported from outside ``xai/a/``."""
    problems: list[str] = []
    for found in imports:
        parts = found.target.split(".")
        importer = found.importer.split(".")
        # The first private part of the target; its package must contain the importer.
        # (Top-level private modules such as xai._redact are private to xai itself, which
        # contains every importer.)
        for depth, part in enumerate(parts):
            if part.startswith("_") and not part.startswith("__"):
                owner = parts[:depth]
                if importer[: len(owner)] != owner:
                    problems.append(
                        f"{where(found)} imports {found.target}, "
                        f"a private module of {'.'.join(owner[1:]) or 'xai'}"
                    )
                break
        else:
            if unit_of(found.target) != unit_of(found.importer):
                for name in found.names:
                    if name.startswith("_") and not name.startswith("__"):
                        problems.append(
                            f"{where(found)} imports the private name {name} of {found.target}"
                        )
    return problems


def test_the_walk_sees_every_kind_of_import() -> None:
    imports = all_imports()
    seen = {(f.importer, f.target) for f in imports}
    assert ("xai.query", "xai.providers") in seen  # a top-level import
    assert ("xai.query", "xai.telemetry") in seen  # under TYPE_CHECKING
    assert ("xai.cli._demo", "xai.testing") in seen  # inside a function
    assert ("xai.agent._agent", "xai._actor") in seen  # `from xai import <module>`
    assert {unit_of(f.importer) for f in imports} <= set(LAYERS)


def test_no_unit_imports_one_above_it() -> None:
    problems = layering_violations(all_imports())
    assert_only_known(problems)


def test_no_unit_imports_another_units_private_module() -> None:
    problems = private_violations(all_imports())
    assert_only_known(problems)


def assert_only_known(problems: list[str]) -> None:
    new = sorted(set(problems) - KNOWN_VIOLATIONS)
    assert not new, "import rules broken (each on its own line):\n" + "\n".join(new)


def test_known_violations_are_still_there() -> None:
    """An entry in KNOWN_VIOLATIONS that no longer occurs must be removed."""
    imports = all_imports()
    current = set(layering_violations(imports)) | set(private_violations(imports))
    stale = sorted(KNOWN_VIOLATIONS - current)
    assert not stale, "fixed, so remove from KNOWN_VIOLATIONS:\n" + "\n".join(stale)


def test_the_checks_can_fail() -> None:
    """Bad imports planted in the text of a module are caught, each with its own line."""
    planted = (
        "from typing import TYPE_CHECKING\n"
        "from xai.agent import Agent\n"
        "if TYPE_CHECKING:\n"
        "    from xai.session._journal import JournalReader\n"
        "def late():\n"
        "    from xai.memory import _ledger\n"
        "from . import _files\n"
    )
    found = parse_imports(planted, PACKAGE / "query.py")  # as if xai/query.py said so
    assert [f.target for f in found] == [
        "xai.agent", "xai.session._journal", "xai.memory._ledger", "xai._files"
    ]  # fmt: skip
    layering = layering_violations(found)
    assert [p.split(" imports ")[1] for p in layering] == [
        "xai.agent (a layer above it: query 4 -> agent 7)",
        "xai.session._journal (a layer above it: query 4 -> session 6)",
        "xai.memory._ledger (a layer above it: query 4 -> memory 6)",
    ]
    assert [p.split(" imports ")[1] for p in private_violations(found)] == [
        "xai.session._journal, a private module of session",
        "xai.memory._ledger, a private module of memory",
    ]
    sibling = parse_imports("from xai.memory import LongTermMemory\n", PACKAGE / "session" / "x.py")
    assert layering_violations(sibling) == [
        "xai/session/x.py:1 xai.session.x imports xai.memory (a sibling layer: session 6 -> memory 6)"
    ]


def test_query_imports_nothing_from_upper_layers() -> None:
    reachable = {f.target for f in all_imports() if f.importer == "xai.query"}
    assert {"xai.providers", "xai.tools"} <= reachable
    assert all(LAYERS[unit_of(target)] < LAYERS["query"] for target in reachable)


def test_query_holds_no_reference_to_a_session_or_agent() -> None:
    names: set[str] = set()
    for node in ast.walk(ast.parse((PACKAGE / "query.py").read_text())):
        if isinstance(node, ast.Name):
            names.add(node.id)
        elif isinstance(node, ast.Attribute):
            names.add(node.attr)
        elif isinstance(node, ast.arg):
            names.add(node.arg)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
    assert "provider" in names  # the walk sees identifiers
    suspicious = sorted(n for n in names if "session" in n.lower() or "agent" in n.lower())
    assert not suspicious


def test_public_surface() -> None:
    # The front door offers exactly the names it lists, at most 60, each once and the list kept
    # sorted. They load on first use, so they are counted through dir() and getattr; nothing
    # public is bound beside them (submodules aside).
    offered = {
        name
        for name in dir(xai)
        if not name.startswith("_") and not isinstance(getattr(xai, name), types.ModuleType)
    }
    assert offered == set(xai.__all__) - {"__version__"}
    assert len(xai.__all__) == len(set(xai.__all__)) <= 60
    assert xai.__all__ == sorted(xai.__all__)
    assert set(xai.__all__) == {
        # run_agent, the one-shot facade
        "AgentResult", "ScenarioConfig", "arun_agent", "run_agent",
        # one call: a prompt answered (with an Agent's memory when named)
        "ask", "ask_sync",
        # the Agent layer, the Session layer
        "Agent", "AgentConfig", "AgentHost", "Persona", "Session", "SessionConfig",
        # the Query layer, structured output, providers, tools, configuration, logs
        "CancelToken", "Query", "QueryConfig", "run_query", "run_query_sync", "ask_structured",
        "OpenAIProvider", "Provider", "Tool", "ToolContext", "ToolSet", "tool",
        "EmbeddingConfig", "LLMConfig", "configure_logging",
        # events
        "AgentEvent", "SessionEvent", "TurnDone", "MessageCommitted", "QueryDone", "QueryEvent",
        "TextDelta", "ThinkingDelta", "ToolCallFinished", "ToolCallStarted",
        # messages and results
        "AssistantMessage", "MemoryCandidate", "Message", "Origin", "QueryResult", "StopReason",
        "SystemMessage", "ToolCall", "ToolMessage", "ToolResult", "TurnOutcome", "Usage",
        "UserMessage",
        # errors
        "ConfigurationError", "ProviderError", "RunError", "UsageError", "XaiError",
        "__version__",
    }  # fmt: skip


def test_modules_stay_small() -> None:
    for path in PACKAGE.rglob("*.py"):
        assert len(path.read_text().splitlines()) <= 800, f"{path} should be split by concept"
