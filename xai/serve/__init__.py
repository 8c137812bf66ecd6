"""``xai serve``: an ASGI gateway (HTTP + Server-Sent Events) in front of a host of Agents.

``create_app(backend)`` is the Starlette app; ``Backend`` the host protocol it
calls (``LocalBackend`` over an in-process ``AgentHost``); ``serve_app`` runs it
under uvicorn with the bind rule (loopback, or a bearer token). See docs/serve.md.
"""

from xai.serve._app import (
    MAX_BODY_BYTES,
    Accepted,
    ErrorBody,
    ErrorType,
    OpenRequest,
    SendMessage,
    create_app,
)
from xai.serve._backend import Backend, LocalBackend
from xai.serve._run import check_bind, is_loopback, serve_app

__all__ = [
    "MAX_BODY_BYTES",
    "Accepted",
    "Backend",
    "ErrorBody",
    "ErrorType",
    "LocalBackend",
    "OpenRequest",
    "SendMessage",
    "check_bind",
    "create_app",
    "is_loopback",
    "serve_app",
]
