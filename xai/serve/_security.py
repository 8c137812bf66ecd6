"""Who may call the gateway: the bearer token (or its cookie) and CSRF protection of writes.

- With a token (required beyond loopback), a request carries ``Authorization: Bearer
  <token>`` or the cookie a browser got from the one-time login link printed at start-up.
- Every write (any method but GET/HEAD) is CSRF-checked: it carries the page's CSRF token in
  ``X-XAI-CSRF``, or it comes from no browser at all (no ``Origin``, ``Sec-Fetch-Site`` or
  ``Cookie`` header: a browser always sends ``Origin`` with a POST or DELETE, so a page of
  another site cannot pass for such a client).
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from typing import Literal, TypeAlias

from starlette.requests import Request

__all__ = ["COOKIE", "CSRF_HEADER", "Guard", "RefusalType", "Refused"]

COOKIE = "xai_token"
CSRF_HEADER = "x-xai-csrf"

RefusalType: TypeAlias = Literal["bad_request", "unauthorized", "forbidden", "not_found"]


class Refused(Exception):
    """A request turned away with ``status`` and an error ``type`` (the guard's 401 and
    403; the page's routes' 400 and 404)."""

    def __init__(self, status: int, type: RefusalType, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.type: RefusalType = type


def _same(given: str, expected: str) -> bool:
    return hmac.compare_digest(given.encode(), expected.encode())


class Guard:
    """The gateway's checks, made once per app: a fresh CSRF token and login key each start."""

    def __init__(self, token: str | None) -> None:
        self.token = token
        self.csrf = secrets.token_urlsafe(32)
        """Handed to the page (a ``<meta>``); a write from a browser must echo it."""
        self.login_key: str | None = secrets.token_urlsafe(24) if token else None
        """For the one-time link ``/login?key=...``; spent by its first use."""
        self._cookie = (
            hmac.new(token.encode(), b"xai-web-cookie", hashlib.sha256).hexdigest()
            if token
            else None
        )

    def check(self, request: Request) -> None:
        """Raise ``Refused`` unless ``request`` may go on."""
        if self.token is not None and not self.authorized(request):
            raise Refused(
                401,
                "unauthorized",
                "missing or wrong bearer token (a browser: open the one-time link "
                "printed when the server started)",
            )
        if request.method in ("GET", "HEAD"):
            return
        given = request.headers.get(CSRF_HEADER)
        if given is not None:
            if not _same(given, self.csrf):
                raise Refused(403, "forbidden", "wrong CSRF token: reload the page")
            return
        headers = request.headers
        if "origin" in headers or "sec-fetch-site" in headers or "cookie" in headers:
            raise Refused(
                403, "forbidden", f"a write from a browser needs the {CSRF_HEADER} header"
            )

    def authorized(self, request: Request) -> bool:
        assert self.token is not None and self._cookie is not None
        header = request.headers.get("authorization")
        if header is not None:
            return _same(header, f"Bearer {self.token}")
        cookie = request.cookies.get(COOKIE)
        return cookie is not None and _same(cookie, self._cookie)

    def login(self, key: str) -> str | None:
        """The cookie's value if ``key`` is the unspent login key (spending it), else None."""
        expected = self.login_key
        if expected is None or self._cookie is None or not _same(key, expected):
            return None
        self.login_key = None
        return self._cookie
