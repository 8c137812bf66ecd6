"""Serving an ASGI app with uvicorn on a socket of our own (``xai serve``, ``xai mcp serve``).

The socket is bound and listening before the URL is announced (port 0: a free one), so a
client that connects at once waits in the backlog until uvicorn accepts. Signals stay the
caller's: uvicorn would re-raise one after its shutdown, ending the process before an Agent
could close its Sessions.
"""

from __future__ import annotations

import contextlib
import socket
from collections.abc import Callable, Iterator
from typing import Any

import anyio

__all__ = ["serve_on_socket"]


async def serve_on_socket(
    app: Any,
    host: str,
    port: int,
    *,
    path: str = "",
    ready: Callable[[str], None] | None = None,
    stop: anyio.Event | None = None,
    grace_seconds: int | None = None,
) -> None:
    """Serve ``app`` at ``http://host:port`` until ``stop`` is set (a graceful shutdown,
    open requests given ``grace_seconds``) or the caller is cancelled; ``ready`` gets the
    URL (with ``path``) once the socket listens."""
    import uvicorn

    class Server(uvicorn.Server):
        @contextlib.contextmanager
        def capture_signals(self) -> Iterator[None]:
            yield  # the caller decides what a signal means

    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen()
        config = uvicorn.Config(
            app, log_level="warning", lifespan="on", timeout_graceful_shutdown=grace_seconds
        )
        server = Server(config)
        shown = f"[{host}]" if family == socket.AF_INET6 else host
        async with anyio.create_task_group() as group:
            if stop is not None:

                async def watch(event: anyio.Event) -> None:
                    await event.wait()
                    server.should_exit = True

                group.start_soon(watch, stop)
            if ready is not None:
                ready(f"http://{shown}:{sock.getsockname()[1]}{path}")
            await server.serve([sock])
            group.cancel_scope.cancel()
