"""An Agent that greets the user every morning using what it remembers.

The user talks to the Agent one evening (they are tired, they have an exam);
closing that Session has the Agent adjudicate what was said into long-term
memory. A wake-up on ``Cron(expression="0 8 * * *")`` (08:00 in Berlin) then
fires the next morning: its builder reads the memory and writes the first
input of a new Session (origin ``agent``), and the model answers it with a
greeting, printed as it streams from the Agent's events.

Offline (default): xai's OpenAI-wire test server plays the model over real
HTTP, with three responders: memory extraction, the memory judge, and the
conversation. Online: set LLM_API_KEY, LLM_BASE_URL and LLM_MODEL and a real
model does all three (embeddings stay local unless EMBEDDING_MODEL is set).

Either way time is a ``FakeClock``: the script moves it from 22:00 to 08:00
by hand, so the night passes at once and the run takes seconds, online too.
In an application, leave ``clock=`` out (the Agent uses the system clock).

    python examples/proactive_wakeup.py
"""

from __future__ import annotations

import json
import re
import tempfile
import textwrap
from collections.abc import Mapping
from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo

import anyio

from xai import LLMConfig, OpenAIProvider, TextDelta
from xai.agent import Agent, Cron, FakeClock, Persona, Wakeup
from xai.events import AgentEvent, MemoryDecided, SessionEnded, WakeupFired, WakeupSkipped
from xai.memory import JUDGE_MARKER, LongTermMemory
from xai.session import EXTRACTION_MARKER, Subscription
from xai.testing import OpenAIWireServer, Reply

TIMEZONE = "Europe/Berlin"
ZONE = ZoneInfo(TIMEZONE)
EVENING = datetime(2027, 1, 14, 22, 0, tzinfo=ZONE)  # a Thursday
GREETING_MARKER = "[morning greeting]"

USER_SAYS = (
    "Evening! I'm exhausted, I stayed up late studying chemistry.",
    "My chemistry exam is on Friday at 9 and I'm nervous about it.",
)


# -- the builder: the wake-up's first input, made from memory ----------------------------


async def morning_greeting(memory: LongTermMemory, payload: object) -> str | None:
    """Registered as "morning_greeting"; returning None skips the morning."""
    facts = sorted(memory.facts(), key=lambda fact: fact.tier != "L2")[:5]  # stable first
    if not facts:
        return None  # nothing to be personal about
    today = datetime.fromtimestamp(memory.clock(), ZONE).strftime("%A %H:%M")
    remembered = "\n".join(f"- {fact.text}" for fact in facts)
    return (
        f"{GREETING_MARKER} It is {today} for the user. Greet them good morning in two or "
        f"three warm sentences, using what you remember about them:\n{remembered}"
    )


# -- the offline stand-in for the model (online, a real model does all this) --------------

EXTRACTED = {  # what a model would pick out of each user line
    USER_SAYS[0]: [("The user is exhausted from studying late.", "event")],
    USER_SAYS[1]: [
        ("The user's chemistry exam is on Friday at 9 am.", "commitment"),
        ("The user is nervous about the chemistry exam.", "fact"),
    ],
}
MERGED = "The user's chemistry exam is on Friday at 9 am, and they are nervous about it."


def last_content(body: Mapping[str, Any]) -> str:
    content = body["messages"][-1].get("content")
    return content if isinstance(content, str) else ""


def extractor(body: Mapping[str, Any]) -> Reply | None:
    """Memory extraction: the request lists the turn as `[message id] USER: text` lines."""
    text = last_content(body)
    if not text.startswith(EXTRACTION_MARKER):
        return None
    candidates = [
        {"text": point, "kind": kind, "confidence": 0.9, "evidence": [message_id]}
        for message_id, said in re.findall(r"^\[(\w+)\] USER: (.*)$", text, re.MULTILINE)
        for point, kind in EXTRACTED.get(said, [])
    ]
    return Reply(text=json.dumps({"candidates": candidates}))


def judge(body: Mapping[str, Any]) -> Reply | None:
    """The memory judge: a candidate close to known facts, which are numbered [1], [2], ..."""
    text = last_content(body)
    if not text.startswith(JUDGE_MARKER):
        return None
    known = re.findall(r"^\[(\d+)\] (.*)$", text, re.MULTILINE)
    exam = next((int(n) for n, fact in known if "exam" in fact), None)
    if exam is None:
        verdict: dict[str, Any] = {"decision": "add", "reason": "a different point"}
    else:
        verdict = {
            "decision": "update",
            "fact": exam,
            "text": MERGED,
            "important": True,
            "reason": "the same exam, with how the user feels about it",
        }
    return Reply(text=json.dumps(verdict))


