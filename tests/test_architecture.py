"""Structural rules: Query imports nothing from the layers above it; the front door is short."""

from __future__ import annotations

import ast
from pathlib import Path

import xai

PACKAGE = Path(xai.__file__).parent
FORBIDDEN_FOR_QUERY = (
    "xai.session",
    "xai.agent",
    "xai.memory",
    "xai.core",
    "xai.runner",
    "xai.eval",
    "xai.cli",
)


def imports_of(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
    return found


def closure(module: str) -> set[str]:
    """Every xai module ``module`` imports, transitively."""
    seen: set[str] = set()
    todo = [module]
    while todo:
        name = todo.pop()
        if name in seen or not name.startswith("xai"):
            continue
        seen.add(name)
        relative = Path(*name.split(".")[1:])
        candidates = [PACKAGE / relative.with_suffix(".py"), PACKAGE / relative / "__init__.py"]
        for path in candidates:
            if path.exists():
                todo.extend(imports_of(path))
    return seen


def test_query_imports_nothing_from_upper_layers() -> None:
    reachable = closure("xai.query")
    assert "xai.providers" in reachable and "xai.tools" in reachable
    bad = sorted(m for m in reachable if m.startswith(FORBIDDEN_FOR_QUERY))
    assert not bad, f"xai.query reaches {bad}"


def test_leaves_import_no_layer() -> None:
    for leaf in ("xai.messages", "xai.events", "xai.exceptions"):
        reachable = closure(leaf) - {leaf}
        assert reachable <= {"xai.messages", "xai.exceptions"}, (leaf, reachable)


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
    assert sorted(xai.__all__) == xai.__all__ or set(xai.__all__) == set(dir(xai)) & set(
        xai.__all__
    )
    for name in xai.__all__:
        assert hasattr(xai, name), name
    assert set(xai.__all__) == {
        "AssistantMessage", "CancelToken", "ConfigurationError", "EmbeddingConfig", "LLMConfig",
        "Message", "MessageCommitted", "OpenAIProvider", "Origin", "Provider", "ProviderError",
        "Query", "QueryConfig", "QueryDone", "QueryEvent", "QueryResult", "RunError", "StopReason",
        "SystemMessage", "TextDelta", "ThinkingDelta", "Tool", "ToolCall", "ToolCallFinished",
        "ToolCallStarted", "ToolContext", "ToolMessage", "ToolResult", "ToolSet", "Usage",
        "UsageError", "UserMessage", "XaiError", "__version__", "configure_logging", "run_query",
        "run_query_sync", "tool",
    }  # fmt: skip


def test_modules_stay_small() -> None:
    for path in PACKAGE.rglob("*.py"):
        assert len(path.read_text().splitlines()) <= 800, f"{path} should be split by concept"
