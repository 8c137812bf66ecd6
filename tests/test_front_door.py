"""The front door (``import xai``) and every public module's ``__all__``.

The front door loads its names on first use; what it lists, and what type checkers see
under ``TYPE_CHECKING``, must be the same names from the same modules. Every public
module says in ``__all__`` exactly what it offers: each listed name exists, and each
public name the module defines (a def, a class, an assignment, or a re-export from one
of its package's private modules) is listed or made private.
"""

from __future__ import annotations

import ast
import importlib
import pkgutil
import re
import tomllib
import types
from pathlib import Path
from typing import Any

import pytest

import xai
from xai.agent import Agent, AgentHost
from xai.core import AgentResult, run_agent
from xai.session import Session

PACKAGE = Path(xai.__file__).parent


def public_modules() -> list[str]:
    """``xai`` and every module under it with no private part in its dotted name."""
    names = ["xai"]
    for info in pkgutil.walk_packages([str(PACKAGE)], prefix="xai."):
        if not any(part.startswith("_") for part in info.name.split(".")):
            names.append(info.name)
    return sorted(names)


def source_of(module: types.ModuleType) -> ast.Module:
    assert module.__file__ is not None
    return ast.parse(Path(module.__file__).read_text(), module.__file__)


def is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def defined_names(module: types.ModuleType) -> set[str]:
    """Public names the module's own top level defines, and for a package's ``__init__``
    the names it re-exports from its private modules (``from xai.memory._types import
    Fact`` in ``xai/memory/__init__.py``). Names merely imported from elsewhere (the
    standard library, another xai module) are tools, not an offer; a ``TypeVar`` is a
    typing device."""
    is_package = hasattr(module, "__path__")
    package = module.__name__
    found: set[str] = set()

    def visit(statements: list[ast.stmt]) -> None:
        for node in statements:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                found.add(node.name)
            elif isinstance(node, (ast.Assign, ast.AnnAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                value = node.value
                if (
                    isinstance(value, ast.Call)
                    and isinstance(value.func, ast.Name)
                    and value.func.id == "TypeVar"
                ):
                    continue
                found.update(t.id for t in targets if isinstance(t, ast.Name))
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                # A package's __init__ offers what it imports from its own private modules.
                if is_package and node.module.startswith(package + "._"):
                    found.update(alias.asname or alias.name for alias in node.names)
            elif isinstance(node, ast.If) and not is_type_checking(node.test):
                visit(node.body)
                visit(node.orelse)
            elif isinstance(node, ast.Try):
                visit(node.body)

    visit(source_of(module).body)
    return {name for name in found if not name.startswith("_")}


@pytest.mark.parametrize("name", public_modules())
def test_all_is_honest(name: str) -> None:
    module = importlib.import_module(name)
    listed = getattr(module, "__all__", None)
    defined = defined_names(module)
    if listed is None:  # an entry point (python -m, a pytest plugin) offers nothing to import
        assert name.endswith(("__main__", "pytest_plugin")), f"{name} has no __all__"
        return
    assert len(listed) == len(set(listed)), f"{name}.__all__ lists a name twice"
    missing = sorted(n for n in listed if not hasattr(module, n))
    assert not missing, f"{name}.__all__ lists names it does not have: {missing}"
    unlisted = sorted(defined - set(listed))
    assert not unlisted, f"{name} defines public names outside __all__ (list or rename): {unlisted}"


def test_the_honesty_check_can_fail() -> None:
    planted = types.ModuleType("xai.memory")
    planted.__path__ = []
    planted.__file__ = str(PACKAGE / "memory" / "__init__.py")
    assert "LongTermMemory" in defined_names(planted)  # re-exported from a private module
    assert "ScoredFact" in defined_names(planted)
    cli = importlib.import_module("xai.cli")
    assert {"main", "single_error", "EXIT_OK"} <= defined_names(cli)  # defs and constants
    assert "argparse" not in defined_names(cli)  # merely imported
    assert "is_plain_name" not in defined_names(cli)  # imported from a public module
    config = importlib.import_module("xai.config")
    assert "redact" not in defined_names(config)  # a module's tool from xai._redact


def test_the_front_door_offers_every_layer() -> None:
    assert xai.Agent is Agent
    assert xai.AgentHost is AgentHost
    assert xai.Session is Session
    assert xai.run_agent is run_agent
    assert xai.AgentResult is AgentResult
    assert "later releases" not in (xai.__doc__ or "")


def test_front_door_names_resolve_to_their_modules() -> None:
    for name in xai.__all__:
        value = getattr(xai, name)
        if isinstance(value, (type, types.FunctionType)):  # aliases and unions have no home
            home = xai._MODULE_OF[name]
            assert value.__module__ == home or value.__module__.startswith(home + "."), name
    with pytest.raises(AttributeError, match="no attribute 'Nonesuch'"):
        _ = xai.Nonesuch  # type: ignore[attr-defined]


def test_type_checkers_see_what_loads_lazily() -> None:
    """The ``TYPE_CHECKING`` imports name the same names from the same modules as the
    table ``__getattr__`` loads from, and ``dir(xai)`` offers them all."""
    seen: dict[str, str] = {}
    for node in source_of(xai).body:
        if isinstance(node, ast.If) and is_type_checking(node.test):
            for statement in node.body:
                assert isinstance(statement, ast.ImportFrom) and statement.module
                seen.update((alias.name, statement.module) for alias in statement.names)
    assert seen == xai._MODULE_OF
    assert set(xai.__all__) - {"__version__"} == set(seen)
    assert set(xai.__all__) <= set(dir(xai))


ROOT = PACKAGE.parent
DISTRIBUTION = "xai-actors"


def project() -> dict[str, Any]:
    table: dict[str, Any] = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    return table


def test_the_distribution_name_is_ours_and_the_import_name_stays() -> None:
    # `xai` on the package index is someone else's project.
    table = project()
    assert table["name"] == DISTRIBUTION
    assert table["scripts"] == {"xai": "xai.cli:main"}
    # An extra that pulls another extra names the project by its distribution name.
    for extra, requirements in table["optional-dependencies"].items():
        for requirement in requirements:
            if re.match(r"xai\b", requirement):
                assert requirement.startswith(f"{DISTRIBUTION}["), (extra, requirement)


def test_the_promised_license_is_there() -> None:
    table = project()
    assert table["license"] == "MIT"
    assert table["license-files"] == ["LICENSE"]
    text = (ROOT / "LICENSE").read_text()
    assert text.startswith("MIT License") and "the xai authors" in text


def install_targets() -> list[tuple[str, str]]:
    """Every ``pip install`` argument in the README, the docs and the package's messages."""
    files = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md")), *PACKAGE.rglob("*.py")]
    found: list[tuple[str, str]] = []
    for path in files:
        for line in re.findall(r"pip install ([^`\n]*)", path.read_text()):
            found.extend((path.name, arg.strip("'\"")) for arg in line.split())
    return found


def test_every_install_line_names_the_distribution() -> None:
    targets = install_targets()
    assert (("README.md", DISTRIBUTION)) in targets
    wrong = [(name, arg) for name, arg in targets if re.fullmatch(r"xai(\[.*\])?", arg)]
    assert not wrong, f"`pip install xai` installs someone else's project: {wrong}"
