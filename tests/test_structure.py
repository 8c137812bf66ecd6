"""Structural rules inside the layers: actors are small shells over explicit state.

``test_architecture.py`` rules the arrows *between* units; this module rules what
happens *inside* them (DESIGN.md, "Inside an actor"):

- no module reads a private attribute of another object: ``x._y`` is allowed only
  where ``x`` is the ``self``/``cls`` of the method it stands in (closures inside
  that method included), ``super()`` or an imported module;
- no import cycle among the modules of one package (a type-only import counts:
  a circle of modules is one concept split by line count);
- the actor classes and the modules of their packages stay small.

Each check has a self-test that plants the violation it must catch.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path

from tests.test_architecture import PACKAGE, all_imports, unit_of

# Violations waiting for their fix. Each must still occur: once fixed, the test
# fails until its entry here is removed. (Private reads are known by file.)
KNOWN_PRIVATE_READS: set[str] = set()
KNOWN_CYCLES: set[tuple[str, ...]] = set()
KNOWN_LARGE: set[str] = set()

ACTOR_CLASSES = {"session/_session.py": "Session", "agent/_agent.py": "Agent"}
ACTOR_CLASS_LINES = 300
ACTOR_PACKAGES = ("session", "agent")
ACTOR_MODULE_LINES = 500


def private_reads(source: str, name: str) -> list[str]:
    """``name:line expr._attr`` for every read of another object's private attribute."""
    tree = ast.parse(source, name)
    modules = {
        (alias.asname or alias.name).split(".")[0]
        for node in ast.walk(tree)
        if isinstance(node, ast.Import)
        for alias in node.names
    }
    found: list[str] = []

    def visit(node: ast.AST, selves: frozenset[str], in_class: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                inner = selves
                static = any(
                    isinstance(d, ast.Name) and d.id == "staticmethod" for d in child.decorator_list
                )
                if in_class and child.args.args and not static:
                    own = child.args.args[0].arg  # self, cls (or its other name)
                    inner = selves | {own} | _copies_of(child, own)
                visit(child, inner, False)
                continue
            if isinstance(child, ast.ClassDef):
                visit(child, frozenset(), True)
                continue
            if (
                isinstance(child, ast.Attribute)
                and child.attr.startswith("_")
                and not child.attr.startswith("__")
                and not _own(child.value, selves | modules)
            ):
                found.append(f"{name}:{child.lineno} {ast.unparse(child.value)}.{child.attr}")
            visit(child, selves, in_class)

    visit(tree, frozenset(), False)
    return found


def _copies_of(method: ast.FunctionDef | ast.AsyncFunctionDef, own: str) -> set[str]:
    """Names a method binds to ``copy.copy(<own>)``: a copy its own class is still making
    (as ``__init__`` makes a new instance), so its private state is the method's to set."""
    return {
        target.id
        for node in ast.walk(method)
        if isinstance(node, ast.Assign)
        and isinstance(node.value, ast.Call)
        and ast.unparse(node.value.func) in ("copy.copy", "copy")
        and [ast.unparse(a) for a in node.value.args] == [own]
        for target in node.targets
        if isinstance(target, ast.Name)
    }


def _own(value: ast.expr, names: frozenset[str] | set[str]) -> bool:
    if isinstance(value, ast.Name):
        return value.id in names
    return (
        isinstance(value, ast.Call)
        and isinstance(value.func, ast.Name)
        and value.func.id == "super"
    )


def all_private_reads() -> list[str]:
    return [
        found
        for path in sorted(PACKAGE.rglob("*.py"))
        for found in private_reads(path.read_text(), path.relative_to(PACKAGE.parent).as_posix())
    ]


def cycles(edges: Iterable[tuple[str, str]]) -> list[tuple[str, ...]]:
    """The strongly connected components of more than one module (Tarjan), each sorted."""
    graph: dict[str, set[str]] = defaultdict(set)
    for a, b in edges:
        if a != b:
            graph[a].add(b)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[tuple[str, ...]] = []

    def strong(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component: list[str] = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(tuple(sorted(component)))

    for v in sorted(graph):
        if v not in index:
            strong(v)
    return sorted(found)


def package_cycles() -> list[tuple[str, ...]]:
    """Cycles among the modules of each package (imports within one unit)."""
    return cycles(
        (f.importer, f.target) for f in all_imports() if unit_of(f.importer) == unit_of(f.target)
    )


def large(
    class_lines: int = ACTOR_CLASS_LINES, module_lines: int = ACTOR_MODULE_LINES
) -> list[str]:
    """The actor classes over ``class_lines`` and their packages' modules over ``module_lines``
    (named without their length, so that a known entry does not go stale as it shrinks)."""
    found: list[str] = []
    for package in ACTOR_PACKAGES:
        for path in sorted((PACKAGE / package).glob("*.py")):
            if len(path.read_text().splitlines()) > module_lines:
                found.append(f"module {package}/{path.name}")
    for module, name in ACTOR_CLASSES.items():
        tree = ast.parse((PACKAGE / module).read_text())
        for node in tree.body:
            if isinstance(node, ast.ClassDef) and node.name == name:
                assert node.end_lineno is not None
                if node.end_lineno - node.lineno + 1 > class_lines:
                    found.append(f"class {name}")
    return found


def test_no_module_reads_another_objects_private_attributes() -> None:
    new = sorted(r for r in all_private_reads() if r.split(":")[0] not in KNOWN_PRIVATE_READS)
    assert not new, "private attributes read from outside their object:\n" + "\n".join(new)


def test_no_import_cycle_inside_a_package() -> None:
    new = sorted(set(package_cycles()) - KNOWN_CYCLES)
    assert not new, "import cycles inside a package:\n" + "\n".join(map(str, new))


def test_actors_and_their_modules_stay_small() -> None:
    new = sorted(set(large()) - KNOWN_LARGE)
    assert not new, f"over {ACTOR_CLASS_LINES} (class) / {ACTOR_MODULE_LINES} (module):\n" + (
        "\n".join(new)
    )


def test_known_structure_violations_are_still_there() -> None:
    stale = sorted(KNOWN_PRIVATE_READS - {r.split(":")[0] for r in all_private_reads()})
    stale += map(str, sorted(KNOWN_CYCLES - set(package_cycles())))
    stale += sorted(KNOWN_LARGE - set(large()))
    assert not stale, "fixed, so remove from the KNOWN_ sets:\n" + "\n".join(stale)


def test_the_structure_checks_can_fail() -> None:
    planted = (
        "import os\n"
        "class A:\n"
        "    def m(self, other):\n"
        "        self._x = other._y\n"  # other's private: caught
        "        def inner():\n"
        "            return self._z\n"  # the method's self, in a closure: fine
        "        return super()._w, os._exit\n"  # super() and a module: fine
        "    @staticmethod\n"
        "    def s(self):\n"
        "        return self._v\n"  # a static method has no self: caught
        "    def d(self):\n"
        "        clone = copy.copy(self)\n"
        "        clone._t = {}\n"  # a copy its own class makes: fine
        "        twin = copy.copy(other)\n"
        "        return twin._t\n"  # a copy of another object: caught
        "def free(self):\n"
        "    return self._history\n"  # a free function's 'self' is any object: caught
    )
    assert private_reads(planted, "x.py") == [
        "x.py:4 other._y",
        "x.py:10 self._v",
        "x.py:15 twin._t",
        "x.py:17 self._history",
    ]
    assert cycles([("a", "b"), ("b", "c"), ("c", "a"), ("c", "d"), ("d", "d")]) == [("a", "b", "c")]
    assert cycles([("a", "b"), ("b", "c")]) == []
    assert {"class Session", "class Agent", "module session/_journal.py"} <= set(large(10, 10))
    here = Path(__file__)
    assert private_reads(here.read_text(), here.name) == [], "this module keeps the rule too"
