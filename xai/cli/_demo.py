"""``xai demo``: a guided, non-interactive tour of a whole Agent.

Offline (no ``LLM_*``): a scripted model over real HTTP on 127.0.0.1, clearly
labelled; everything else is real — an Agent on disk, Sessions and their
journals, the tool loop, chromadb with the offline embedding model, the
ledger, delegation, a wake-up. With ``LLM_*`` set, the same tour runs
against the real model. Run it twice: the second run remembers the first.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any, TextIO

import anyio

from xai.agent import Agent, AgentConfig, At, Persona, Wakeup
from xai.cli._render import Printer, Renderer, session_ended, turn_done
from xai.config import LLMConfig
from xai.events import WakeupFired
from xai.providers import OpenAIProvider
from xai.session import Session
from xai.tools import tool

__all__ = ["fallback_reason", "get_weather", "run_demo"]

_WEATHER: dict[str, dict[str, Any]] = {
    "paris": {"city": "Paris", "condition": "light rain", "celsius": 14},
    "tokyo": {"city": "Tokyo", "condition": "clear", "celsius": 22},
    "lisbon": {"city": "Lisbon", "condition": "sunny", "celsius": 19},
}


@tool
def get_weather(city: str) -> dict[str, Any]:
    """Current weather for a city (offline demo data).

    Args:
        city: City name, e.g. "Paris".
    """
    found = _WEATHER.get(city.strip().lower())
    if found is None:
        raise ValueError(f"no weather data for {city!r}; try Paris, Tokyo or Lisbon")
    return {**found, "fahrenheit": round(found["celsius"] * 9 / 5 + 32, 1)}


def fallback_reason(config: LLMConfig) -> str:
    """Why the demo plays a scripted model: nothing set, or which variables are missing."""
    if config.model is None and config.api_key is None and config.base_url is None:
        return "no LLM_* set"
    missing = ["LLM_MODEL"] if config.model is None else []
    why = ""
    if config.api_key is None and not config.is_local:
        missing.append("LLM_API_KEY")
        where = config.base_url or "the OpenAI API"
        why = f" ({where} needs a key; a local LLM_BASE_URL does not)"
    verb = "is" if len(missing) == 1 else "are"
    return f"LLM_* incomplete: {' and '.join(missing)} {verb} missing{why}"


async def _turn(session: Session, text: str, printer: Printer) -> bool:
    printer.render.line(f"\nuser: {text}")
    outcome = await session.send(text)
    await printer.shown(turn_done(session.id, outcome.turn))  # its output is all on screen
    return outcome.error is None


async def run_demo(
    agent_dir: Path, *, env: Mapping[str, str] | None = None, out: TextIO | None = None
) -> int:
    stream = out or sys.stdout
    render = Renderer(stream)
    config = LLMConfig.from_env(env)
    async with AsyncExitStack() as stack:
        if config.is_configured:
            render.line(f"xai demo — live model {config.model!r} at {config.base_url or 'OpenAI'}")
        else:
            from xai.testing import OpenAIWireServer, demo_model

            server = await stack.enter_async_context(OpenAIWireServer(keep_requests=False))
            server.script.add_responder(demo_model)
            render.line(
                f"xai demo — {fallback_reason(config)}, so a SCRIPTED model answers over\n"
                f"real HTTP from xai's OpenAI-wire test server at {server.base_url};\n"
                "everything else is real. Set LLM_API_KEY, LLM_BASE_URL and LLM_MODEL to tour\n"
                "with a real model."
            )
            config = server.llm_config()
        provider = await stack.enter_async_context(OpenAIProvider(config))
        agent = Agent(
            agent_dir,
            provider,
            tools=[get_weather],
            persona=Persona(name="Iris", role="a concise, friendly assistant"),
            config=AgentConfig(),  # extraction, delegation, and a cap on each turn's output
        )
        await stack.enter_async_context(agent)
        known_before = len(agent.memory.facts())  # memory is open: no second ledger read
        render.line(
            f"\n1. An Agent lives in {agent_dir}: persona.md, memory/ (chromadb + ledger), "
            f"sessions/ (journals). It remembers {known_before} fact(s) from earlier runs."
        )
        printer = Printer(render, agent.events(buffer=10_000))
        ok = True
        async with anyio.create_task_group() as group:
            group.start_soon(printer.run)

            render.line("\n2. A Session: a tool call streamed, then the Session closes and its")
            render.line("   memory candidates are adjudicated into long-term memory.")
            first = await agent.open_session("weather and introductions")
            ok &= await _turn(
                first, "Hi, I'm Ada! What's the weather in Paris and Tokyo, in Fahrenheit?", printer
            )
            await first.close()
            await printer.shown(session_ended(first.id))  # its memory decisions came before
            for fact in agent.memory.facts():
                render.line(f"   remembered: {fact.text!r} (tier {fact.tier}, seen {fact.count}x)")

            render.line(
                "\n3. A second Session; its system prompt carries what the Agent remembers:"
            )
            second = await agent.open_session("greet the user by name")
            prefix = second.system.memory_prefix or "(nothing yet)"
            render.line("   " + prefix.replace("\n", "\n   "))
            ok &= await _turn(second, "Do you remember my name?", printer)

            render.line(
                "\n4. Delegation: the model hands a sub-task to a child Session the Agent owns."
            )
            ok &= await _turn(second, "Please ask a helper to plan my packing for Tokyo.", printer)
            await second.close()
            await printer.shown(session_ended(second.id))

            render.line(
                "\n5. A proactive wake-up: the Agent opens a Session by itself (origin agent)."
            )
            agent.scheduler.add(
                Wakeup(
                    id="demo-morning",
                    trigger=At(time=agent.clock.now() + 0.5),
                    text="Good morning! Greet the user by name.",
                )
            )
            with anyio.fail_after(30):
                fired = await printer.shown(
                    lambda e: (
                        isinstance(e.event, WakeupFired) and e.event.wakeup_id == "demo-morning"
                    )
                )
                if fired is not None and fired.session_id is not None:
                    await printer.shown(session_ended(fired.session_id))
            agent.scheduler.remove("demo-morning")
            group.cancel_scope.cancel()
        facts = agent.memory.facts()
        render.line(
            f"\n6. Done. {len(facts)} fact(s) in memory, {len(agent.memory.ledger())} decisions in "
            "the ledger."
        )
        if not ok:
            render.line("   A step failed (see above).")
        if facts:
            render.line("   Run `xai demo` again: the Agent will remember.")
        else:
            render.line("   Nothing is in memory, so a second run starts from scratch.")
    return 0 if ok else 1
