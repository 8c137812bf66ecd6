"""Who may use the web page and the gateway: the one-time login link, its cookie, and the
CSRF check of every write (through real HTTP on 127.0.0.1; no browser needed)."""

from __future__ import annotations

import contextlib
import re
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import httpx
import pytest
from starlette.applications import Starlette
from starlette.routing import Mount, Route

from tests.example_helpers import offline_env
from tests.serve_helpers import listening
from xai.agent import AgentHost
from xai.exceptions import UsageError
from xai.providers import OpenAIProvider
from xai.serve import LocalBackend, create_app, running

pytestmark = pytest.mark.anyio

TOKEN = "s3cret-token"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # uvicorn serves on asyncio only


@asynccontextmanager
async def served(
    root: Path, provider: OpenAIProvider, token: str | None
) -> AsyncIterator[tuple[httpx.AsyncClient, Starlette]]:
    async with AgentHost(root, lambda _: provider) as host:
        app = create_app(LocalBackend(host), token=token)
        async with listening(app) as url, httpx.AsyncClient(base_url=url, timeout=30) as client:
            yield client, app


def csrf_of(page: str) -> str:
    found = re.search(r'<meta name="xai-csrf" content="([^"]+)">', page)
    assert found is not None
    return found.group(1)


async def test_the_login_link_sets_a_cookie_once(tmp_path: Path, provider: OpenAIProvider) -> None:
    async with served(tmp_path, provider, TOKEN) as (client, app):
        assert (await client.get("/")).status_code == 401
        assert (await client.get("/login", params={"key": "guess"})).status_code == 401
        key = app.state.guard.login_key
        login = await client.get("/login", params={"key": key})
        assert login.status_code == 303 and login.headers["location"] == "/"
        cookie = login.headers["set-cookie"].lower()
        assert "httponly" in cookie and "samesite=strict" in cookie and TOKEN not in cookie
        page = await client.get("/")  # the client keeps the cookie
        assert page.status_code == 200 and "text/html" in page.headers["content-type"]
        assert "script-src 'self'" in page.headers["content-security-policy"]
        # Spent: the same link does not log in another browser.
        async with httpx.AsyncClient(base_url=client.base_url) as other:
            assert (await other.get("/login", params={"key": key})).status_code == 401
        # A write with the cookie alone is refused; with the page's CSRF token it goes.
        refused = await client.post("/agents/ada/sessions", json={})
        assert refused.status_code == 403 and refused.json()["type"] == "forbidden"
        headers = {"X-XAI-CSRF": csrf_of(page.text)}
        assert (
            await client.post("/agents/ada/sessions", json={}, headers=headers)
        ).status_code == 201
        # The bearer token still works for API clients, with no cookie.
        client.cookies.clear()
        bearer = {"Authorization": f"Bearer {TOKEN}"}
        assert (await client.get("/agents/ada/facts", headers=bearer)).status_code == 200
        assert (await client.get("/agents/ada/facts")).status_code == 401


async def test_a_write_from_another_site_is_refused(
    tmp_path: Path, provider: OpenAIProvider
) -> None:
    """Loopback, no token: a page of any site could POST to 127.0.0.1 (a form, fetch with
    no-cors): every write that a browser sends must carry the page's CSRF token."""
    async with served(tmp_path, provider, None) as (client, _):
        page = await client.get("/")
        assert page.status_code == 200
        for browser in (
            {"Origin": "https://evil.example"},
            {"Sec-Fetch-Site": "cross-site"},
            {"Origin": "null"},
            {"Cookie": "a=b"},
            {"X-XAI-CSRF": "not-the-token"},
        ):
            response = await client.post(
                "/agents/ada/sessions", content=b'{"purpose": "x"}', headers=browser
            )
            assert response.status_code == 403, browser
            assert response.json()["type"] == "forbidden"
        token = {"X-XAI-CSRF": csrf_of(page.text), "Origin": str(client.base_url)}
        opened = await client.post("/agents/ada/sessions", json={}, headers=token)
        assert opened.status_code == 201
        session = opened.json()["session_id"]
        deleted = await client.delete(
            f"/agents/ada/sessions/{session}", headers={"Origin": "https://evil.example"}
        )
        assert deleted.status_code == 403
        # An API client (no browser's headers at all) is not a browser: it goes on working.
        assert (await client.post("/agents/ada/sessions", json={})).status_code == 201
        assert (await client.delete(f"/agents/ada/sessions/{session}")).status_code == 204


