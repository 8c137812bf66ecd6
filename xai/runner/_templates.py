"""The shipped prompt templates and the keyword choice of ``prompt_mode: auto``."""

from __future__ import annotations

from importlib import resources

__all__ = ["DEFAULT_AUTO_MAP", "builtin_templates", "choose_template"]

DEFAULT_AUTO_MAP: dict[str, list[str]] = {
    "file_expert": ["file", "files", "folder", "read", "search", "grep", ".md", ".txt"],
    "calculation_expert": ["calculate", "rate", "percent", "%", "sum", "average", "ratio"],
    "conversion_expert": ["convert", "json", "yaml", "csv", "markdown", "table", "format"],
}


def builtin_templates() -> dict[str, str]:
    folder = resources.files("xai.runner").joinpath("templates")
    return {
        item.name.removesuffix(".md"): item.read_text("utf-8").strip()
        for item in folder.iterdir()
        if item.name.endswith(".md")
    }


def choose_template(text: str, mapping: dict[str, list[str]], default: str) -> str:
    """The template whose keywords occur most often in ``text`` (ties: map order)."""
    lowered = text.lower()
    best, best_hits = default, 0
    for name, keywords in (mapping or DEFAULT_AUTO_MAP).items():
        hits = sum(lowered.count(k.lower()) for k in keywords)
        if hits > best_hits:
            best, best_hits = name, hits
    return best
