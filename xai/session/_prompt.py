"""The system prompt a Session assembles from the parts it was handed."""

from __future__ import annotations

import msgspec

from xai.mood import MoodSeed

__all__ = ["SystemPrompt"]


class SystemPrompt(msgspec.Struct, frozen=True, kw_only=True):
    """Parts handed to a Session at creation; it never fetches any of them itself.

    ``instructions``: what this Session is for. ``persona``: who the assistant
    is (the Agent's L3). ``memory_prefix``: what the Agent chose to remind it
    of, already packed to a budget. The Session adds the summary of compacted
    history itself.
    """

    instructions: str = ""
    persona: str = ""
    memory_prefix: str = ""
    mood: MoodSeed | None = None
    """The Agent's mood state, copied for this Session (``None``: the Session keeps no mood)."""
    style: str = ""
    """The style line the mood calls for (the Persona's words); it changes only when the
    user's mood passes a threshold, so the prompt's prefix stays cache-friendly."""

    def render(self, summary: str = "") -> str:
        parts: list[str] = []
        if self.persona.strip():
            parts.append(self.persona.strip())
        if self.instructions.strip():
            parts.append(self.instructions.strip())
        if self.memory_prefix.strip():
            parts.append(
                "What you remember from earlier conversations:\n" + self.memory_prefix.strip()
            )
        if self.style.strip():
            parts.append(self.style.strip())
        if summary.strip():
            parts.append("Summary of this conversation so far:\n" + summary.strip())
        return "\n\n".join(parts)