async def test_every_write_is_csrf_checked(tmp_path: Path, provider: OpenAIProvider) -> None:
    """Every route that writes (any method but GET and HEAD), the API's and the page's: a
    browser's write without the page's CSRF token is refused before it does anything."""
    (tmp_path / "x").mkdir()  # an Agent it has (a read never creates one)
    async with served(tmp_path, provider, None) as (client, app):
        writes = [
            (method, route.path)
            for route in app.routes
            if isinstance(route, Route)
            for method in sorted(route.methods or ())
            if method not in ("GET", "HEAD")
        ]
        assert len(writes) >= 9, writes
        for method, path in writes:
            url = re.sub(r"\{\w+\}", "x", path)
            for browser in ({"Origin": "https://evil.example"}, {"X-XAI-CSRF": "guess"}):
                response = await client.request(method, url, content=b"{}", headers=browser)
                assert response.status_code == 403, (method, path, response.text)
        assert (await client.get("/agents/x/wakeups")).json() == []  # nothing was added


async def test_the_page_escapes_what_it_shows(tmp_path: Path, provider: OpenAIProvider) -> None:
    async with served(tmp_path, provider, None) as (client, _):
        bad = await client.get("/", params={"agent": '"><script>alert(1)</script>'})
        assert bad.status_code == 400 and "<script>" not in bad.headers["content-type"]
        page = await client.get("/", params={"agent": "ada.1"})
        assert '<meta name="xai-agent" content="ada.1">' in page.text
        script = await client.get("/static/app.js")
        assert script.status_code == 200 and "textContent" in script.text
        assert "innerHTML" not in script.text and "insertAdjacentHTML" not in script.text
        assert (await client.get("/static/../_web.py")).status_code == 404


async def test_xai_serve_prints_a_login_link_that_works_once(tmp_path: Path) -> None:
    (tmp_path / "main").mkdir()  # an Agent it has (a read never creates one)
    process = await anyio.open_process(
        [sys.executable, "-m", "xai", "serve", "--root", str(tmp_path), "--port", "0"],
        env=offline_env(XAI_SERVE_TOKEN=TOKEN),
        stdout=subprocess.DEVNULL,
    )
    try:
        assert process.stderr is not None
        text = ""
        with anyio.fail_after(60):  # the start of a child process on a loaded machine
            while "the web page: " not in text or not text.endswith("\n"):
                text += (await process.stderr.receive()).decode()
        link = text.split("the web page: ", 1)[1].split()[0]
        assert "/login?key=" in link and TOKEN not in text
        async with httpx.AsyncClient(timeout=30, follow_redirects=True) as browser:
            page = await browser.get(link)  # the cookie, then the page
            assert page.status_code == 200 and 'name="xai-csrf"' in page.text
            assert (await browser.get(page.url.join("/agents/main/facts"))).json() == []
        async with httpx.AsyncClient(timeout=30) as other:
            assert (await other.get(link)).status_code == 401  # spent
    finally:
        with anyio.CancelScope(shield=True):
            with contextlib.suppress(ProcessLookupError):
                process.kill()
            await process.wait()
            await process.aclose()


async def test_mounted_in_another_app_under_a_prefix(
    tmp_path: Path, provider: OpenAIProvider
) -> None:
    """``Mount("/xai", app=gateway)`` in an application's app: the page's base, the login
    link's redirect and cookie stay under the prefix; the gateway's backend factory runs in
    the application's lifespan (``running``), and a 503 says so when nobody entered it."""

    @asynccontextmanager
    async def hosting() -> AsyncIterator[LocalBackend]:
        async with AgentHost(tmp_path, lambda _: provider) as host:
            yield LocalBackend(host)

    gateway = create_app(hosting, token=TOKEN)
    app = Starlette(routes=[Mount("/xai", app=gateway)])
    bearer = {"Authorization": f"Bearer {TOKEN}"}
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
        idle = await client.get("/xai/agents/ada/facts", headers=bearer)
        assert idle.status_code == 503 and "running(gateway)" in idle.json()["message"]
        async with running(gateway):  # what the application's lifespan enters
            page = await client.get("/xai/", headers=bearer)
            assert '<base href="/xai/">' in page.text
            assert 'href="static/app.css"' in page.text and 'action="./"' in page.text
            assert "base-uri 'self'" in page.headers["content-security-policy"]
            login = await client.get("/xai/login", params={"key": gateway.state.guard.login_key})
            assert login.status_code == 303 and login.headers["location"] == "/xai/"
            assert "path=/xai/" in login.headers["set-cookie"].lower()
            csrf = {"X-XAI-CSRF": csrf_of(page.text), **bearer}  # (the client has the cookie)
            opened = await client.post("/xai/agents/ada/sessions", json={}, headers=csrf)
            assert opened.status_code == 201
            with pytest.raises(UsageError):  # one lifespan at a time
                async with running(gateway):
                    pass
        assert (await client.get("/xai/agents/ada/facts", headers=bearer)).status_code == 503
