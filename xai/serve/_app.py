"""The HTTP API of ``xai serve``: JSON in and out, a Session's events as Server-Sent Events.

See docs/serve.md for the API. Every body is a msgspec value; every error is
``{"type": ..., "message": ...}`` with its status. A reader of the events resumes
after the last ``id`` it saw (the standard ``Last-Event-ID`` header, or
``?after=SEQ``) and gets every later event once, in order, or a 410 error when
the server no longer keeps them: never a silent gap.

Every route is one request of the host API (``xai.agent.HostRequest``) sent to the backend
(``HostClient.call``): the gateway writes no operation of its own. Every write takes an
``Idempotency-Key`` header (the IETF httpapi draft's): a retry with the same key is
answered as the first request was, never run twice (the request's policy says how).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Annotated, Literal, TypeAlias

import msgspec
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

from xai._files import is_disk_full
from xai.agent import (
    CloseSession,
    GetFacts,
    ListSessions,
    Open,
    OpenSession,
    ReadEvents,
    Submit,
)
from xai.events import SessionEvent
from xai.exceptions import (
    AgentNotFoundError,
    ApprovalDecidedError,
    ApprovalNotFoundError,
    DiskFullError,
    EventsExpiredError,
    IdempotencyKeyReusedError,
    SessionClosedError,
    SessionNotFoundError,
    StateFileError,
    UsageError,
)
from xai.logs import get_logger
from xai.serve._approvals import approval_routes
from xai.serve._backend import Backend
from xai.serve._limits import READ_TIMEOUT, BodyLimits
from xai.serve._security import Guard, Refused
from xai.serve._web import page_routes

__all__ = [
    "IDEMPOTENCY_HEADER",
    "MAX_BODY_BYTES",
    "READ_TIMEOUT",
    "Accepted",
    "ErrorBody",
    "ErrorType",
    "OpenRequest",
    "SendMessage",
    "create_app",
    "running",
]

_log = get_logger(__name__)

MAX_BODY_BYTES = 1 << 20
"""The largest request body accepted (413 past it: by its ``Content-Length`` before it is
read, else as soon as the bytes read pass it; ``_limits``)."""

IDEMPOTENCY_HEADER = "Idempotency-Key"
"""The header of a write's idempotency key (draft-ietf-httpapi-idempotency-key-header)."""

_KEY = re.compile(r'^"?([\x21\x23-\x7e]{1,255})"?$')

ErrorType: TypeAlias = Literal[
    "bad_request",
    "unauthorized",
    "forbidden",
    "not_found",
    "agent_not_found",
    "method_not_allowed",
    "idempotency_key_reused",
    "session_closed",
    "events_expired",
    "too_large",
    "request_timeout",
    "internal",
    "unavailable",
    "disk_full",
    "damaged_state",
    "approval_decided",
]


class ErrorBody(msgspec.Struct, frozen=True, kw_only=True):
    """Every error response. ``first``/``last``: the events still kept (``events_expired``)."""

    type: ErrorType
    message: str
    first: int | None = None
    last: int | None = None


