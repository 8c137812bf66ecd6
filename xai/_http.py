"""Serving an ASGI app with uvicorn on a socket of our own (``xai serve``, ``xai mcp serve``).

The socket is bound and listening before the URL is announced (port 0: a free one), so a
client that connects at once waits in the backlog until uvicorn accepts. Signals stay the
caller's: uvicorn would re-raise one after its shutdown, ending the process before an Agent
could close its Sessions.

uvicorn closes a connection idle after an answer (its keep-alive timeout) but waits forever
for a request head that was begun and not finished, or for a first request that never comes
(a connection opened and left: one file descriptor and its buffers each, as many as a client
opens). Its protocol is given a timer here: a connection that has no request under way
``head_timeout`` seconds after it opened, or after its last answer, is closed. A request's
body is the app's to time (``xai.serve``'s ``BodyLimits``).
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import Callable, Iterator
from typing import Any

import anyio

__all__ = ["HEAD_TIMEOUT", "serve_on_socket"]

HEAD_TIMEOUT = 30.0
"""Seconds a connection may wait, with no request under way, for a request head to arrive."""


async def serve_on_socket(
    app: Any,
    host: str,
    port: int,
    *,
    path: str = "",
    ready: Callable[[str], None] | None = None,
    stop: anyio.Event | None = None,
    grace_seconds: int | None = None,
    head_timeout: float = HEAD_TIMEOUT,
) -> None:
    """Serve ``app`` at ``http://host:port`` until ``stop`` is set (a graceful shutdown,
    open requests given ``grace_seconds``) or the caller is cancelled; ``ready`` gets the
    URL (with ``path``) once the socket listens. A connection with no request under way for
    ``head_timeout`` seconds (none begun, or one begun and its head not finished) is closed."""
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
            app,
            log_level="warning",
            lifespan="on",
            timeout_graceful_shutdown=grace_seconds,
            http=_timed_protocol(head_timeout),
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


def _timed_protocol(head_timeout: float) -> type[asyncio.Protocol]:
    """uvicorn's HTTP protocol (httptools', else h11's: both keep the request under way in
    ``cycle`` and call ``on_response_complete`` after each answer) with the head timer."""
    from uvicorn.protocols.http.auto import AutoHTTPProtocol

    base: Any = AutoHTTPProtocol

    class TimedProtocol(base):  # type: ignore[misc]
        _head_timer: asyncio.TimerHandle | None = None

        def connection_made(self, transport: asyncio.Transport) -> None:
            super().connection_made(transport)
            self._wait_for_head()

        def on_response_complete(self) -> None:
            super().on_response_complete()
            self._wait_for_head()

        def connection_lost(self, exc: Exception | None) -> None:
            if self._head_timer is not None:
                self._head_timer.cancel()
            super().connection_lost(exc)

        def _wait_for_head(self) -> None:
            if self._head_timer is not None:
                self._head_timer.cancel()
            if self.transport.is_closing():
                return
            waited = self.cycle  # a new request replaces it once its head is in

            def expire() -> None:
                self._head_timer = None
                idle = self.cycle is waited and (waited is None or waited.response_complete)
                if idle and not self.transport.is_closing():
                    self.transport.close()

            self._head_timer = asyncio.get_running_loop().call_later(head_timeout, expire)

    return TimedProtocol
