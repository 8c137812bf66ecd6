"""The routes of human approval (docs/approvals.md): the held tool calls of an Agent, and a
person's decision on one. Each is one request of the host API (``ListApprovals``,
``DecideApproval``), so the gateway serves them over any host (in process or on Ray)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Annotated, Any

import msgspec
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from xai.agent import DecideApproval, ListApprovals
from xai.serve._backend import Backend
from xai.serve._security import Refused

__all__ = ["DecisionRequest", "approval_routes"]

_MAX_BODY = 64 * 1024

Handler = Callable[[Request, Backend], Awaitable[Response]]


class DecisionRequest(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """``POST /agents/{agent_id}/sessions/{session_id}/approvals/{call_id}``."""

    approved: bool
    arguments: dict[str, Any] | str | None = None
    """Edited arguments (an object, or its JSON text): checked against the tool's schema."""
    reason: Annotated[str, msgspec.Meta(max_length=2000)] = ""
    by: Annotated[str, msgspec.Meta(max_length=200)] = "user"


def _json(value: object, status: int = 200) -> Response:
    return Response(msgspec.json.encode(value), status, media_type="application/json")


def approval_routes(
    route: Callable[[Handler], Callable[[Request], Awaitable[Response]]],
    key: Callable[[Request], str | None],
) -> list[Route]:
    """``GET`` the held calls (``?session=ID`` for one Session and its helpers), ``POST`` a
    decision (``Idempotency-Key`` honoured; a repeat of a decision answers the first)."""

    async def pending(request: Request, host: Backend) -> Response:
        session_id = request.query_params.get("session") or None
        listing = ListApprovals(agent_id=request.path_params["agent_id"], session_id=session_id)
        return _json(await host.call(listing))

    async def decide(request: Request, host: Backend) -> Response:
        data = await request.body()
        if len(data) > _MAX_BODY:
            raise Refused(413, "too_large", f"the body is larger than {_MAX_BODY} bytes")
        body = msgspec.json.decode(data or b"{}", type=DecisionRequest)
        arguments = body.arguments
        if arguments is not None and not isinstance(arguments, str):
            arguments = msgspec.json.encode(arguments).decode()
        params = request.path_params
        decision = DecideApproval(
            agent_id=params["agent_id"],
            session_id=params["session_id"],
            call_id=params["call_id"],
            approved=body.approved,
            arguments=arguments if body.approved else None,
            reason=body.reason,
            by=body.by,
            key=key(request),
        )
        return _json(await host.call(decision))

    agent = "/agents/{agent_id}"
    return [
        Route(agent + "/approvals", route(pending), methods=["GET"]),
        Route(
            agent + "/sessions/{session_id}/approvals/{call_id}", route(decide), methods=["POST"]
        ),
    ]
