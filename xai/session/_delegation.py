"""Sub-agents: the built-in ``delegate`` tool and the context Session tools receive."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import anyio

from xai.exceptions import ToolError
from xai.messages import CloseReason, TurnOutcome, TurnStatus
from xai.session._types import TurnHandle
from xai.tools import Tool, ToolContext, tool

if TYPE_CHECKING:
    from xai.session._session import Session

__all__ = ["HELPER_INSTRUCTIONS", "SessionContext", "delegate_tool"]

HELPER_INSTRUCTIONS = (
    "You are a helper working on one delegated task. Do it and reply with the result only."
)
"""The system instructions of every delegated child Session (a Session's or an Agent's)."""

_CHILD_CANCEL_GRACE = 5.0


class SessionContext:
    """What a tool run by a Session may use (``ToolContext[SessionContext]``).

    ``deps`` is whatever the application passed as ``Session(tool_deps=...)``.
    """

    __slots__ = ("_session", "deps")

    def __init__(self, session: Session, deps: Any) -> None:
        self._session = session
        self.deps = deps

    @property
    def session_id(self) -> str:
        return self._session.id

    @property
    def depth(self) -> int:
        """0 for a top-level Session, 1 for its children, and so on."""
        return self._session.depth

    async def delegate(self, task: str) -> TurnOutcome:
        """Run ``task`` in a child Session and return its outcome.

        The child comes from the owner's hook when there is an owner, else the
        Session makes it. Cancelling the caller cancels the child; the child's
        usage is added to this Session's turn.
        """
        session = self._session
        if session.depth >= session.config.max_delegation_depth:
            raise ToolError("delegation depth limit reached: do this task yourself")
        child, _owned = await session._spawn_child(task)
        handle: TurnHandle | None = None
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
                session._add_child_usage(handle.outcome.usage)
            raise
        session._add_child_usage(outcome.usage)
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
