"""``/mood`` in ``xai chat``: the mood view of the host API, in lines for people."""

from __future__ import annotations

import time

from xai.agent import MoodView
from xai.mood import Mood, MoodState

__all__ = ["mood_lines"]


def _word(mood: Mood) -> str:
    v, a = mood.valence, mood.arousal
    if abs(v) < 0.15 and abs(a) < 0.15:
        return "neutral"
    feel = "pleasant" if v >= 0.15 else "unpleasant" if v <= -0.15 else "even"
    energy = "activated" if a >= 0.15 else "calm" if a <= -0.15 else ""
    return f"{feel}, {energy}" if energy else feel


def _mood(mood: Mood) -> str:
    emotions = ", ".join(f"{k} {v:.1f}" for k, v in sorted(mood.emotions.items()))
    extra = f"  [{emotions}]" if emotions else ""
    return f"valence {mood.valence:+.2f}  arousal {mood.arousal:+.2f}  ({_word(mood)}){extra}"


def mood_lines(view: MoodView, session: MoodState | None) -> list[str]:
    """The user's and the Agent's mood now, this conversation's copy, the last digests."""
    if not view.enabled:
        return ["(mood is off: AgentConfig(mood=MoodConfig(enabled=False)))"]
    lines = [f"user:   {_mood(view.user)}", f"agent:  {_mood(view.agent)}"]
    base = view.baseline
    lines.append(f"        (the agent rests at {base.valence:+.2f} / {base.arousal:+.2f})")
    if session is not None:
        lines.append(f"this conversation: user {_mood(session.user)}")
    for entry in view.history[-5:]:
        when = time.strftime("%Y-%m-%d %H:%M", time.localtime(entry.at))
        lines.append(
            f"  {when}  session {entry.session_id}: user valence "
            f"{entry.before.user.valence:+.2f} -> {entry.after.user.valence:+.2f} "
            f"({len(entry.deltas)} deltas)"
        )
    return lines
