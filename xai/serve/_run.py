"""Running the gateway: the bind rule (loopback, or a token) and uvicorn on a socket."""

from __future__ import annotations

import contextlib
import ipaddress
import socket
from collections.abc import Callable, Iterator

import anyio
from starlette.applications import Starlette

from xai.exceptions import UsageError

__all__ = ["GRACE_SECONDS", "check_bind", "is_loopback", "serve_app"]

GRACE_SECONDS = 5
"""On a shutdown, open requests (event streams) get this long before they are cut."""


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:  # a name: it may resolve anywhere
        return False


def check_bind(host: str, token: str | None) -> None:
    """Refuse to listen beyond this machine without a token."""
    if not is_loopback(host) and not token:
        raise UsageError(
            f"refusing to bind {host}: beyond loopback the gateway needs a token "
            "(set XAI_SERVE_TOKEN; clients send `Authorization: Bearer <token>`)"
        )


async def serve_app(
    app: Starlette,
    host: str,
    port: int,
    *,
    ready: Callable[[str], None] | None = None,
    stop: anyio.Event | None = None,
) -> None:
    """Serve ``app`` at ``http://host:port`` until ``stop`` is set or the caller is
    cancelled; ``ready`` gets the URL once the socket listens (port 0: a free one).
    Beyond loopback the app must have a token (``create_app(..., token=...)``)."""
    import uvicorn

    check_bind(host, getattr(app.state, "token", None))

    class Server(uvicorn.Server):
        @contextlib.contextmanager
        def capture_signals(self) -> Iterator[None]:
            yield  # signals are the caller's (the host closes its Agents first)

    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen()
        # An event stream never ends by itself: a shutdown gives open ones a few seconds.
        config = uvicorn.Config(
            app, log_level="warning", lifespan="on", timeout_graceful_shutdown=GRACE_SECONDS
        )
        server = Server(config)
        shown = f"[{host}]" if family == socket.AF_INET6 else host
        async with anyio.create_task_group() as group:
            if stop is not None:

                async def watch(event: anyio.Event) -> None:
                    await event.wait()
                    server.should_exit = True

                group.start_soon(watch, stop)
            if ready is not None:  # it listens: a client waits in the backlog until uvicorn runs
                ready(f"http://{shown}:{sock.getsockname()[1]}")
            await server.serve([sock])
            group.cancel_scope.cancel()
