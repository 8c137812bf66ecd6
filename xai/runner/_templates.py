"""The shipped prompt templates and the keyword choice of ``prompt_mode: auto``."""

from __future__ import annotations

import re
from importlib import resources

__all__ = ["DEFAULT_AUTO_MAP", "builtin_templates", "choose_template"]

DEFAULT_AUTO_MAP: dict[str, list[str]] = {
    "file_expert": ["file", "files", "folder", "read", "search", "grep", ".md", ".txt"],
    "calculation_expert": ["calculate", "rate", "percent", "%", "sum", "average", "ratio"],
    "conversion_expert": ["convert", "json", "yaml", "csv", "markdown", "table", "format"],
}


ORDER = ("general_tool_agent", "file_expert", "calculation_expert", "conversion_expert")


def builtin_templates() -> dict[str, str]:
    """The four shipped templates, in a fixed order (compare mode reports them in it)."""
    folder = resources.files("xai.runner").joinpath("templates")
    return {name: folder.joinpath(f"{name}.md").read_text("utf-8").strip() for name in ORDER}


def choose_template(text: str, mapping: dict[str, list[str]], default: str) -> str:
    """The template whose keywords occur most often in ``text`` (ties: map order)."""
    words = re.findall(r"[\w.%]+", text.lower())
    best, best_hits = default, 0
    for name, keywords in (mapping or DEFAULT_AUTO_MAP).items():
        wanted = {k.lower() for k in keywords}
        # Whole words only ("sum" is not in "summarise"); ".md" also matches "notes.md".
        hits = sum(
            1
            for w in words
            if w in wanted or any(w.endswith(k) for k in wanted if k.startswith("."))
        )
        if hits > best_hits:
            best, best_hits = name, hits
    return best
