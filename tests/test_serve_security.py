"""Attacks on a real ``xai serve`` (the command, on 127.0.0.1, no token: the default mode),
issue 33: each fails on the code before its fix."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest

from tests.test_serve import cli_server

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def csrf_of(page: str) -> str:
    found = re.search(r'<meta name="xai-csrf" content="([^"]+)"', page)
    assert found is not None, page[:500]
    return found.group(1)


async def test_dns_rebinding_a_foreign_host_or_origin_is_refused(tmp_path: Path) -> None:
    """A page of evil.example whose name resolves to 127.0.0.1 reaches the server with
    ``Host: evil.example``: it gets neither the page (with its CSRF token) nor a write; a
    write carrying the token from a page of another origin is refused too."""
    root = tmp_path / "agents"
    async with (
        cli_server(root) as (url, _),
        httpx.AsyncClient(base_url=url, timeout=30) as client,
    ):
        port = url.rsplit(":", 1)[1]
        evil = {"Host": f"evil.example:{port}", "Origin": f"http://evil.example:{port}"}
        page = await client.get("/", headers={"Host": evil["Host"]})
        assert page.status_code == 400 and "xai-csrf" not in page.text
        mine = await client.get("/")  # as this machine's browser reads it
        assert mine.status_code == 200
        csrf = csrf_of(mine.text)
        for headers in (
            {**evil, "X-XAI-CSRF": csrf},  # rebound: the foreign name, the token stolen
            {"Origin": f"http://evil.example:{port}", "X-XAI-CSRF": csrf},  # another origin
            {"Origin": "null", "X-XAI-CSRF": csrf},
        ):
            refused = await client.post("/agents/ada/sessions", json={}, headers=headers)
            assert refused.status_code in (400, 403), (headers, refused.text)
        assert not (root / "ada").exists()  # nothing reached the Agents
        for name in ("localhost", "127.0.0.1"):  # the loopback names, with the page's origin
            origin = f"http://{name}:{port}"
            headers = {"Host": f"{name}:{port}", "Origin": origin, "X-XAI-CSRF": csrf}
            opened = await client.post("/agents/ada/sessions", json={}, headers=headers)
            assert opened.status_code == 201, opened.text
        assert (await client.get("/", headers={"Host": f"[::1]:{port}"})).status_code == 200


async def test_the_hosts_answered_for_are_configurable(tmp_path: Path) -> None:
    """``allowed_hosts`` adds the names an application serves the gateway under; with a
    token (which a rebinding page cannot have) any host is accepted unless they are given."""
    from xai.agent import AgentHost
    from xai.serve import create_app
    from xai.testing import ScriptedProvider

    async with AgentHost(tmp_path, lambda _: ScriptedProvider([])) as host:
        cases = [
            (create_app(host), "xai.internal", 400),
            (create_app(host, allowed_hosts=["xai.internal"]), "xai.internal", 200),
            (create_app(host, allowed_hosts=["xai.internal"]), "evil.example", 400),
            (create_app(host, token="t"), "xai.internal", 200),
            (create_app(host, token="t", allowed_hosts=["xai.internal"]), "evil.example", 400),
        ]
        for app, name, status in cases:
            transport = httpx.ASGITransport(app=app)
            async with httpx.AsyncClient(transport=transport, base_url=f"http://{name}") as client:
                got = await client.get("/", headers={"Authorization": "Bearer t"})
                assert got.status_code == status, (name, app.state.guard.hosts)


async def test_a_get_never_creates_an_agent(tmp_path: Path) -> None:
    """Any page's ``<img src=".../agents/x/facts">`` was enough to start an Agent and make
    its directory: a GET (no CSRF check) created it. Reads of an Agent the server does not
    have answer 404 and leave nothing behind; an explicit, checked write creates it."""
    root = tmp_path / "agents"
    async with (
        cli_server(root) as (url, _),
        httpx.AsyncClient(base_url=url, timeout=30) as client,
    ):
        base = "/agents/newcomer"
        reads = [
            base + "/sessions",
            base + "/facts",
            base + "/facts/f1",
            base + "/events",
            base + "/memory/search?q=tea",
            base + "/wakeups",
            base + "/usage",
            base + "/sessions/s1/events",
        ]
        for path in reads:
            response = await client.get(path)
            assert response.status_code == 404, (path, response.text)
            assert response.json()["type"] == "agent_not_found", path
        page = await client.get("/?agent=newcomer")  # the page itself starts nothing either
        assert page.status_code == 200
        assert not (root / "newcomer").exists()
        for method, path in (("POST", base + "/notify"), ("DELETE", base + "/facts/f1")):
            refused = await client.request(method, path, json={"name": "ping"})
            assert refused.status_code == 404, (path, refused.text)  # no Agent made for these
        assert not (root / "newcomer").exists()
        csrf = csrf_of(page.text)  # opening a Session: explicit, CSRF-checked for a browser
        opened = await client.post(
            base + "/sessions", json={}, headers={"X-XAI-CSRF": csrf, "Origin": url}
        )
        assert opened.status_code == 201, opened.text
        assert (root / "newcomer").is_dir()
        assert (await client.get(base + "/facts")).json() == []


async def test_a_mounted_gateway_has_the_body_limits_too(tmp_path: Path) -> None:
    """The limits are the app's own (not only ``xai serve``'s): mounted in an application,
    a body announced over 1 MiB is refused before it is read, and one streamed past it is
    cut there."""
    from starlette.applications import Starlette
    from starlette.routing import Mount

    from xai.agent import AgentHost
    from xai.serve import create_app
    from xai.testing import ScriptedProvider

    async with AgentHost(tmp_path, lambda _: ScriptedProvider([])) as host:
        outer = Starlette(routes=[Mount("/xai", app=create_app(host))])
        transport = httpx.ASGITransport(app=outer)
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
            pulled: list[int] = []

            async def body(pieces: int) -> AsyncIterator[bytes]:
                for _ in range(pieces):
                    pulled.append(1)
                    yield b" " * (1 << 20)

            announced = {"Content-Length": str(200 << 20)}
            path = "/xai/agents/ada/sessions"
            answer = await client.post(path, content=body(200), headers=announced)
            assert answer.status_code == 413 and answer.json()["type"] == "too_large"
            assert len(pulled) <= 1, f"{len(pulled)} MiB were read of a body refused by its length"
            pulled.clear()
            answer = await client.post(path, content=body(200))  # no length: counted
            assert answer.status_code == 413
            assert len(pulled) <= 3, f"{len(pulled)} MiB were read of a body past 1 MiB"
        assert not (tmp_path / "ada").exists()
