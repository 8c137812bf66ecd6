"""``xai serve``: the HTTP + SSE gateway (docs/serve.md) over an in-process ``AgentHost``.

The model comes from ``LLM_*``; without it, the scripted model of ``xai demo`` answers
over real HTTP from xai's OpenAI-wire test server (offline). Loopback by default;
beyond it the token in ``XAI_SERVE_TOKEN`` is required (clients send it as a bearer token).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path

import anyio

from xai.agent import AgentHost
from xai.cli._signals import stop_on_signal
from xai.config import LLMConfig
from xai.exceptions import UsageError
from xai.providers import OpenAIProvider
from xai.serve import Backend, LocalBackend, check_bind, create_app, serve_app

__all__ = ["TOKEN_VARIABLE", "add_serve_parser", "serve_command"]

TOKEN_VARIABLE = "XAI_SERVE_TOKEN"


def add_serve_parser(
    sub: argparse._SubParsersAction[argparse.ArgumentParser], common: argparse.ArgumentParser
) -> None:
    serve = sub.add_parser(
        "serve",
        parents=[common],
        help="serve Agents over HTTP + Server-Sent Events",
        description="An HTTP gateway to Agents hosted under --root by id: open a Session, "
        "send input, stream its events (resumable), close, list facts (docs/serve.md). "
        f"Binds 127.0.0.1 by default; any other address needs ${TOKEN_VARIABLE}.",
    )
    serve.add_argument("--root", type=Path, required=True, help="directory of the Agents")
    serve.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    serve.add_argument("--port", type=int, default=8000, help="port (default 8000; 0: any free)")
    serve.add_argument(
        "--max-agents", type=int, help="Agents running at once (idle ones are suspended past it)"
    )
    serve.add_argument(
        "--ray", metavar="ADDRESS", help="host the Agents on a Ray cluster (not available yet)"
    )


def serve_command(args: argparse.Namespace) -> int:
    if args.ray is not None:
        raise UsageError("--ray: the Ray backend is not available yet; serve in-process")
    if not 0 <= args.port <= 65535:
        raise UsageError(f"--port {args.port}: 0-65535")
    token = os.environ.get(TOKEN_VARIABLE) or None
    check_bind(args.host, token)  # before anything starts
    return anyio.run(_serve, args.root.expanduser(), args.host, args.port, args.max_agents, token)


async def _serve(
    root: Path, host: str, port: int, max_agents: int | None, token: str | None
) -> int:
    @asynccontextmanager
    async def backend() -> AsyncIterator[Backend]:
        config = LLMConfig.from_env()
        async with AsyncExitStack() as stack:
            tools = []
            if not config.is_configured:
                from xai.cli._demo import get_weather
                from xai.testing import OpenAIWireServer, demo_model

                server = await stack.enter_async_context(OpenAIWireServer())
                server.script.add_responder(demo_model)
                config = server.llm_config()
                tools.append(get_weather)
                print(
                    "xai serve: no LLM_* set: a scripted model answers (offline)", file=sys.stderr
                )
            provider = await stack.enter_async_context(OpenAIProvider(config))
            agents = AgentHost(root, lambda _: provider, max_agents=max_agents, tools=tools)
            yield LocalBackend(await stack.enter_async_context(agents))

    def ready(url: str) -> None:
        print(f"xai serve: listening at {url}", file=sys.stderr, flush=True)

    stop = anyio.Event()
    async with anyio.create_task_group() as group:
        # Ctrl-C or SIGTERM: stop serving, then the host closes its Agents (their Sessions'
        # memory adjudicated) before the process ends.
        group.start_soon(stop_on_signal, stop)
        await serve_app(create_app(backend, token=token), host, port, ready=ready, stop=stop)
        group.cancel_scope.cancel()
    return 0
