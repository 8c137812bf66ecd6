"""``xai serve``: an ASGI gateway (HTTP + Server-Sent Events) in front of a host of Agents.

``create_app(backend)`` is the Starlette app over any ``HostClient`` of the host API
(``xai.agent``: an ``AgentHost``, ``LocalBackend`` over one, or ``xai.cluster.RayHosts``);
``serve_app`` runs it under uvicorn with the bind rule (loopback, or a bearer token). See
docs/serve.md; the web page at ``/`` and the views it reads: docs/web.md.
"""

from xai.agent import (
    DayUsage,
    FactDetail,
    FactHistory,
    SessionUsage,
    UsageReport,
    WakeupView,
)
from xai.serve._app import (
    IDEMPOTENCY_HEADER,
    MAX_BODY_BYTES,
    READ_TIMEOUT,
    Accepted,
    ErrorBody,
    ErrorType,
    OpenRequest,
    SendMessage,
    create_app,
    running,
)
from xai.serve._backend import Backend, LocalBackend
from xai.serve._run import check_bind, is_loopback, serve_app

__all__ = [
    "IDEMPOTENCY_HEADER",
    "MAX_BODY_BYTES",
    "READ_TIMEOUT",
    "Accepted",
    "Backend",
    "DayUsage",
    "ErrorBody",
    "ErrorType",
    "FactDetail",
    "FactHistory",
    "LocalBackend",
    "OpenRequest",
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
