"""``xai serve``: an ASGI gateway (HTTP + Server-Sent Events) in front of a host of Agents.

``create_app(backend)`` is the Starlette app; ``Backend`` the host protocol it
calls (``LocalBackend`` over an in-process ``AgentHost``); ``serve_app`` runs it
under uvicorn with the bind rule (loopback, or a bearer token). See docs/serve.md; the web
page at ``/`` (``PageBackend``, the views it reads): docs/web.md.
"""

from xai.serve._app import (
    MAX_BODY_BYTES,
    Accepted,
    ErrorBody,
    ErrorType,
    OpenRequest,
    SendMessage,
    create_app,
    running,
)
from xai.serve._backend import Backend, LocalBackend, PageBackend
from xai.serve._run import check_bind, is_loopback, serve_app
from xai.serve._views import (
    DayUsage,
    FactDetail,
    FactHistory,
    SessionUsage,
    UsageReport,
    WakeupView,
)

__all__ = [
    "MAX_BODY_BYTES",
    "Accepted",
    "Backend",
    "DayUsage",
    "ErrorBody",
    "ErrorType",
    "FactDetail",
    "FactHistory",
    "LocalBackend",
    "OpenRequest",
    "PageBackend",
    "SendMessage",
    "SessionUsage",
    "UsageReport",
    "WakeupView",
    "check_bind",
    "create_app",
    "is_loopback",
    "running",
    "serve_app",
]
