"""What the actors (Session, Agent) share for ``async with actor:`` (anyio's
``AsyncContextManagerMixin``): an error raised while an actor starts reaches the caller as
itself, so ``except JournalError`` works around ``async with Agent(...)`` and around
``await group.start(agent.run)`` (the caller's own task group still wraps what escapes its
body).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from typing import Literal, Protocol, TypeAlias

import anyio
import anyio.abc

__all__ = ["Ending", "running", "single_errors"]


Ending: TypeAlias = Literal["closed", "cancelled", "error"]
"""Why the block of ``async with actor:`` ended: normally, cancelled, or with an error."""


class _Runnable(Protocol):
    async def run(self, *, task_status: anyio.abc.TaskStatus[None] = ...) -> None: ...


@asynccontextmanager
async def running(
    actor: _Runnable, close: Callable[[Ending], Awaitable[object]]
) -> AsyncIterator[None]:
    """``actor.run`` in a task group of its own while the block runs; leaving it calls
    ``close`` (shielded: it must finish even when the caller is cancelled) with why the block
    ended. An error while starting is raised as itself; one from the block as a task group
    raises it."""
    started = False
    try:
        async with anyio.create_task_group() as group:
            await group.start(actor.run)
            started = True
            ending: Ending = "closed"
            try:
                yield
            except anyio.get_cancelled_exc_class():
                ending = "cancelled"
                raise
            except BaseException:
                ending = "error"
                raise
            finally:
                with anyio.CancelScope(shield=True):
                    await close(ending)
    except BaseExceptionGroup:
        if started:
            raise
        with single_errors():
            raise


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
