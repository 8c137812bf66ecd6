"""Who may call the gateway: the hosts it answers for, the bearer token (or its cookie) and
CSRF protection of writes.

- The ``Host`` of every request must be one the gateway was started for (DNS rebinding: a
  page of another site whose name resolves to 127.0.0.1 would otherwise read the page, its
  CSRF token, and write). Without a token: the loopback names (``localhost``, ``127.0.0.1``,
  ``::1``), the address it was bound to, and the hosts it was given (``allowed_hosts``);
  400 otherwise. With a token the token admits a client (a rebinding page has neither it
  nor its cookie), so any ``Host`` is accepted unless ``allowed_hosts`` is given.
- A write that carries an ``Origin`` (a browser's) must come from one of those hosts (with
  a token and no ``allowed_hosts``: from the request's own host); 403 otherwise.

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
import ipaddress
import secrets
from collections.abc import Iterable
from typing import Literal, TypeAlias
from urllib.parse import urlsplit

from starlette.requests import Request

__all__ = ["COOKIE", "CSRF_HEADER", "LOOPBACK_HOSTS", "Guard", "RefusalType", "Refused"]

LOOPBACK_HOSTS = frozenset({"localhost", "127.0.0.1", "::1"})
"""The hosts a gateway answers for by default."""

COOKIE = "xai_token"
CSRF_HEADER = "x-xai-csrf"

RefusalType: TypeAlias = Literal[
    "bad_request", "unauthorized", "forbidden", "not_found", "too_large", "request_timeout"
]


class Refused(Exception):
    """A request turned away with ``status`` and an error ``type`` (the guard's 401 and
    403; the page's routes' 400 and 404; the body limits' 413 and 408)."""

    def __init__(self, status: int, type: RefusalType, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.type: RefusalType = type


def _same(given: str, expected: str) -> bool:
    return hmac.compare_digest(given.encode(), expected.encode())


class Guard:
    """The gateway's checks, made once per app: a fresh CSRF token and login key each start."""

    def __init__(self, token: str | None, allowed_hosts: Iterable[str] | None = None) -> None:
        self.token = token
        given = {_name(_host_of(h)) for h in allowed_hosts or ()}  # ("name:port": the name)
        self.hosts: set[str] | None = set(LOOPBACK_HOSTS) | given
        """The host names requests may name (``None``: any, with a token and no list)."""
        if token is not None and allowed_hosts is None:
            self.hosts = None
        self.csrf = secrets.token_urlsafe(32)
        """Handed to the page (a ``<meta>``); a write from a browser must echo it."""
        self.login_key: str | None = secrets.token_urlsafe(24) if token else None
        """For the one-time link ``/login?key=...``; spent by its first use."""
        self._cookie = (
            hmac.new(token.encode(), b"xai-web-cookie", hashlib.sha256).hexdigest()
            if token
            else None
        )

    def allow(self, host: str) -> None:
        """Answer for ``host`` too (the address the server was bound to)."""
        if self.hosts is not None:
            name = _name(host)
            if not _wildcard(name):
                self.hosts.add(name)

    def check_host(self, request: Request) -> None:
        """Raise ``Refused`` unless the request names a host the gateway answers for."""
        if self.hosts is None:
            return
        host = _name(_host_of(request.headers.get("host", "")))
        if host not in self.hosts:
            raise Refused(
                400,
                "bad_request",
                f"host {host!r} is not one this server answers for (a server on loopback "
                "answers for localhost, 127.0.0.1 and ::1; others: allowed_hosts)",
            )

    def check_origin(self, request: Request) -> None:
        """Raise ``Refused`` if a write comes from a page of a host not answered for."""
        origin = request.headers.get("origin")
        if origin is None:
            return
        parts = urlsplit(origin)
        name = _name(parts.hostname or "")
        if self.hosts is not None:
            allowed = name in self.hosts
        else:  # a token and no list: the page must be this server's own
            allowed = parts.netloc.lower() == request.headers.get("host", "").lower()
        if not allowed or parts.scheme not in ("http", "https"):
            raise Refused(403, "forbidden", f"a write from the page of {origin!r} is refused")

    def check(self, request: Request) -> None:
        """Raise ``Refused`` unless ``request`` may go on."""
        self.check_host(request)
        if self.token is not None and not self.authorized(request):
            raise Refused(
                401,
                "unauthorized",
                "missing or wrong bearer token (a browser: open the one-time link "
                "printed when the server started)",
            )
        if request.method in ("GET", "HEAD"):
            return
        self.check_origin(request)
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


def _host_of(header: str) -> str:
    """The host of a ``Host`` header: without its port (``[::1]:8000`` -> ``::1``)."""
    header = header.strip()
    if header.startswith("["):
        return header[1 : header.find("]")] if "]" in header else header
    return header.rsplit(":", 1)[0] if header.count(":") == 1 else header


def _name(host: str) -> str:
    """A host as compared: lower case, no brackets, no trailing dot."""
    return host.strip().strip("[]").rstrip(".").lower()


def _wildcard(name: str) -> bool:
    try:
        return ipaddress.ip_address(name).is_unspecified
    except ValueError:
        return name == ""
