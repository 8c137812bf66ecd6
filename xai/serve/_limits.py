"""How much a client can make the gateway hold, and for how long: a request body's size and
the time it may take to arrive.

A body used to be read whole and measured after: a 600 MiB POST took the gateway from 292
to 1,292 MiB before its 413 (issue 33). Now, around every request (``BodyLimits``, an ASGI
middleware of the app, so an application that mounts the gateway has it too):

- a ``Content-Length`` over the limit is answered 413 at once, before a byte of the body is
  read; what the client sends of it anyway is read and dropped by the server, never kept;
- a body of unknown length (chunked) is counted as it is read and refused (413) the moment it
  passes the limit, so at most the limit (plus one read) is ever held;
- a body that has not all arrived within the read timeout from when the gateway starts
  reading it (at once, for every route that takes one) is answered 408 and the connection
  closed.

A request head that does not arrive in time, and an idle connection, are the server's
(``xai._http``: the same timeout).
"""

from __future__ import annotations

from typing import Any

import anyio
import msgspec

from xai.serve._security import Refused

__all__ = ["READ_TIMEOUT", "BodyLimits"]

READ_TIMEOUT = 30.0
"""Seconds a request may take to arrive: its head from the connection (or the previous
answer), its whole body from the first read of it."""

Scope = dict[str, Any]
Message = dict[str, Any]
Receive = Any
Send = Any


class BodyLimits:
    """The ASGI middleware that enforces ``max_bytes`` and ``timeout`` on request bodies."""

    def __init__(self, app: Any, *, max_bytes: int, timeout: float) -> None:
        self.app = app
        self.max_bytes = max_bytes
        self.timeout = timeout

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        length = _content_length(scope)
        if length is not None and length > self.max_bytes:
            # Answered before the body is read. The connection stays open (the server reads
            # and drops the rest) so that the client reads this answer instead of a reset;
            # the server's read timeout ends it if no next request comes.
            message = f"the body ({length} bytes) is larger than {self.max_bytes} bytes"
            await _answer(send, 413, "too_large", message)
            return
        if length == 0 or (length is None and scope["method"] in ("GET", "HEAD")):
            await self.app(scope, receive, send)  # no body to wait for
            return
        deadline: float | None = None
        read = 0
        done = False

        async def limited() -> Message:
            nonlocal deadline, read, done
            if done:  # the body is in: what follows is a disconnect, whenever it comes
                return await receive()  # type: ignore[no-any-return]
            if deadline is None:  # (from the first read: a handler reads its body first)
                deadline = anyio.current_time() + self.timeout
            with anyio.move_on_after(deadline - anyio.current_time()):
                message: Message = await receive()
                if message["type"] != "http.request":
                    done = True
                    return message
                read += len(message.get("body", b""))
                if read > self.max_bytes:
                    raise Refused(
                        413, "too_large", f"the body is larger than {self.max_bytes} bytes"
                    )
                done = not message.get("more_body", False)
                return message
            raise Refused(
                408,
                "request_timeout",
                f"the body did not arrive within {self.timeout:g} seconds",
            )

        await self.app(scope, limited, send)


def _content_length(scope: Scope) -> int | None:
    for name, value in scope["headers"]:
        if name == b"content-length":
            try:
                return int(value)
            except ValueError:  # (the HTTP parser refuses one before the app sees it)
                return None
    return None


async def _answer(send: Send, status: int, type: str, message: str) -> None:
    body = msgspec.json.encode({"type": type, "message": message})
    headers = [(b"content-type", b"application/json"), (b"content-length", b"%d" % len(body))]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
