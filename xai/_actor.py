"""``async with actor:`` for actors that run in a task of their own (Session, Agent)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Protocol

import anyio
import anyio.abc

__all__ = ["enter", "leave"]


class _Runnable(Protocol):
    async def run(self, *, task_status: anyio.abc.TaskStatus[None] = ...) -> None: ...


async def enter(actor: _Runnable) -> anyio.abc.TaskGroup:
    """Start ``actor.run`` in a new task group and return the group once it has started."""
    group = anyio.create_task_group()
    await group.__aenter__()
    try:
        await group.start(actor.run)
    except BaseException as exc:
        await group.__aexit__(type(exc), exc, exc.__traceback__)
        raise
    return group


async def leave(
    group: anyio.abc.TaskGroup | None, close: Callable[[], Awaitable[None]], exc_info: Any
) -> bool | None:
    """Close the actor (shielded: it must finish even when the caller is cancelled), then
    leave its task group."""
    assert group is not None, "the actor was not entered"
    with anyio.CancelScope(shield=True):
        await close()
    return await group.__aexit__(*exc_info)
