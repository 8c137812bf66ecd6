"""Held tool calls over MCP: ``send_message`` comes back when a call waits for a person,
``list_approvals`` shows them and ``decide_approval`` decides one (the host API's
``ListApprovals`` / ``DecideApproval``, as the page, HTTP and ``xai chat`` do)."""

from __future__ import annotations

from typing import Annotated, Any

import msgspec
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import BaseModel, Field

from xai.agent import Agent, DecideApproval, ListApprovals, call_agent
from xai.events import ApprovalRequested, SessionClosed, TurnDone
from xai.exceptions import ApprovalError, ApprovalNotFoundError, SessionClosedError
from xai.messages import PendingApproval, TurnStatus
from xai.session import Session, Subscription

__all__ = ["HeldCall", "SessionAnswer", "add_approval_tools", "settle"]


class HeldCall(BaseModel):
    """A tool call that waits for a person's decision."""

    call_id: str
    tool: str
    arguments: str = Field(description="the JSON the model sent")
    session_id: str = Field(description="the Session that asked (a helper's, when delegated)")


class SessionAnswer(BaseModel):
    """The Session's answer; pass ``session_id`` back to continue the conversation. Status
    ``awaiting_approval``: the calls in ``pending`` wait for ``decide_approval``."""

    session_id: str
    status: str
    answer: str
    error: str | None = None
    pending: list[HeldCall] = Field(default_factory=list)


def _held(pending: PendingApproval) -> HeldCall:
    call = pending.call
    return HeldCall(
        call_id=call.id, tool=call.name, arguments=call.arguments, session_id=pending.session_id
    )


async def settle(
    session: Session, events: Subscription[Any], input_id: str | None = None
) -> SessionAnswer:
    """Read ``events`` (subscribed before the input or the decision) until the turn ends
    (``input_id``'s, or whichever runs) or a call waits for a decision."""

    def waiting() -> SessionAnswer | None:
        pending = session.approvals.pending()
        if not pending:
            return None
        return SessionAnswer(
            session_id=session.id,
            status=TurnStatus.AWAITING_APPROVAL.value,
            answer="",
            pending=[_held(p) for p in pending],
        )

    with events:
        if input_id is None and (held := waiting()) is not None:
            return held
        async for event in events:
            body = event.event
            if isinstance(body, ApprovalRequested) and (held := waiting()) is not None:
                return held
            if isinstance(body, TurnDone) and input_id in (None, body.outcome.input_id):
                outcome = body.outcome
                return SessionAnswer(
                    session_id=session.id,
                    status=outcome.status.value,
                    answer=outcome.text,
                    error=outcome.error.message if outcome.error else None,
                )
            if isinstance(body, SessionClosed):
                break
    raise ToolError(f"session {session.id} closed before it answered")


def add_approval_tools(server: MCPServer, agent: Agent) -> None:
    @server.tool()
    async def list_approvals() -> list[HeldCall]:
        """Tool calls of the Agent's conversations that wait for a person's decision."""
        return [_held(p) for p in await call_agent(agent, ListApprovals(agent_id=agent.id))]

    @server.tool()
    async def decide_approval(
        session_id: Annotated[str, Field(description="the conversation (send_message's)")],
        call_id: str,
        approved: bool,
        arguments: Annotated[
            dict[str, Any] | None,
            Field(description="approve with these arguments instead (checked by the tool)"),
        ] = None,
        reason: Annotated[str, Field(description="why it is denied (the model is told)")] = "",
    ) -> SessionAnswer:
        """Approve or deny a held tool call, then return the conversation's answer (or the
        calls that still wait)."""
        try:
            session = agent.session(session_id)
            owner = next(
                (p.session_id for p in session.approvals.pending() if p.call.id == call_id),
                session_id,
            )
            events = session.subscribe(buffer=10_000)
            edited = msgspec.json.encode(arguments).decode() if arguments is not None else None
            request = DecideApproval(
                agent_id=agent.id,
                session_id=owner,
                call_id=call_id,
                approved=approved,
                arguments=edited if approved else None,
                reason=reason,
                by="mcp",
            )
            await call_agent(agent, request)
        except (ApprovalError, ApprovalNotFoundError, SessionClosedError) as exc:
            raise ToolError(str(exc)) from None
        return await settle(session, events)
