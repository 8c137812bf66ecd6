"""``async with actor:`` for actors that run in a task of their own (Session, Agent).

An error raised while an actor starts reaches the caller as itself: ``except
JournalError`` works around ``async with Agent(...)`` and around
``await group.start(agent.run)`` (anyio raises what the task raised from
``start``; the caller's own task group still wraps what escapes its body).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from typing import Any, Protocol

import anyio
import anyio.abc

__all__ = ["enter", "leave", "single_errors"]


class _Runnable(Protocol):
    async def run(self, *, task_status: anyio.abc.TaskStatus[None] = ...) -> None: ...


async def enter(actor: _Runnable) -> anyio.abc.TaskGroup:
    """Start ``actor.run`` in a new task group and return the group once it has started."""
    group = anyio.create_task_group()
    await group.__aenter__()
    try:
        await group.start(actor.run)
    except Exception:
        # The actor's task failed before it started and is gone: the group holds nothing
        # else, so it closes cleanly and the error is raised as itself, not in a group.
        await group.__aexit__(None, None, None)
        raise
    except BaseException as exc:  # cancelled while starting: the group must see it
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


@contextmanager
def single_errors() -> Iterator[None]:
    """Raise the only error of a task group (however deeply nested) as itself.

    A group holding more than one error, or anything but an ``Exception`` (a
    cancellation, ``KeyboardInterrupt``), is raised unchanged.
    """
    try:
        yield
    except BaseExceptionGroup as group:
        leaves = list(_leaves(group))
        if len(leaves) == 1 and isinstance(leaves[0], Exception):
            raise leaves[0] from None
        raise


def _leaves(error: BaseException) -> Iterator[BaseException]:
    if isinstance(error, BaseExceptionGroup):
        for inner in error.exceptions:
            yield from _leaves(inner)
    else:
        yield error
