"""Stopping a serving command cleanly on Ctrl-C or SIGTERM."""

from __future__ import annotations

import signal

import anyio

__all__ = ["stop_on_signal"]


async def stop_on_signal(stop: anyio.Event) -> None:
    """Set ``stop`` on the first SIGINT or SIGTERM (the server then shuts down in order)."""
    with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        async for _ in signals:
            stop.set()
            return
