"""``ask_sync`` and ``ask``: one call, one answer, for scripts and notebooks.

The smallest xai program used to be three nested ``async with`` blocks (provider, Agent,
Session). These wrap exactly that, through the public API, for the common case of one
prompt and one answer:

- without ``agent``: a Session of its own (in memory, nothing on disk) runs the prompt, with
  your ``instructions`` and ``tools``, and is closed;
- with ``agent="fern"``: the Agent in ``<home>/agents/fern`` (the one ``xai chat --agent fern``
  talks to) opens a Session with its persona and what it remembers, answers, and closes the
  Session, so what it learned is adjudicated into long-term memory before the call returns.
  The next call (or ``xai chat``) starts from it.

The model comes from ``model``: a model string such as ``"openai:gpt-4.1-mini"`` or
``"ollama:qwen3"`` (``LLMConfig.from_model``), or a whole ``LLMConfig``; else from the
environment (``LLM_MODEL``, ``LLM_BASE_URL``, ``LLM_API_KEY``; ``LLM_MODEL`` may be a model
string too). ``ask`` also takes a ready ``provider``, which stays yours to close. ``ask_sync``
does not: each call runs in an event loop of its own, and a provider's HTTP connections
belong to the loop they were opened in, so it builds (and closes) its own every call.

A failed turn does not raise: the ``TurnOutcome`` says ``status`` and ``error``, as
``Session.send`` does. What raises is a wrong call: a ``ConfigurationError`` when no model is
configured, and a ``UsageError`` from ``ask_sync`` inside a running event loop (a notebook
cell, an ``async def``), where ``await ask(...)`` is the form to use.
"""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Callable, Iterable
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import anyio

from xai.config import LLMConfig, default_home, is_plain_name
from xai.exceptions import UsageError
from xai.messages import TurnOutcome
from xai.providers import OpenAIProvider, Provider
from xai.tools import Tool, ToolSet

__all__ = ["agent_directory", "ask", "ask_sync"]

Tools = ToolSet | Iterable[Tool | Callable[..., Any]]


def agent_directory(agent: str | os.PathLike[str]) -> Path:
    """Where ``agent`` lives: a plain name is ``<home>/agents/NAME`` (as ``xai chat --agent
    NAME``); a path (a ``Path``, or a string with a separator) is that folder."""
    if isinstance(agent, str) and is_plain_name(agent):
        return default_home() / "agents" / agent
    return Path(agent).expanduser()


async def ask(
    prompt: str,
    *,
    agent: str | os.PathLike[str] | None = None,
    model: str | LLMConfig | None = None,
    provider: Provider | None = None,
    instructions: str | None = None,
    tools: Tools = (),
) -> TurnOutcome:
    """Answer ``prompt`` in one call (see the module docstring); ``await`` it."""
    # Imported here: the Agent and the Session pull in the memory store (chromadb) and
    # the journal, which a script that only imports xai should not pay for.
    from xai.agent import Agent
    from xai.session import Session

    async with AsyncExitStack() as stack:
        if provider is None:
            if isinstance(model, LLMConfig):
                config = model
            else:
                config = LLMConfig.from_model(model) if model is not None else LLMConfig.from_env()
            provider = await stack.enter_async_context(OpenAIProvider(config))
        if agent is None:
            session = await stack.enter_async_context(
                Session(provider, tools=tools, system=instructions)
            )
            alone: TurnOutcome = await session.send(prompt)
            return alone
        owner = await stack.enter_async_context(
            Agent(agent_directory(agent), provider, tools=tools)
        )
        # No purpose: the prefix is what the Agent holds most important, not what resembles
        # the prompt ("what do you remember about me?" resembles none of the facts it asks for).
        if instructions is None:
            session = await owner.open_session()
        else:
            session = await owner.open_session(instructions=instructions)
        outcome: TurnOutcome = await session.send(prompt)
        await session.close()  # its memory candidates are adjudicated before we return
        return outcome


def ask_sync(
    prompt: str,
    *,
    agent: str | os.PathLike[str] | None = None,
    model: str | LLMConfig | None = None,
    instructions: str | None = None,
    tools: Tools = (),
) -> TurnOutcome:
    """``ask`` for code without an event loop of its own: a script, a plain ``def``.

    Raises ``UsageError`` when called inside a running event loop (``await ask(...)``
    there): starting a second loop in that thread would fail, or block the first one.
    """
    _refuse_inside_a_loop()

    async def main() -> TurnOutcome:
        return await ask(
            prompt,
            agent=agent,
            model=model,
            instructions=instructions,
            tools=tools,
        )

    return anyio.run(main)


def _refuse_inside_a_loop() -> None:
    try:
        asyncio.get_running_loop()
    except RuntimeError:  # the documented way to learn that no asyncio loop runs here
        running = _trio_runs()
    else:
        running = True
    if running:
        raise UsageError(
            "ask_sync() was called inside a running event loop (a notebook cell or async "
            "code): use `await xai.ask(...)` there"
        )


def _trio_runs() -> bool:
    trio = sys.modules.get("trio")
    if trio is None:  # trio was never imported: no trio loop can be running
        return False
    try:
        trio.lowlevel.current_trio_token()
    except RuntimeError:
        return False
    return True
