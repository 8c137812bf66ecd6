"""The gateway (or any Starlette app) served on 127.0.0.1 for a test."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from functools import partial

import anyio
from starlette.applications import Starlette

from xai.serve import serve_app


@asynccontextmanager
async def listening(app: Starlette) -> AsyncIterator[str]:
    """``app`` served on 127.0.0.1 (a free port) while the block runs: its URL. Leaving
    the block stops the server (open event streams get the shutdown's grace)."""
    stop, ready = anyio.Event(), anyio.Event()
    urls: list[str] = []

    def on_ready(url: str) -> None:
        urls.append(url)
        ready.set()

    async with anyio.create_task_group() as group:
        group.start_soon(partial(serve_app, app, "127.0.0.1", 0, ready=on_ready, stop=stop))
        await ready.wait()
        try:
            yield urls[0]
        finally:
            stop.set()
