"""``demo_model``: the scripted model behind ``xai demo`` and the offline Quick start.

Canned, but it reads what it is sent. It answers memory extraction (a name from
"I'm Ada", a fact from each sentence that starts with "I", such as "I grow
tomatoes." -> "The user grows tomatoes.") and judging requests, plays a model
that calls the weather tool, answers from the memory in its system prompt
(names, "what do you remember about me?"), delegates when asked and greets on
wake-ups: enough to exercise the real Agent, Session, Query, journal and memory
code over real HTTP. A responder: ``server.script.add_responder(demo_model)``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from xai.memory import JUDGE_MARKER
from xai.session import EXTRACTION_MARKER
from xai.testing._script import Reply, ScriptedCall

__all__ = ["demo_model"]

_NAME = re.compile(r"(?:my name is|I'm|I am) ([A-Z]\w+)")
_REMEMBERED = re.compile(r"The user's name is (\w+)")
_USER_LINE = re.compile(r"^\[(\w+)\] USER: (.*)$", re.MULTILINE)
_FIRST_PERSON = re.compile(r"^I ([a-z]+) ([^.!?]+)")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
_IRREGULAR = {"am": "is", "have": "has", "do": "does", "go": "goes"}
_POSSESSIVE = re.compile(r"\b(my|me|mine|myself)\b")
_THEIR = {"my": "their", "me": "them", "mine": "theirs", "myself": "themselves"}


def _text(message: Mapping[str, Any]) -> str:
    content = message.get("content")
    return content if isinstance(content, str) else ""


def _third_person(verb: str) -> str:
    if verb in _IRREGULAR:
        return _IRREGULAR[verb]
    if verb.endswith(("s", "sh", "ch", "x", "z", "o")):
        return verb + "es"
    if verb.endswith("y") and verb[-2:-1] not in ("a", "e", "i", "o", "u"):
        return verb[:-1] + "ies"
    return verb + "s"


def _facts_said(said: str) -> list[str]:
    """What a user line tells about the user: its name, and each "I <verb> ..." sentence."""
    found = [f"The user's name is {m.group(1)}."] if (m := _NAME.search(said)) else []
    for sentence in _SENTENCE_END.split(said.strip()):
        if (first := _FIRST_PERSON.match(sentence)) is not None:
            rest = _POSSESSIVE.sub(lambda w: _THEIR[w.group(1)], first.group(2).strip())
            found.append(f"The user {_third_person(first.group(1))} {rest}.")
    return found


def _remembered(system: str) -> list[str]:
    """The facts of the memory prefix in a system prompt ("- FACT" lines after its heading)."""
    _, found, prefix = system.partition("What you remember from earlier conversations:")
    return [line[2:] for line in prefix.splitlines() if line.startswith("- ")] if found else []


def demo_model(body: Mapping[str, Any]) -> Reply | None:
    """Answer one chat request in OpenAI wire shape (see the module docstring)."""
    messages = body.get("messages") or [{}]
    last = messages[-1]
    content = _text(last)
    system = _text(messages[0]) if messages[0].get("role") == "system" else ""
    if content.startswith(EXTRACTION_MARKER):
        found = [
            {"text": fact, "kind": "fact", "confidence": 0.9, "evidence": [mid]}
            for mid, said in _USER_LINE.findall(content)
            for fact in _facts_said(said)
        ]
        return Reply(text=json.dumps({"candidates": found}))
    if content.startswith(JUDGE_MARKER):
        return Reply(text='{"decision": "reinforce", "fact": 1, "reason": "same person"}')
    if "helper working on one delegated task" in system:
        return Reply(text=f"(helper) Done: {content[:60]}", chunk_chars=6)
    if last.get("role") == "tool":
        return _after_tools(messages)
    lowered = content.lower()
    if "weather" in lowered:
        return Reply(
            thinking="Two cities; I can look both up at once.",
            text="Let me check both cities.",
            tool_calls=(
                ScriptedCall(name="get_weather", arguments={"city": "Paris"}),
                ScriptedCall(name="get_weather", arguments={"city": "Tokyo"}),
            ),
        )
    if "delegate" in lowered or "helper" in lowered:
        return Reply(
            text="I'll hand that to a helper.",
            tool_calls=(
                ScriptedCall(
                    name="delegate", arguments={"task": "List three things to pack for Tokyo."}
                ),
            ),
        )
    remembered = _REMEMBERED.search(system)
    if "about me" in lowered:
        facts = _remembered(system)
        answer = "You told me: " + " ".join(facts) if facts else "Nothing yet: tell me about you."
        return Reply(text=answer, chunk_chars=6)
    if "good morning" in lowered:
        who = f", {remembered.group(1)}" if remembered else ""
        return Reply(text=f"Good morning{who}! Anything I can help with today?", chunk_chars=5)
    if "name" in lowered and "my name is" not in lowered:
        earlier = [
            m.group(1)
            for message in messages[:-1]
            if message.get("role") == "user" and (m := _NAME.search(_text(message)))
        ]
        name = earlier[-1] if earlier else remembered.group(1) if remembered else None
        answer = f"Your name is {name}." if name else "You haven't told me."
        return Reply(text=answer, chunk_chars=4)
    if (match := _NAME.search(content)) is not None:
        return Reply(text=f"Nice to meet you, {match.group(1)}!", chunk_chars=4)
    return Reply(text="(scripted model) I know about weather, names and delegating.")


def _after_tools(messages: list[Mapping[str, Any]]) -> Reply:
    lines = []
    for message in messages:
        if message.get("role") != "tool":
            continue
        try:
            data = json.loads(_text(message))
        except ValueError:
            lines.append(_text(message))
            continue
        if isinstance(data, dict) and "city" in data:
            lines.append(f"{data['city']}: {data['condition']}, {data['fahrenheit']} °F")
        else:
            lines.append(str(data))
    return Reply(text="Here is what I found:\n- " + "\n- ".join(lines), chunk_chars=6)
