"""The whole-request limit (``LLMConfig.request_limit``), set once per request.

``LLMConfig.timeout`` bounds each wait for a byte; a server that keeps
trickling never trips it, so the whole answer has a limit of its own. Checked
with a cancel scope around every read it would cost a scope and a clock read
per streamed event (a third of the provider's CPU in a profile, issue 35).
Instead the limit is set once, and a read is only bounded while it could
outlast it: one read cannot take longer than the read timeout, so while more
than that remains before the deadline a read goes unguarded, and from then on
(or always, when reads have no timeout) each read gets a cancel scope. The
connection and the response's headers are bounded by one scope per request.
"""

from __future__ import annotations

import math
import time
from collections.abc import AsyncIterator, Awaitable
from typing import TypeVar

import anyio

from xai.exceptions import ProviderTimeoutError

__all__ = ["RequestLimit"]

T = TypeVar("T")


class RequestLimit:
    """One answer's deadline, ``limit`` seconds from now.

    ``read_timeout`` is the most one read of the body can wait (``None``: no
    bound, so every read is guarded).
    """

    __slots__ = ("bound_from", "deadline", "limit")

    def __init__(self, limit: float, read_timeout: float | None) -> None:
        self.limit = limit
        self.deadline = time.monotonic() + limit
        self.bound_from = -math.inf if read_timeout is None else self.deadline - read_timeout
        """From this instant (``time.monotonic()``) a read could outlast the deadline."""

    def error(self) -> ProviderTimeoutError:
        return ProviderTimeoutError(
            f"the model endpoint was still answering after the request limit of {self.limit}s "
            "(LLMConfig.request_limit)",
            timeout=self.limit,
        )

    async def bounded(self, step: Awaitable[T]) -> T:
        """``await step``, or ``ProviderTimeoutError`` once the deadline passes."""
        with anyio.move_on_after(self.deadline - time.monotonic()):
            return await step
        raise self.error()

    def guard(self, body: AsyncIterator[bytes]) -> AsyncIterator[bytes]:
        """``body``, each read bounded by the deadline once it could outlast it."""
        return _Guarded(body, self)


class _Guarded:
    """An async iterator over a body whose reads the request limit bounds.

    ``__anext__`` hands back the body's own awaitable while the deadline is far (no
    coroutine frame of ours per piece), and a bounded one once it is near.
    """

    __slots__ = ("_limit", "_next")

    def __init__(self, body: AsyncIterator[bytes], limit: RequestLimit) -> None:
        self._next = body.__anext__
        self._limit = limit

    def __aiter__(self) -> _Guarded:
        return self

    def __anext__(self) -> Awaitable[bytes]:
        limit = self._limit
        if time.monotonic() < limit.bound_from:
            return self._next()
        return limit.bounded(self._next())