class OpenRequest(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """``POST /agents/{agent_id}/sessions``: both optional."""

    purpose: Annotated[str, msgspec.Meta(max_length=2000)] | None = None
    instructions: Annotated[str, msgspec.Meta(max_length=100_000)] | None = None


class SendMessage(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """``POST …/messages``."""

    text: Annotated[str, msgspec.Meta(min_length=1, max_length=200_000)]


class Accepted(msgspec.Struct, frozen=True, kw_only=True):
    """The input is accepted (on disk); its turn's events come over the event stream."""

    agent_id: str
    session_id: str
    input_id: str


class _HTTPError(Exception):
    def __init__(self, status: int, body: ErrorBody) -> None:
        super().__init__(body.message)
        self.status = status
        self.body = body


def _json(value: object, status: int = 200) -> Response:
    return Response(msgspec.json.encode(value), status, media_type="application/json")


def _error(status: int, type: ErrorType, message: str) -> _HTTPError:
    return _HTTPError(status, ErrorBody(type=type, message=message))


def _status_of(exc: Exception) -> tuple[int, ErrorBody]:
    while isinstance(exc, ExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]  # one failure of a task group: answered as itself
    if isinstance(exc, _HTTPError):
        return exc.status, exc.body
    if isinstance(exc, Refused):
        return exc.status, ErrorBody(type=exc.type, message=str(exc))
    if isinstance(exc, AgentNotFoundError):
        return 404, ErrorBody(type="agent_not_found", message=str(exc))
    if isinstance(exc, SessionNotFoundError):
        return 404, ErrorBody(type="not_found", message=str(exc))
    if isinstance(exc, ApprovalNotFoundError):
        return 404, ErrorBody(type="not_found", message=str(exc))
    if isinstance(exc, ApprovalDecidedError):
        return 409, ErrorBody(type="approval_decided", message=str(exc))
    if isinstance(exc, SessionClosedError):
        return 409, ErrorBody(type="session_closed", message=str(exc))
    if isinstance(exc, IdempotencyKeyReusedError):
        return 422, ErrorBody(type="idempotency_key_reused", message=str(exc))
    if isinstance(exc, EventsExpiredError):
        body = ErrorBody(type="events_expired", message=str(exc), first=exc.first, last=exc.last)
        return 410, body
    if is_disk_full(exc):  # that Agent's write failed; the process and others go on
        path = exc.path if isinstance(exc, DiskFullError) else str(getattr(exc, "filename", ""))
        return 507, ErrorBody(type="disk_full", message=str(DiskFullError(path)))
    if isinstance(exc, StateFileError):  # names the file and what to do
        return 503, ErrorBody(type="damaged_state", message=str(exc))
    if isinstance(exc, msgspec.ValidationError | msgspec.DecodeError):
        return 400, ErrorBody(type="bad_request", message=f"invalid body: {exc}")
    if isinstance(exc, UsageError):
        return 400, ErrorBody(type="bad_request", message=str(exc))
    return 500, ErrorBody(type="internal", message="internal error (see the server's log)")


_BROKEN = ErrorBody(
    type="internal", message="the stream broke off (its host went away): resume with Last-Event-ID"
)


def _sse(event: SessionEvent) -> bytes:
    kind = event.event.__struct_config__.tag
    return f"id: {event.seq}\nevent: {kind}\ndata: ".encode() + msgspec.json.encode(event) + b"\n\n"


def _sse_error(body: ErrorBody) -> bytes:
    return b"event: error\ndata: " + msgspec.json.encode(body) + b"\n\n"


def _after(request: Request) -> int:
    """Resume point: ``Last-Event-ID`` (what a browser's EventSource sends), else ``?after``."""
    text = request.headers.get("last-event-id")
    source = "Last-Event-ID"
    if text is None:
        text, source = request.query_params.get("after", "0"), "after"
    try:
        after = int(text.strip())
    except ValueError:
        raise _error(400, "bad_request", f"{source}: a sequence number, got {text!r}") from None
    if after < 0:
        raise _error(400, "bad_request", f"{source}: 0 or more, got {after}")
    return after


def idempotency_key(request: Request) -> str | None:
    """The write's ``Idempotency-Key`` (an sf-string: quoted or not), or ``None``."""
    text = request.headers.get(IDEMPOTENCY_HEADER)
    if text is None:
        return None
    match = _KEY.match(text.strip())
    if match is None:
        raise _error(400, "bad_request", f"{IDEMPOTENCY_HEADER}: 1-255 visible ASCII characters")
    return match.group(1)


def _input_id(key: str) -> str:
    """The input id a message's key names: a digest of it (a client's key is any text; an
    input id is journaled and shown to the model, so it is made plain), the same for every
    repeat, so the Session recognises a repeat even after a restart."""
    return hashlib.sha256(key.encode()).hexdigest()[:16]


async def _body(request: Request, type: type[msgspec.Struct]) -> msgspec.Struct:
    data = await request.body()  # at most MAX_BODY_BYTES: ``BodyLimits`` refuses more (413)
    return msgspec.json.decode(data or b"{}", type=type)


_NOT_RUNNING = (
    "the gateway's backend is not running: its lifespan has not run (mounted in another "
    "app? enter `xai.serve.running(gateway)` in that app's lifespan)"
)

BackendSource: TypeAlias = Backend | Callable[[], AbstractAsyncContextManager[Backend]]


def create_app(
    backend: BackendSource,
    *,
    token: str | None = None,
    allowed_hosts: Iterable[str] | None = None,
    read_timeout: float = READ_TIMEOUT,
) -> Starlette:
    """The ASGI app over ``backend`` (a ``Backend``, or a factory of an async context
    manager that gives one: entered for the app's lifespan).

    Embedded in an application's own Starlette app (``Mount("/xai", app=gateway)``: the
    page and the API under ``/xai/``), the gateway's lifespan does not run by itself:
    enter ``running(gateway)`` in the application's lifespan (not needed when
    ``backend`` is a ``Backend``, e.g. ``LocalBackend(host)`` over a host the
    application enters itself).

    With ``token``, every request must carry ``Authorization: Bearer <token>`` or the
    cookie of the one-time login link (``app.state.guard.login_key``; 401 otherwise);
    ``serve_app`` refuses to bind beyond loopback an app made without one (it reads
    ``app.state.token``). Every write from a browser must carry the page's CSRF token
    (403 otherwise; ``_security.Guard``). The ``Host`` of a request must be one the gateway
    answers for: without a token the loopback names, the address ``serve_app`` binds, and
    ``allowed_hosts`` (the names an application serves it under); with a token any, unless
    ``allowed_hosts`` is given. A write from a page of another host is refused (403). The
    web page and its routes: ``_web``.

    A body over ``MAX_BODY_BYTES`` is refused (413) before it is held, and one that does not
    arrive within ``read_timeout`` seconds of its first read gets 408 (``_limits``); a request
    head gets as long from ``serve_app``, which reads ``app.state.read_timeout``."""
    if not read_timeout > 0:
        raise UsageError(f"read_timeout: more than 0 seconds, got {read_timeout}")
    state: dict[str, Backend] = {}
    if not callable(backend):
        state["backend"] = backend  # nothing to start: served with or without a lifespan
    guard = Guard(token, allowed_hosts)

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        if not callable(backend):
            yield
            return
        if "backend" in state:
            raise UsageError("the gateway's lifespan is already running (entered twice)")
        async with backend() as made:
            state["backend"] = made
            try:
                yield
            finally:
                del state["backend"]

    def route(
        handler: Callable[[Request, Backend], Awaitable[Response]],
    ) -> Callable[[Request], Awaitable[Response]]:
        async def guarded(request: Request) -> Response:
            try:
                guard.check(request)  # the token (or its cookie); CSRF on writes
                if "backend" not in state:
                    raise _error(503, "unavailable", _NOT_RUNNING)
                return await handler(request, state["backend"])
            except Exception as exc:
                status, body = _status_of(exc)
                if status == 500:
                    _log.exception("serve.failed", path=request.url.path)
                response = _json(body, status)
                if status == 401:
                    response.headers["WWW-Authenticate"] = "Bearer"
                if status == 408:  # the client stalled mid-body: the connection is done
                    response.headers["Connection"] = "close"
                return response

        return guarded

    async def open_session(request: Request, host: Backend) -> Response:
        body = await _body(request, OpenRequest)
        assert isinstance(body, OpenRequest)
        opened = OpenSession(purpose=body.purpose, instructions=body.instructions)
        info = await host.call(
            Open(
                agent_id=request.path_params["agent_id"],
                session=opened,
                key=idempotency_key(request),
            )
        )
        return _json(info, 201)

    async def sessions(request: Request, host: Backend) -> Response:
        return _json(await host.call(ListSessions(agent_id=request.path_params["agent_id"])))

    async def send(request: Request, host: Backend) -> Response:
        body = await _body(request, SendMessage)
        assert isinstance(body, SendMessage)
        if not body.text.strip():
            raise _error(400, "bad_request", "text: empty")
        agent_id, session_id = request.path_params["agent_id"], request.path_params["session_id"]
        key = idempotency_key(request)
        submit = Submit(
            agent_id=agent_id,
            session_id=session_id,
            text=body.text,
            key=None if key is None else _input_id(key),
        )
        input_id = await host.call(submit)
        return _json(Accepted(agent_id=agent_id, session_id=session_id, input_id=input_id), 202)

    async def events(request: Request, host: Backend) -> Response:
        after = _after(request)
        # Awaited here: an unknown session or an expired position is an HTTP error, before
        # the 200 of the stream.
        params = request.path_params
        stream = await host.stream(
            ReadEvents(agent_id=params["agent_id"], session_id=params["session_id"], after=after)
        )

        async def frames() -> AsyncIterator[bytes]:
            try:
                async for event in stream:
                    yield _sse(event)
            except EventsExpiredError as exc:  # the reader fell behind the window
                yield _sse_error(_status_of(exc)[1])
            except Exception:  # the host went away (a Ray host actor died, say)
                _log.warning("serve.stream_broken", path=request.url.path, exc_info=True)
                yield _sse_error(_BROKEN)

        headers = {"Cache-Control": "no-store", "X-Accel-Buffering": "no"}
        return StreamingResponse(frames(), media_type="text/event-stream", headers=headers)

    async def close(request: Request, host: Backend) -> Response:
        params = request.path_params
        await host.call(
            CloseSession(
                agent_id=params["agent_id"],
                session_id=params["session_id"],
                key=idempotency_key(request),
            )
        )
        return Response(status_code=204)

    async def facts(request: Request, host: Backend) -> Response:
        return _json(await host.call(GetFacts(agent_id=request.path_params["agent_id"])))

    session = "/agents/{agent_id}/sessions/{session_id}"

    async def unrouted(request: Request, exc: Exception) -> Response:
        """A path or method the API does not have: JSON like every other error."""
        assert isinstance(exc, HTTPException)
        kind: ErrorType = "method_not_allowed" if exc.status_code == 405 else "not_found"
        if exc.status_code not in (404, 405):
            kind = "bad_request"
        response = _json(ErrorBody(type=kind, message=str(exc.detail)), exc.status_code)
        response.headers.update(exc.headers or {})
        return response

    app = Starlette(
        routes=[
            Route("/agents/{agent_id}/sessions", route(open_session), methods=["POST"]),
            Route("/agents/{agent_id}/sessions", route(sessions), methods=["GET"]),
            Route(session + "/messages", route(send), methods=["POST"]),
            Route(session + "/events", route(events), methods=["GET"]),
            Route(session, route(close), methods=["DELETE"]),
            Route("/agents/{agent_id}/facts", route(facts), methods=["GET"]),
            *approval_routes(route, idempotency_key),  # held tool calls (docs/approvals.md)
            *page_routes(
                route, guard, idempotency_key
            ),  # the web page and its routes (docs/web.md)
        ],
        lifespan=lifespan,
        exception_handlers={HTTPException: unrouted},
        middleware=[Middleware(BodyLimits, max_bytes=MAX_BODY_BYTES, timeout=read_timeout)],
    )
    app.state.token = token
    app.state.read_timeout = read_timeout
    app.state.guard = guard
    app.state.lifespan = lifespan
    return app


def running(gateway: Starlette) -> AbstractAsyncContextManager[None]:
    """The lifespan of ``gateway`` (made by ``create_app``), for an application that mounts
    it in its own app, whose lifespan does not run a mounted app's::

        gateway = create_app(start_backend)

        @asynccontextmanager
        async def lifespan(app):
            async with running(gateway):
                yield

        app = Starlette(routes=[Mount("/xai", app=gateway)], lifespan=lifespan)

    It enters the backend's factory (a ``Backend`` given as it is needs nothing) and
    leaves it when the block ends."""
    lifespan: Callable[[Starlette], AbstractAsyncContextManager[None]] = gateway.state.lifespan
    return lifespan(gateway)
