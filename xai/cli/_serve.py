"""``xai serve``: the HTTP + SSE gateway (docs/serve.md) over an in-process ``AgentHost``,
or over host actors on a Ray cluster (``--ray``, docs/scale-out.md).

The model comes from ``LLM_*``; without it, the scripted model of ``xai demo`` answers
over real HTTP from xai's OpenAI-wire test server (offline). Loopback by default;
beyond it the token in ``XAI_SERVE_TOKEN`` is required (clients send it as a bearer token).
"""

from __future__ import annotations

import argparse
import functools
import os
import re
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import NamedTuple

import anyio
import msgspec

from xai.agent import AgentHost
from xai.cli._errors import port_error
from xai.cli._signals import stop_on_signal
from xai.config import LLMConfig, default_home
from xai.exceptions import UsageError
from xai.providers import OpenAIProvider
from xai.serve import READ_TIMEOUT, Backend, LocalBackend, check_bind, create_app, serve_app

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
    serve.add_argument(
        "--root", type=Path, help="directory of the Agents (default: $XAI_HOME/serve)"
    )
    serve.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    serve.add_argument("--port", type=int, default=8000, help="port (default 8000; 0: any free)")
    serve.add_argument(
        "--allowed-host",
        action="append",
        dest="allowed_hosts",
        metavar="NAME",
        help="a host name the server answers for besides the loopback names and its address "
        "(the Host of requests; repeat for more). With a token and none given, any host.",
    )
    serve.add_argument(
        "--read-timeout",
        type=float,
        default=READ_TIMEOUT,
        metavar="SECONDS",
        help=f"the longest a request may take to arrive, its head and its body "
        f"(default {READ_TIMEOUT:g}); a stalled one is dropped",
    )
    serve.add_argument(
        "--max-agents", type=int, help="Agents running at once (idle ones are suspended past it)"
    )
    serve.add_argument(
        "--ray",
        metavar="ADDRESS",
        help="host the Agents on the Ray cluster at ADDRESS (host:port of its head; "
        "--root must be a directory every node shares; docs/scale-out.md)",
    )
    serve.add_argument("--hosts", type=int, default=2, help="with --ray: host actors (default 2)")
    serve.add_argument(
        "--chroma",
        metavar="HOST:PORT",
        help="with --ray: the Chroma server of the memory indexes (default: an embedded store "
        "under --root/.index, for one machine only)",
    )


def serve_command(args: argparse.Namespace) -> int:
    if not 0 <= args.port <= 65535:
        raise UsageError(f"--port {args.port}: 0-65535")
    if not 0 < args.read_timeout < float("inf"):
        raise UsageError(f"--read-timeout {args.read_timeout:g}: more than 0 seconds")
    for name in args.allowed_hosts or ():
        if not _HOST_NAME.fullmatch(name):
            raise UsageError(
                f"--allowed-host {name!r}: a host name or address as a Host header names it "
                "(letters, digits, - . : [ ]; no scheme, path or wildcard)"
            )
    token = os.environ.get(TOKEN_VARIABLE) or None
    host = args.host[1:-1] if args.host.startswith("[") and args.host.endswith("]") else args.host
    check_bind(host, token)  # before anything starts
    root = (args.root or default_home() / "serve").expanduser()
    ray_backend = None if args.ray is None else _ray_backend(args, root)
    gateway = Gateway(token, args.allowed_hosts, args.read_timeout)
    return anyio.run(_serve, root, host, args.port, args.max_agents, gateway, ray_backend)


_HOST_NAME = re.compile(r"[A-Za-z0-9.:\[\]-]{1,255}")


class Gateway(NamedTuple):
    """What the app checks (``create_app``'s options)."""

    token: str | None
    allowed_hosts: list[str] | None
    read_timeout: float


def _ray_backend(args: argparse.Namespace, root: Path) -> Callable[[], Backend]:
    """Checks the ``--ray`` options now; the backend is made once the gateway runs."""
    if args.hosts < 1:
        raise UsageError(f"--hosts {args.hosts}: at least 1")
    chroma: tuple[str, int] | None = None
    if args.chroma is not None:
        name, _, number = str(args.chroma).rpartition(":")
        if not name or not number.isdigit():
            raise UsageError(f"--chroma {args.chroma}: HOST:PORT")
        chroma = (name, int(number))
    config = LLMConfig.from_env()
    if not config.is_configured:
        raise UsageError("--ray: set LLM_* (the offline scripted model runs in-process only)")
    try:
        import ray

        from xai.cluster import NAMESPACE, HostSpec, RayHosts, llm_setup
    except ImportError as error:
        raise UsageError(f"--ray needs the xai[ray] extra ({error})") from None

    def make() -> Backend:
        ray.init(address=args.ray, namespace=NAMESPACE)
        spec = HostSpec(
            root=str(root.resolve()),
            chroma_host=chroma[0] if chroma else None,
            chroma_port=chroma[1] if chroma else None,
            max_agents=args.max_agents,
        )
        setup = functools.partial(llm_setup, msgspec.json.encode(config))
        return RayHosts(args.hosts, spec, setup)

    return make


async def _serve(
    root: Path,
    host: str,
    port: int,
    max_agents: int | None,
    gateway: Gateway,
    ray_backend: Callable[[], Backend] | None = None,
) -> int:
    @asynccontextmanager
    async def backend() -> AsyncIterator[Backend]:
        if ray_backend is not None:  # the host actors outlive the gateway (detached)
            yield ray_backend()
            return
        config = LLMConfig.from_env()
        async with AsyncExitStack() as stack:
            tools = []
            if not config.is_configured:
                from xai.cli._demo import get_weather
                from xai.testing import OpenAIWireServer, demo_model

                server = await stack.enter_async_context(OpenAIWireServer(keep_requests=False))
                server.script.add_responder(demo_model)
                config = server.llm_config()
                tools.append(get_weather)
                print(
                    "xai serve: no LLM_* set: a scripted model answers (offline)", file=sys.stderr
                )
            provider = await stack.enter_async_context(OpenAIProvider(config))
            agents = AgentHost(root, lambda _: provider, max_agents=max_agents, tools=tools)
            yield LocalBackend(await stack.enter_async_context(agents))

    # The backend starts before the socket is bound: a directory that cannot be used fails
    # here, as one typed error, and "listening at" is printed only by a gateway that works.
    async with backend() as running:
        app = create_app(
            running,
            token=gateway.token,
            allowed_hosts=gateway.allowed_hosts,
            read_timeout=gateway.read_timeout,
        )

        def ready(url: str) -> None:
            print(f"xai serve: listening at {url}", file=sys.stderr, flush=True)
            key = app.state.guard.login_key
            page = f"{url}/login?key={key}  (a one-time link)" if key else f"{url}/"
            print(f"xai serve: the web page: {page}", file=sys.stderr, flush=True)

        stop = anyio.Event()
        async with anyio.create_task_group() as group:
            # Ctrl-C or SIGTERM: stop serving, then the host closes its Agents (their
            # Sessions' memory adjudicated) before the process ends.
            group.start_soon(stop_on_signal, stop)
            try:
                await serve_app(app, host, port, ready=ready, stop=stop)
            except OSError as error:  # only binding raises one out of the server
                raise port_error(error, host, port, "--port") from None
            group.cancel_scope.cancel()
    return 0
