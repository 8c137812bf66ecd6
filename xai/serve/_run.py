"""Running the gateway: the bind rule (loopback, or a token) and uvicorn on a socket."""

from __future__ import annotations

import ipaddress
from collections.abc import Callable

import anyio
from starlette.applications import Starlette

from xai._http import serve_on_socket
from xai.exceptions import UsageError
from xai.serve._limits import READ_TIMEOUT

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
    Beyond loopback the app must have a token (``create_app(..., token=...)``). A
    connection gets the app's ``read_timeout`` (``create_app``) for each request head."""
    check_bind(host, getattr(app.state, "token", None))
    guard = getattr(app.state, "guard", None)
    if guard is not None:
        guard.allow(host)  # the address it was started for (a wildcard adds none)
    await serve_on_socket(
        app,
        host,
        port,
        ready=ready,
        stop=stop,
        grace_seconds=GRACE_SECONDS,
        head_timeout=getattr(app.state, "read_timeout", READ_TIMEOUT),
    )
