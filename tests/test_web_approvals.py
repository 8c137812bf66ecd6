"""The web page approves and denies held tool calls, in Debian's Chromium driven by Playwright
(as ``test_web_browser.py``: a real gateway on 127.0.0.1, every wait an ``expect``)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator, Mapping
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio.from_thread
import pytest

from tests.serve_helpers import listening
from tests.session_helpers import is_side_request, last_content
from tests.test_approvals_host import Vault
from tests.test_web_browser import (
    WAIT_MS,
    browser,
    open_session,
    send,
    shots,
    turn_of,
    watched,
)
from xai.agent import AgentHost
from xai.serve import LocalBackend, create_app
from xai.testing import OpenAIWireServer, Reply, ScriptedCall

try:
    from playwright.sync_api import Browser, expect
except ImportError:  # pragma: no cover (test_web_browser says how to install it)
    raise

__all__ = ["browser", "shots"]  # the fixtures, imported

AGENT = "vaults"


def model(body: Mapping[str, Any]) -> Reply | None:
    if is_side_request(body):
        return None
    last = body["messages"][-1]
    if last["role"] == "tool":
        return Reply(text=f"The vault says: {last['content']}")
    text = last_content(body)
    if text.startswith("open door "):
        door = text.removeprefix("open door ")
        call = ScriptedCall(name="open_vault", id=f"call-{door}", arguments={"door": door})
        return Reply(tool_calls=(call,))
    return Reply(text="ok")


class Site:
    def __init__(self, url: str, vault: Vault) -> None:
        self.url = url
        self.vault = vault


@asynccontextmanager
async def serving(root: Path, server: OpenAIWireServer, vault: Vault) -> AsyncIterator[str]:
    provider = server.provider()
    async with (
        provider,
        AgentHost(root, lambda _: provider, tools=[vault.tool]) as host,
        listening(create_app(LocalBackend(host))) as url,
    ):
        yield url


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    vault = Vault()
    with OpenAIWireServer() as server:
        server.script.add_responder(model)
        with (
            anyio.from_thread.start_blocking_portal("asyncio") as portal,
            portal.wrap_async_context_manager(
                serving(tmp_path_factory.mktemp("agents"), server, vault)
            ) as url,
        ):
            yield Site(url, vault)


def test_the_page_approves_one_held_call_and_denies_another(
    browser: Browser, site: Site, shots: Path
) -> None:
    expect.set_options(timeout=WAIT_MS)
    with watched(browser) as seen:
        page = seen.page
        page.goto(f"{site.url}/?agent={AGENT}")
        open_session(page, "vault work")
        send(page, "open door A")
        held = page.locator("#approvals > li")
        expect(held).to_have_count(1)
        expect(page.locator("#approvals-title")).to_be_visible()
        expect(held.locator(".args")).to_have_text('{"door":"A"}')
        page.screenshot(path=shots / "approval.png", full_page=True)
        # Without the page's CSRF header a browser's write is refused.
        status = page.evaluate(
            """async () => (await fetch(document.querySelector("#approvals > li")
                  .dataset.session ? "agents/vaults/sessions/" +
                  document.querySelector("#approvals > li").dataset.session +
                  "/approvals/call-A" : "", {method: "POST", body: '{"approved": true}',
                  headers: {"Content-Type": "application/json"}})).status"""
        )
        assert status == 403
        held.get_by_role("button", name="Approve open_vault").click()
        turn = turn_of(page, "open door A")
        expect(turn).to_have_attribute("data-status", "completed")
        expect(turn).to_contain_text("door A open")
        expect(held).to_have_count(0)
        expect(page.locator("#approvals-title")).to_be_hidden()

        send(page, "open door B")
        expect(held).to_have_count(1)
        held.get_by_label("Reason to deny open_vault").fill("not today")
        held.get_by_role("button", name="Deny open_vault").click()
        turn = turn_of(page, "open door B")
        expect(turn).to_have_attribute("data-status", "completed")
        expect(turn).to_contain_text("not today")
        expect(held).to_have_count(0)
    assert site.vault.opened == ["A"]
