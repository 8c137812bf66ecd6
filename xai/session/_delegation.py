"""Sub-agents: the built-in ``delegate`` tool and the context Session tools receive."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Protocol

import anyio

from xai.exceptions import ToolError
from xai.messages import CloseReason, Origin, TurnOutcome, TurnStatus, Usage
from xai.session._types import TurnHandle
from xai.tools import Tool, ToolContext, tool

__all__ = ["HELPER_INSTRUCTIONS", "Child", "SessionContext", "delegate_tool"]

HELPER_INSTRUCTIONS = (
    "You are a helper working on one delegated task. Do it and reply with the result only."
)
"""The system instructions of every delegated child Session (a Session's or an Agent's)."""

_CHILD_CANCEL_GRACE = 5.0


class Child(Protocol):
    """What delegation needs of a child Session."""

    def send(self, input: str, *, origin: Origin = ...) -> TurnHandle: ...

    @property
    def approvals(self) -> Any:
        """Its held tool calls (``Approvals``): they surface at the parent."""

    async def close(self, reason: CloseReason = ...) -> None: ...


class SessionContext:
    """What a tool run by a Session may use (``ToolContext[SessionContext]``).

    ``deps`` is whatever the application passed as ``Session(tool_deps=...)``.
    The Session makes it: ``spawn`` starts a child for a task (``True``: the Session
    owns it), ``on_child_usage`` adds what a child spent to the running turn.
    """

    __slots__ = (
        "_depth",
        "_max_depth",
        "_on_child_usage",
        "_session_id",
        "_spawn",
        "_watch",
        "deps",
    )

    def __init__(
        self,
        *,
        session_id: str,
        depth: int,
        max_depth: int,
        spawn: Callable[[str], Awaitable[tuple[Child, bool]]],
        on_child_usage: Callable[[Usage], None],
        deps: Any,
        watch: Callable[[Child], Callable[[], None]] | None = None,
    ) -> None:
        self._watch = watch
        self._session_id = session_id
        self._depth = depth
        self._max_depth = max_depth
        self._spawn = spawn
        self._on_child_usage = on_child_usage
        self.deps = deps

    @property
    def session_id(self) -> str:
        return self._session_id

    @property
    def depth(self) -> int:
        """0 for a top-level Session, 1 for its children, and so on."""
        return self._depth

    async def delegate(self, task: str) -> TurnOutcome:
        """Run ``task`` in a child Session and return its outcome.

        The child comes from the owner's hook when there is an owner, else the
        Session makes it. Cancelling the caller cancels the child; the child's
        usage is added to this Session's turn.
        """
        if self._depth >= self._max_depth:
            raise ToolError("delegation depth limit reached: do this task yourself")
        child, _owned = await self._spawn(task)
        handle: TurnHandle | None = None
        # The helper's calls held for approval surface here while it works.
        unwatch = self._watch(child) if self._watch is not None else None
        try:
            handle = child.send(task, origin="agent")
            outcome = await handle.result()
        except BaseException as exc:
            # Cancelled (or failed) wherever the child is: not started yet, compacting,
            # in its Query. Closing it cancels its turn and drops its input in every state;
            # the wait is bounded, the close is not undone by the bound.
            reason: CloseReason = (
                "cancelled" if isinstance(exc, anyio.get_cancelled_exc_class()) else "error"
            )
            with anyio.move_on_after(_CHILD_CANCEL_GRACE, shield=True):
                await child.close(reason)
            # (``close`` resolves the handle; a close cut short by the bound may not have.)
            if handle is not None and handle.outcome is not None:
                self._on_child_usage(handle.outcome.usage)
            raise
        finally:
            if unwatch is not None:
                unwatch()
        self._on_child_usage(outcome.usage)
        # The sub-task is done: the child closes (its owner's hooks run, e.g. memory).
        await child.close()
        return outcome


async def _delegate(ctx: ToolContext[SessionContext], task: str) -> str:
    """Hand a self-contained sub-task to a helper and get its final answer back.

    Args:
        task: Everything the helper needs to know to do the task on its own.
    """
    outcome = await ctx.deps.delegate(task)
    if outcome.status is not TurnStatus.COMPLETED:
        detail = f": {outcome.error.message}" if outcome.error else ""
        raise ToolError(f"the helper did not finish ({outcome.status.value}{detail})")
    return outcome.text


delegate_tool: Tool = tool(name="delegate")(_delegate)
