"""The error contract: every public error lives in ``xai.exceptions``, and the tree drawn in
its docstring is the class tree, class for class."""

from __future__ import annotations

import importlib
import inspect
import re

import xai.exceptions as exceptions
from tests.test_architecture import PACKAGE

_BRANCH = re.compile(r"^(?P<indent>[ │]*)(?:├── |└── )?(?P<name>[A-Z]\w+)")


def drawn_tree(doc: str) -> dict[str, str | None]:
    """Each class named in the drawing, with the class drawn as its parent."""
    parents: dict[str, str | None] = {}
    stack: list[tuple[int, str]] = []
    for line in doc.splitlines():
        body = line[4:] if line.startswith("    ") else None
        if body is None or not body.strip():
            continue
        found = _BRANCH.match(body)
        if found is None or not found.group("name").endswith(("Error", "Stopped")):
            continue
        depth = len(found.group("indent")) // 4 + (body.lstrip(" │")[:1] in "├└")
        while stack and stack[-1][0] >= depth:
            stack.pop()
        parents[found.group("name")] = stack[-1][1] if stack else None
        stack.append((depth, found.group("name")))
    return parents


def class_tree() -> dict[str, str | None]:
    tree: dict[str, str | None] = {}
    for name in exceptions.__all__:
        cls = getattr(exceptions, name)
        base = cls.__bases__[0]
        tree[name] = base.__name__ if base.__module__ == exceptions.__name__ else None
    return tree


def test_the_docstring_draws_the_class_tree() -> None:
    assert exceptions.__doc__ is not None
    assert drawn_tree(exceptions.__doc__) == class_tree()


def test_every_public_error_is_in_exceptions() -> None:
    """What a package exports as an error is an ``xai.exceptions`` class (re-exported), never
    one of its own. ``xai.testing`` keeps the errors of its test doubles (they signal misuse of
    the double, not of the library); private signals such as ``serve``'s ``Refused`` never
    leave their package."""
    exported = set(exceptions.__all__)
    assert exported == {
        name
        for name, value in vars(exceptions).items()
        if inspect.isclass(value) and issubclass(value, BaseException)
        and value.__module__ == exceptions.__name__
    }  # fmt: skip
    elsewhere: list[str] = []
    for package in sorted(p.parent for p in PACKAGE.glob("*/__init__.py")):
        if package.name == "testing":
            continue
        module = importlib.import_module(f"xai.{package.name}")
        for name in getattr(module, "__all__", ()):
            value = getattr(module, name)
            error = inspect.isclass(value) and issubclass(value, BaseException)
            if error and value.__module__ != exceptions.__name__:
                elsewhere.append(f"xai.{package.name}.{name} ({value.__module__})")
    assert not elsewhere, "errors exported from outside xai/exceptions.py:\n" + "\n".join(elsewhere)


def test_the_tree_check_can_fail() -> None:
    drawing = (
        "    XaiError\n"
        "    ├── UsageError    wrong use\n"
        "    │   └── NotFoundError\n"
        "    └── RunError\n"
    )
    assert drawn_tree(drawing) == {
        "XaiError": None,
        "UsageError": "XaiError",
        "NotFoundError": "UsageError",
        "RunError": "XaiError",
    }
    assert drawn_tree(drawing) != class_tree()
