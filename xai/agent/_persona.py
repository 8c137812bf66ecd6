"""The Agent's persona (L3): who it is, kept in ``persona.md`` under the Agent's directory.

The file is markdown with a small front matter of ``key: value`` lines::

    ---
    name: Fern
    role: a gardening assistant
    tone: warm and brief
    language: English
    temperament: calm
    ---
    Free-form notes: values, habits, what it knows about itself.

It changes only through ``Agent.set_persona`` (an explicit call, or a
consolidation step the application triggers) and is injected into every
Session the Agent opens.
"""

from __future__ import annotations

from pathlib import Path

import msgspec

from xai._files import write_atomic
from xai.exceptions import ConfigurationError
from xai.mood import Mood, MoodStyles, baseline_of

__all__ = ["Persona", "load_persona", "save_persona"]

_FIELDS = ("name", "role", "tone", "language", "temperament")


class Persona(msgspec.Struct, frozen=True, kw_only=True):
    name: str = "xai"
    role: str = "a helpful assistant"
    tone: str = "friendly and concise"
    language: str = ""
    """The language to answer in; empty means the user's."""
    temperament: str = ""
    """Where the Agent's own mood rests (its baseline): ``even`` (the default), ``cheerful``,
    ``calm``, ``lively``, ``serious``, ``melancholic`` or ``"valence, arousal"``."""
    notes: str = ""
    """Markdown: anything else the Agent knows about itself."""

    def __post_init__(self) -> None:
        try:
            baseline_of(self.temperament)
        except ValueError as exc:
            raise ConfigurationError(str(exc)) from None

    def baseline(self) -> Mood:
        """The Agent's resting mood, from its temperament."""
        return baseline_of(self.temperament)

    def mood_styles(self) -> MoodStyles:
        """How this persona adapts to the user's mood: one line per state (the Session's
        system prompt carries the one the user's mood calls for; none when neutral)."""
        return MoodStyles(
            positive="The user is in good spirits: match their energy, keep it light.",
            low="The user seems low: be gentle and patient, acknowledge how they feel, "
            "keep answers short and practical.",
            tense="The user seems frustrated or stressed: stay calm, skip pleasantries, "
            "go straight to what helps.",
        )

    def render(self) -> str:
        """The persona as system-prompt text."""
        lines = [f"You are {self.name}, {self.role}.", f"Your tone: {self.tone}."]
        if self.language:
            lines.append(f"Answer in {self.language}.")
        if self.notes.strip():
            lines.append(self.notes.strip())
        return "\n".join(lines)

    def to_markdown(self) -> str:
        head = "\n".join(
            f"{field}: {getattr(self, field)}"
            for field in _FIELDS
            if field != "temperament" or self.temperament
        )
        return f"---\n{head}\n---\n{self.notes.strip()}\n"


def _parse(text: str, path: Path) -> Persona:
    lines = text.splitlines()
    values: dict[str, str] = {}
    body_start = 0
    if lines and lines[0].strip() == "---":
        for number, line in enumerate(lines[1:], start=2):
            if line.strip() == "---":
                body_start = number
                break
            if not line.strip():
                continue
            key, sep, value = line.partition(":")
            key = key.strip().lower()
            if not sep or key not in _FIELDS:
                raise ConfigurationError(
                    f"{path}:{number}: expected one of {', '.join(_FIELDS)} as 'key: value', "
                    f"got {line!r}"
                )
            values[key] = value.strip()
        else:
            raise ConfigurationError(f"{path}: the front matter opened on line 1 is never closed")
    notes = "\n".join(lines[body_start:]).strip()
    return Persona(**values, notes=notes)


def load_persona(path: Path) -> Persona | None:
    """The persona stored at ``path``; ``None`` if there is no file yet."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    return _parse(text, path)


def save_persona(path: Path, persona: Persona) -> None:
    """Write atomically: a kill leaves the old file or the new one, never half of one."""
    write_atomic(path, persona.to_markdown().encode("utf-8"))