SECOND_PERSON = {"The user's ": "your ", "The user is ": "you are ", "they are": "you are"}


def you(fact: str) -> str:
    """A remembered fact, said to the user."""
    for said, meant in SECOND_PERSON.items():
        fact = fact.replace(said, meant)
    return fact.rstrip(".")


def conversation(body: Mapping[str, Any]) -> Reply:
    """The conversation: the evening chat, and the morning greeting from what it is told."""
    text = last_content(body)
    if "exam" in text and not text.startswith(GREETING_MARKER):
        return Reply(text="You have prepared for it. Sleep now; I will say good morning.")
    if not text.startswith(GREETING_MARKER):
        return Reply(text="That sounds like a long day. Be kind to yourself tonight.")
    remembered = [you(line) for line in re.findall(r"^- (.*)$", text, re.MULTILINE)]
    return Reply(
        text=f"Good morning! I remember that {remembered[0]}. "
        + "".join(f"Also, {line}. " for line in remembered[1:])
        + "Have a good breakfast and take it one question at a time. Good luck!"
    )


# -- the run ------------------------------------------------------------------------------


def local(timestamp: float) -> str:
    return datetime.fromtimestamp(timestamp, ZONE).strftime("%a %H:%M")


async def print_greeting(events: Subscription[AgentEvent], clock: FakeClock) -> None:
    """Follow the Agent's events: the wake-up firing, then its Session's answer as it streams."""
    greeting: str | None = None
    async for event in events:
        body = event.event
        if isinstance(body, WakeupFired):
            greeting = event.session_id
            print(f"[{local(clock.now())}] wake-up {body.wakeup_id!r} fired ({body.reason})")
            print(textwrap.indent(body.input, "  > "))
        elif isinstance(body, WakeupSkipped):
            print(f"[{local(clock.now())}] wake-up {body.wakeup_id!r} skipped: {body.reason}")
            return
        elif event.session_id == greeting and isinstance(body, TextDelta):
            print(body.text, end="", flush=True)
        elif event.session_id == greeting and isinstance(body, SessionEnded):
            print()
            return


async def main() -> None:
    config = LLMConfig.from_env()
    server = None
    if not config.is_configured:
        server = OpenAIWireServer().start()
        for responder in (extractor, judge, conversation):
            server.script.add_responder(responder)
        config = server.llm_config()
        print(f"(scripted model at {server.base_url})")
    clock = FakeClock(EVENING.timestamp())
    try:
        with tempfile.TemporaryDirectory() as directory:
            async with OpenAIProvider(config) as provider:
                agent = Agent(
                    directory,
                    provider,
                    persona=Persona(name="Sol", role="a study companion"),
                    clock=clock,
                )
                # Builders are code, not data: register them before the Agent starts.
                agent.scheduler.register_builder("morning_greeting", morning_greeting)
                async with agent:
                    # The evening: the user says something worth remembering.
                    decisions = agent.events()
                    evening = await agent.open_session("an evening chat")
                    for line in USER_SAYS:
                        print(f"[{local(clock.now())}] user: {line}")
                        print(f"[{local(clock.now())}] Sol: {(await evening.send(line)).text}")
                    await evening.close()  # what it learned is adjudicated before it goes
                    while (event := decisions.get_nowait()) is not None:
                        if isinstance(event.event, MemoryDecided):
                            print(f"  memory: {event.event.decision} ({event.event.reason})")
                    decisions.close()

                    # Every morning at 08:00 (local time), a greeting made from memory.
                    state = agent.scheduler.add(
                        Wakeup(
                            id="good-morning",
                            trigger=Cron(expression="0 8 * * *", timezone=TIMEZONE),
                            builder="morning_greeting",
                            purpose="a good-morning greeting",
                        )
                    )
                    assert state.next_at is not None
                    print(f"next wake-up: {local(state.next_at)}")

                    # The night passes at once: move the fake clock to 08:00.
                    events = agent.events()
                    await clock.advance(state.next_at - clock.now())
                    with anyio.fail_after(120):  # real seconds, for a slow online model
                        await print_greeting(events, clock)
    finally:
        if server is not None:
            server.stop()


if __name__ == "__main__":
    anyio.run(main)
