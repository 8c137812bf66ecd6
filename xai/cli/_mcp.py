"""``xai mcp serve``: an Agent's memory and Sessions over MCP (stdio, or streamable HTTP).

The model comes from ``LLM_*``; without it, the scripted model of ``xai demo`` answers
over real HTTP from xai's OpenAI-wire test server (offline). The Agent's directory lock
holds: a second server on the same directory fails with ``AgentLockedError`` (exit 2).
"""

from __future__ import annotations

import argparse
import sys
from contextlib import AsyncExitStack
from pathlib import Path

import anyio

from xai.agent import Agent, AgentConfig
from xai.cli._errors import port_error
from xai.cli._signals import stop_on_signal
from xai.config import LLMConfig
from xai.exceptions import ConfigurationError
from xai.providers import OpenAIProvider
from xai.session import SessionConfig

__all__ = ["add_mcp_parser", "mcp_command", "parse_address"]


def add_mcp_parser(
    sub: argparse._SubParsersAction[argparse.ArgumentParser], common: argparse.ArgumentParser
) -> None:
    mcp = sub.add_parser("mcp", help="serve an Agent over MCP (needs xai-actors[mcp])")
    verbs = mcp.add_subparsers(dest="mcp_command", metavar="VERB", required=True)
    serve = verbs.add_parser(
        "serve",
        parents=[common],
        help="expose an Agent's memory and Sessions as MCP tools",
        description="Tools: search_memory, remember (the Agent adjudicates), forget, "
        "recent_facts, send_message, close_session. stdio unless --http is given.",
    )
    serve.add_argument(
        "--http",
        metavar="HOST:PORT",
        help="serve streamable HTTP at http://HOST:PORT/mcp instead of stdio "
        "(HOST defaults to 127.0.0.1; port 0 picks a free one)",
    )


def parse_address(text: str) -> tuple[str, int]:
    """``HOST:PORT``, ``:PORT`` or ``PORT``; the host defaults to 127.0.0.1."""
    host, _, port = text.rpartition(":")
    host = host.strip("[]") or "127.0.0.1"
    try:
        number = int(port)
    except ValueError:
        raise ConfigurationError(f"--http {text!r}: expected HOST:PORT") from None
    if not 0 <= number <= 65535:
        raise ConfigurationError(f"--http {text!r}: the port must be 0-65535")
    return host, number


async def serve_agent(directory: Path, http: str | None) -> int:
    from xai.mcp import serve_http, serve_stdio  # the SDK is needed from here on

    address = parse_address(http) if http else None
    config = LLMConfig.from_env()
    async with AsyncExitStack() as stack:
        if not config.is_configured:
            from xai.testing import OpenAIWireServer, demo_model

            server = await stack.enter_async_context(OpenAIWireServer(keep_requests=False))
            server.script.add_responder(demo_model)
            config = server.llm_config()
            print("xai mcp: no LLM_* set: a scripted model answers (offline)", file=sys.stderr)
        provider = await stack.enter_async_context(OpenAIProvider(config))
        agent = Agent(
            directory, provider, config=AgentConfig(session=SessionConfig(extract_memory=True))
        )
        await stack.enter_async_context(agent)
        if address is None:
            await serve_stdio(agent)
        else:

            def ready(url: str) -> None:
                print(f"xai mcp: agent {agent.id} at {url}", file=sys.stderr, flush=True)

            stop = anyio.Event()
            async with anyio.create_task_group() as group:
                # Ctrl-C or SIGTERM: stop serving, then the Agent closes its Sessions (their
                # memory candidates adjudicated) before the process ends.
                group.start_soon(stop_on_signal, stop)
                try:
                    await serve_http(agent, *address, ready=ready, stop=stop)
                except OSError as error:  # only binding raises one out of the server
                    raise port_error(error, *address, "--http") from None
                group.cancel_scope.cancel()
    return 0


def mcp_command(args: argparse.Namespace, default_dir: Path) -> int:
    directory = (args.agent_dir or default_dir).expanduser()
    return anyio.run(serve_agent, directory, args.http)
