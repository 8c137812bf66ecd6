"""The web page of ``xai serve`` (docs/web.md) and the JSON routes it reads.

``/`` is server-rendered HTML; ``/static/`` the page's own script and style sheet, shipped in
the package (no CDN, no build step). Every text of a fact or a message reaches the page as
JSON and is set with ``textContent``; the only values put in the HTML here are escaped.
"""

from __future__ import annotations

import html
import re
from collections.abc import AsyncIterator, Awaitable, Callable
from importlib import resources
from string import Template
from typing import Annotated, TypeVar

import msgspec
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response, StreamingResponse
from starlette.routing import Route

from xai.agent import (
    AddWakeup,
    CancelTurn,
    Forget,
    GetFact,
    GetMood,
    GetUsage,
    ListWakeups,
    Notify,
    PauseWakeup,
    ReadAgentEvents,
    SearchMemory,
    Wakeup,
)
from xai.events import AgentEvent
from xai.logs import get_logger
from xai.memory import ForgetScope
from xai.serve._backend import Backend
from xai.serve._security import COOKIE, Guard, Refused

__all__ = ["DEFAULT_AGENT", "NotifyRequest", "page_routes"]

DEFAULT_AGENT = "main"
"""The Agent the page shows when the address names none (``/?agent=ID``)."""

_log = get_logger(__name__)

_SCOPES: dict[str, ForgetScope] = {"fact": "fact", "evidence": "evidence", "erase": "erase"}
"""``DELETE .../facts/ID?scope=``: what forgetting removes (``Agent.forget``)."""

_AGENT_ID = re.compile(r"^[A-Za-z0-9_-][A-Za-z0-9_.-]{0,63}$")
_MAX_BODY = 64 * 1024
_STATIC = {"app.js": "text/javascript", "app.css": "text/css"}

T = TypeVar("T")

Handler = Callable[[Request, Backend], Awaitable[Response]]


