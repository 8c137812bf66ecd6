"""The ```python blocks of README.md and docs/**/*.md, as the reader sees them.

A block runs offline unless the line just before its fence is ``NEEDS_MODEL``
(an HTML comment, invisible on the rendered page): those need ``LLM_*``. A block marked
``DEMO_MODEL`` needs ``LLM_*`` too, and ``tests/test_readme.py`` runs it with them pointed at
``python -m xai.testing serve --demo`` (the README's first example).
"""

from __future__ import annotations

import re
from pathlib import Path

import msgspec

ROOT = Path(__file__).resolve().parent.parent
NEEDS_MODEL = "<!-- needs a model: LLM_* -->"
DEMO_MODEL = "<!-- needs a model: LLM_* (CI: python -m xai.testing serve --demo) -->"
_FENCE = re.compile(r"^```python\n(.*?)^```$", re.DOTALL | re.MULTILINE)


class Snippet(msgspec.Struct, frozen=True):
    name: str
    """``PATH:LINE`` of the fence, e.g. ``docs/agent.md:12``."""
    code: str
    marker: str | None
    """The HTML comment on the line just before the fence, if there is one."""

    @property
    def needs_model(self) -> bool:
        return self.marker in (NEEDS_MODEL, DEMO_MODEL)


def markdown_files() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def snippets(path: Path) -> list[Snippet]:
    text = path.read_text(encoding="utf-8")
    found = []
    for match in _FENCE.finditer(text):
        before = text[: match.start()]
        previous = before.rstrip("\n").rsplit("\n", 1)[-1]
        line = before.count("\n") + 1
        name = f"{path.relative_to(ROOT)}:{line}"
        marker = previous if previous.startswith("<!--") else None
        found.append(Snippet(name, match.group(1), marker))
    return found
