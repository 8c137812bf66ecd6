"""``xai chat``'s approvals: ``--approve`` picks the tools whose calls wait for you, and
``/approvals``, ``/approve``, ``/deny`` decide them through the host API's requests
(``ListApprovals``, ``DecideApproval``), as the web page and HTTP do."""

from __future__ import annotations

import json
import shlex

from xai.agent import Agent, DecideApproval, ListApprovals, call_agent
from xai.cli._people import error_line
from xai.cli._render import Printer, Renderer, Wanted
from xai.events import AgentEvent, ApprovalRequested, SessionEnded, TurnDone
from xai.exceptions import ApprovalError, ApprovalNotFoundError, SessionClosedError
from xai.session import Session
from xai.tools import ApprovalPolicy

__all__ = ["COMMANDS", "HELP", "approval_command", "approval_policy", "settled"]

HELP = """  /approvals                 tool calls waiting for your decision
  /approve ID [JSON]         let the call run (JSON: its arguments, edited)
  /deny ID [reason]          refuse it: the model is told, with your reason"""

COMMANDS = frozenset({"/approvals", "/approve", "/deny"})


def approval_policy(names: str | None) -> ApprovalPolicy:
    """``--approve``: ``all``, or tool names separated by commas."""
    if not names:
        return None
    if names.strip() == "all":
        return True
    return frozenset(n.strip() for n in names.split(",") if n.strip())


def settled(session: Session, *, input_id: str | None = None, turn: int | None = None) -> Wanted:
    """Wants the end of the turn (``input_id``'s, or number ``turn``) of ``session``, or an
    announced call that waits for a decision now: the prompt comes back for it."""

    def wanted(event: AgentEvent) -> bool:
        body = event.event
        if isinstance(body, ApprovalRequested):
            return body.pending.call.id in {p.call.id for p in session.approvals.pending()}
        if event.session_id != session.id:
            return False
        if isinstance(body, SessionEnded):
            return True
        if isinstance(body, TurnDone):
            outcome = body.outcome
            return outcome.input_id == input_id if input_id is not None else outcome.turn == turn
        return False

    return wanted


async def approval_command(
    agent: Agent, session: Session, render: Renderer, printer: Printer, line: str
) -> None:
    """Run ``/approvals``, ``/approve ID [JSON]`` or ``/deny ID [reason]``."""
    name, _, rest = line.partition(" ")
    pending = await call_agent(agent, ListApprovals(agent_id=agent.id))
    if name == "/approvals":
        if not pending:
            render.line("nothing waits for a decision")
        for p in pending:
            render.line(f"{p.call.id}  {p.call.name}({p.call.arguments})  session {p.session_id}")
        return
    call_id, _, tail = rest.strip().partition(" ")
    found = next((p for p in pending if p.call.id == call_id), None)
    if found is None:
        render.line(f"error: {error_line(ApprovalNotFoundError(call_id or '?'))}")
        return
    approved = name == "/approve"
    arguments, reason = None, ""
    if approved and tail.strip():
        arguments = tail.strip()
        try:
            json.loads(arguments)
        except ValueError:
            arguments = None
            render.line("error: the edited arguments are not JSON")
            return
    elif not approved:
        reason = " ".join(shlex.split(tail)) if tail.strip() else ""
    request = DecideApproval(
        agent_id=agent.id,
        session_id=found.session_id,
        call_id=call_id,
        approved=approved,
        arguments=arguments,
        reason=reason,
    )
    try:
        await call_agent(agent, request)
    except (ApprovalError, SessionClosedError) as exc:
        render.line(f"error: {error_line(exc)}")
        return
    await printer.shown(settled(session, turn=session.turns))
