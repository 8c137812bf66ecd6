"""Sending a provider's requests on its own HTTP client, with the headers the SDK built.

The SDK's generic ``post`` rebuilds everything for every request: it copies its
options twice, merges and validates headers, prepares the URL and its query,
and wraps the send in its auth and retry layers. For a provider that built its
own ``openai`` client from an ``LLMConfig`` none of that changes between
requests, and it cost about a third of a Query's client CPU (issue 35).

So the first request of each endpoint goes through the SDK, and the request it
sent (``response.request``: URL and headers, auth included) becomes the
template: later requests are built from it on the same ``httpx2`` client the SDK
uses (the provider hands that client to the SDK, so it is the provider's own),
with a new body. The SDK keeps deciding auth, base URL and headers; an HTTP error
status is read into the message and code the SDK's exception would have carried
(``status_reason``), so it maps to the same typed error. An injected ``openai`` client is never bypassed: its auth
may change between requests.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import httpx2

__all__ = ["DirectSender", "status_message", "status_reason"]

_PER_BODY = frozenset({"content-length", "transfer-encoding", "cookie"})
"""Headers that describe one body (or, the cookies, the client's state), so a template
must not keep them."""


def status_message(status: int, body: object) -> tuple[str, str]:
    """The message and code of an error response's (JSON-decoded) body, as the SDK's
    exception states them: the body's ``error.message`` (or ``message``) when it has one,
    else ``Error code: {status}``; the code is ``code`` or ``type``."""
    inner = body.get("error", body) if isinstance(body, Mapping) else None
    message = inner.get("message") if isinstance(inner, Mapping) else None
    code = str(inner.get("code") or inner.get("type") or "") if isinstance(inner, Mapping) else ""
    if isinstance(message, str) and message:
        return message, code
    return f"Error code: {status}", code


async def status_reason(response: httpx2.Response) -> tuple[str, str]:
    """``status_message`` of a response with an HTTP error status (its body is read here)."""
    await response.aread()
    text = response.text.strip()
    try:
        body: object = json.loads(text)
    except ValueError:
        body = text
    return status_message(response.status_code, body)


class DirectSender:
    """Sends POSTs on ``http`` from the template of the first request to each path.

    ``learn`` takes the template from a response the SDK opened; until a path has
    one (``knows``), the caller goes through the SDK.
    """

    __slots__ = ("_extensions", "_http", "_key", "_templates")

    def __init__(self, http: httpx2.AsyncClient) -> None:
        self._http = http
        self._templates: dict[str, tuple[httpx2.URL, httpx2.Headers]] = {}
        self._key: object = None
        self._extensions = {"timeout": http.timeout.as_dict()}

    def learn(self, path: str, response: httpx2.Response, key: object) -> None:
        """Keep the URL and headers of the request behind ``response`` for ``path``, sent
        with the client's ``key``. A new key forgets every template learnt with the old."""
        import httpx2

        if key is not self._key:
            self._templates.clear()
            self._key = key
        request = response.request
        headers = [(k, v) for k, v in request.headers.raw if k.lower().decode() not in _PER_BODY]
        self._templates[path] = (request.url, httpx2.Headers(headers))

    def knows(self, path: str, key: object) -> bool:
        """Whether ``path`` has its template, learnt with the client's current ``key`` (an
        application may set ``provider.client.api_key``: the SDK then sends the next
        request, with the new key, and it becomes the template)."""
        return key is self._key and path in self._templates

    async def send(self, path: str, content: bytes) -> httpx2.Response:
        """The open (streamed) response to a POST of ``content`` to ``path``, which must
        have its template (``knows``). Whatever its status: an error status is the
        caller's to map (``status_reason``); transport errors propagate as ``httpx2``'s.

        The template holds the client's own headers already (the SDK's request was built
        on it), so the request is made from it directly; only cookies the client keeps
        from earlier answers need the client's merge."""
        import httpx2

        url, headers = self._templates[path]
        http = self._http
        if http.cookies:
            request = http.build_request("POST", url, headers=headers, content=content)
        else:
            request = httpx2.Request(
                "POST", url, headers=headers, content=content, extensions=self._extensions
            )
        return await http.send(request, stream=True)
