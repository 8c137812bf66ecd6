"""A test double's app served by uvicorn in a thread of its own, on 127.0.0.1: usable from
plain code (``with``), from async code (``async with``) and across processes by URL."""

from __future__ import annotations

import socket
import threading
import time
from typing import Any, ClassVar, Self

import anyio

from xai.exceptions import RunError

__all__ = ["ThreadedServer"]


class ThreadedServer:
    """Serves ``self.app`` (set by the subclass) on ``host:port`` (0: a free port, read back
    into ``port``) from ``start()`` to ``stop()``."""

    what: ClassVar[str] = "the test server"
    """Named in the error when it does not start, and in its thread's name."""

    app: Any

    def __init__(self, host: str, port: int) -> None:
        self.host = host
        self.port = port
        self._server: Any = None
        self._thread: threading.Thread | None = None

    def start(self) -> Self:
        import uvicorn

        # Name the protocol: asyncio only sets TCP_NODELAY on accepted sockets whose
        # protocol is IPPROTO_TCP, and without it every small SSE write waits ~40 ms
        # for the client's delayed ACK (Nagle).
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((self.host, self.port))
        self.port = sock.getsockname()[1]
        config = uvicorn.Config(
            self.app,
            log_config=None,
            log_level="warning",
            access_log=False,
            lifespan="off",
            loop="asyncio",
            http="h11",
            timeout_graceful_shutdown=1,
        )
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(
            target=self._server.run, kwargs={"sockets": [sock]}, name=self.what, daemon=True
        )
        self._thread.start()
        deadline = time.monotonic() + 15
        while not self._server.started:  # uvicorn offers no event to wait on
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise RunError(f"{self.what} did not start")
            time.sleep(0.005)
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=10)
        self._server = None
        self._thread = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    async def __aenter__(self) -> Self:
        return await anyio.to_thread.run_sync(self.start)

    async def __aexit__(self, *exc_info: object) -> None:
        await anyio.to_thread.run_sync(self.stop)