class NotifyRequest(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """``POST /agents/{agent_id}/notify``: an application event for ``OnEvent`` wake-ups."""

    name: Annotated[str, msgspec.Meta(min_length=1, max_length=200)]


class Cancelled(msgspec.Struct, frozen=True, kw_only=True):
    cancelled: bool
    """False: no turn was running."""


class Fired(msgspec.Struct, frozen=True, kw_only=True):
    fired: int


def _json(value: object, status: int = 200) -> Response:
    return Response(msgspec.json.encode(value), status, media_type="application/json")


async def _decode(request: Request, type: type[T]) -> T:
    data = await request.body()
    if len(data) > _MAX_BODY:
        raise Refused(413, "too_large", f"the body is larger than {_MAX_BODY} bytes")
    return msgspec.json.decode(data or b"{}", type=type)


def _root(request: Request) -> str:
    """Where the gateway is served, ending in ``/``: ``/``, or the prefix it is mounted at
    (``Mount("/xai", app=gateway)``, or a proxy's ``--root-path``). The page's ``<base>``:
    every URL the page uses is relative to it."""
    root: str = request.scope.get("root_path", "")
    return root.rstrip("/") + "/"


def _static(name: str) -> bytes:
    return resources.files("xai.serve").joinpath("static", name).read_bytes()


def page_routes(
    route: Callable[[Handler], Callable[[Request], Awaitable[Response]]],
    guard: Guard,
    key: Callable[[Request], str | None],
) -> list[Route]:
    """The page and its routes; ``route`` wraps each handler in the gateway's guard and
    error handling; ``key`` reads a write's ``Idempotency-Key``."""
    template = Template(_static("index.html").decode())

    async def index(request: Request, host: Backend) -> Response:
        agent_id = request.query_params.get("agent") or DEFAULT_AGENT
        if not _AGENT_ID.match(agent_id):
            raise Refused(
                400, "bad_request", f"agent id {agent_id!r}: 1-64 of letters, digits, _ . -"
            )
        page = template.substitute(
            base=html.escape(_root(request), quote=True),
            agent=html.escape(agent_id, quote=True),
            csrf=html.escape(guard.csrf, quote=True),
        )
        headers = {
            "Cache-Control": "no-store",
            "Content-Security-Policy": "default-src 'self'; script-src 'self'; "
            "style-src 'self'; img-src 'self' data:; object-src 'none'; "
            "base-uri 'self'; frame-ancestors 'none'; form-action 'self'",
            "X-Content-Type-Options": "nosniff",
            "Referrer-Policy": "no-referrer",
        }
        return Response(page, media_type="text/html; charset=utf-8", headers=headers)

    async def static(request: Request, host: Backend) -> Response:
        name = request.path_params["name"]
        if name not in _STATIC:
            raise Refused(404, "not_found", f"no static file {name!r}")
        headers = {"Cache-Control": "no-cache", "X-Content-Type-Options": "nosniff"}
        return Response(_static(name), media_type=_STATIC[name], headers=headers)

    async def login(request: Request) -> Response:
        """The one-time link: sets the cookie that stands for the token, then the page."""
        try:
            guard.check_host(request)
        except Refused as refused:
            return Response(str(refused), refused.status, media_type="text/plain; charset=utf-8")
        if guard.token is None:
            return RedirectResponse(_root(request), 303)
        cookie = guard.login(request.query_params.get("key", ""))
        if cookie is None:
            return Response(
                "This login link is spent or wrong: restart `xai serve` for a new one, "
                "or send the token as `Authorization: Bearer <token>`.\n",
                401,
                media_type="text/plain; charset=utf-8",
            )
        response = RedirectResponse(_root(request), 303)
        response.set_cookie(COOKIE, cookie, httponly=True, samesite="strict", path=_root(request))
        return response

    async def cancel(request: Request, host: Backend) -> Response:
        params = request.path_params
        cancel = CancelTurn(
            agent_id=params["agent_id"], session_id=params["session_id"], key=key(request)
        )
        return _json(Cancelled(cancelled=await host.call(cancel)))

    async def agent_events(request: Request, host: Backend) -> Response:
        stream = await host.stream(ReadAgentEvents(agent_id=request.path_params["agent_id"]))

        async def frames() -> AsyncIterator[bytes]:
            yield b": listening\n\n"  # the page knows the stream is open from here on
            try:
                async for event in stream:
                    yield _agent_sse(event)
            except Exception:  # its host went away (a Ray host actor died): the page reconnects
                _log.warning("serve.agent_stream_broken", path=request.url.path, exc_info=True)

        headers = {"Cache-Control": "no-store", "X-Accel-Buffering": "no"}
        return StreamingResponse(frames(), media_type="text/event-stream", headers=headers)

    async def search(request: Request, host: Backend) -> Response:
        query = request.query_params.get("q", "").strip()
        if not query:
            raise Refused(400, "bad_request", "q: empty")
        try:
            k = int(request.query_params.get("k", "10"))
        except ValueError:
            raise Refused(400, "bad_request", "k: a number") from None
        k = max(1, min(k, 50))
        agent_id = request.path_params["agent_id"]
        return _json(await host.call(SearchMemory(agent_id=agent_id, query=query, k=k)))

    async def fact(request: Request, host: Backend) -> Response:
        params = request.path_params
        detail = await host.call(GetFact(agent_id=params["agent_id"], fact_id=params["fact_id"]))
        if detail is None:
            raise Refused(404, "not_found", f"no fact {params['fact_id']!r}")
        return _json(detail)

    async def forget(request: Request, host: Backend) -> Response:
        params = request.path_params
        scope = request.query_params.get("scope", "fact")
        if scope not in _SCOPES:
            raise Refused(400, "bad_request", f"scope is one of {', '.join(_SCOPES)}")
        forget = Forget(
            agent_id=params["agent_id"], fact_id=params["fact_id"], key=key(request),
            scope=_SCOPES[scope],
        )  # fmt: skip
        forgotten = await host.call(forget)
        if forgotten is None:
            raise Refused(404, "not_found", f"no fact {params['fact_id']!r} to forget ({scope})")
        return _json(forgotten)

    async def wakeups(request: Request, host: Backend) -> Response:
        return _json(await host.call(ListWakeups(agent_id=request.path_params["agent_id"])))

    async def add_wakeup(request: Request, host: Backend) -> Response:
        wakeup = await _decode(request, Wakeup)
        add = AddWakeup(agent_id=request.path_params["agent_id"], wakeup=wakeup, key=key(request))
        return _json(await host.call(add), 201)

    def pausing(paused: bool) -> Handler:
        async def handler(request: Request, host: Backend) -> Response:
            params = request.path_params
            view = await host.call(
                PauseWakeup(
                    agent_id=params["agent_id"],
                    wakeup_id=params["wakeup_id"],
                    paused=paused,
                    key=key(request),
                )
            )
            if view is None:
                raise Refused(404, "not_found", f"no wake-up {params['wakeup_id']!r}")
            return _json(view)

        return handler

    async def notify(request: Request, host: Backend) -> Response:
        body = await _decode(request, NotifyRequest)
        notify = Notify(agent_id=request.path_params["agent_id"], name=body.name, key=key(request))
        return _json(Fired(fired=await host.call(notify)))

    async def usage(request: Request, host: Backend) -> Response:
        return _json(await host.call(GetUsage(agent_id=request.path_params["agent_id"])))

    async def mood(request: Request, host: Backend) -> Response:
        raw = request.query_params.get("limit") or "200"
        if not raw.isdigit():
            raise Refused(400, "bad_request", f"limit {raw!r}: a whole number of digests")
        limit = min(int(raw), 1_000)
        return _json(
            await host.call(GetMood(agent_id=request.path_params["agent_id"], limit=limit))
        )

    agent = "/agents/{agent_id}"
    return [
        Route("/", route(index), methods=["GET"]),
        Route("/static/{name}", route(static), methods=["GET"]),
        Route("/login", login, methods=["GET"]),
        Route(agent + "/sessions/{session_id}/cancel", route(cancel), methods=["POST"]),
        Route(agent + "/events", route(agent_events), methods=["GET"]),
        Route(agent + "/memory/search", route(search), methods=["GET"]),
        Route(agent + "/facts/{fact_id}", route(fact), methods=["GET"]),
        Route(agent + "/facts/{fact_id}", route(forget), methods=["DELETE"]),
        Route(agent + "/wakeups", route(wakeups), methods=["GET"]),
        Route(agent + "/wakeups", route(add_wakeup), methods=["POST"]),
        Route(agent + "/wakeups/{wakeup_id}/pause", route(pausing(True)), methods=["POST"]),
        Route(agent + "/wakeups/{wakeup_id}/resume", route(pausing(False)), methods=["POST"]),
        Route(agent + "/notify", route(notify), methods=["POST"]),
        Route(agent + "/usage", route(usage), methods=["GET"]),
        Route(agent + "/mood", route(mood), methods=["GET"]),
    ]


def _agent_sse(event: AgentEvent) -> bytes:
    """No ``id:``: the Agent's stream is live only (a reconnect reads the views again)."""
    kind = event.event.__struct_config__.tag
    return f"event: {kind}\ndata: ".encode() + msgspec.json.encode(event) + b"\n\n"
