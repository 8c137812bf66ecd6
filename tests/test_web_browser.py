"""The web page of ``xai serve`` in a real browser: Debian's Chromium, driven by Playwright.

The gateway runs over a real socket on 127.0.0.1 (in a thread with its own event loop) on the
scripted OpenAI-wire model (``xai demo``'s, plus a slow story and a gated tool). One browser
for the module, one page reused by the tests in order. Every wait is Playwright's
auto-waiting ``expect`` on the page's DOM: no sleeps. A screenshot of each view is saved
under the directory printed at the start (``XAI_ARTIFACTS``, else pytest's temporary one).
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
from collections.abc import AsyncIterator, Iterator, Mapping
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, NamedTuple

import anyio
import anyio.abc
import anyio.from_thread
import pytest
from starlette.applications import Starlette
from starlette.routing import Mount

from tests.serve_helpers import listening
from tests.session_helpers import is_side_request, last_content
from xai.agent import AgentHost
from xai.cli._demo import get_weather
from xai.serve import LocalBackend, create_app
from xai.testing import OpenAIWireServer, Reply, ScriptedCall, demo_model

CHROMIUM = "/usr/bin/chromium"
WAIT_MS = 30_000
"""The longest any expectation waits for the page (a loaded machine)."""
AGENT = "web"
PREFIX = "/embedded"
STORY = "Once upon a time " + " ".join(f"word{i}" for i in range(400))
TOKEN = "s3cret-token"
SCRIPT = 'I like <script>window["xss"]=1</script><img src=x onerror=xss=2> green tea'

try:
    from playwright.sync_api import (
        Browser,
        BrowserContext,
        Locator,
        Page,
        Request,
        expect,
        sync_playwright,
    )
except ImportError as error:  # `make check` installs it (the `web` extra)
    raise ImportError(
        f"{error}: the browser tests need Playwright (pip install -e '.[web]') and "
        f"Debian's Chromium at {CHROMIUM} (`make browser` installs both)"
    ) from None


def scripted(body: Mapping[str, Any]) -> Reply | None:
    if is_side_request(body):
        return None
    text = last_content(body)
    if text == "wait for the gate":
        return Reply(text="Part one, before the gate. ", tool_calls=(ScriptedCall(name="gate"),))
    if text == "save my notes":
        return Reply(tool_calls=(ScriptedCall(name="save_notes", arguments={"path": "<i>n</i>"}),))
    if text == "tell me a long story":
        return Reply(text=STORY, chunk_chars=6, chunk_delay=0.05)  # ~20 s: cancelled early
    return None


DISK_FULL = "<b>disk</b> is full"


async def save_notes(path: str) -> str:
    """Save the notes to ``path``."""
    raise OSError(DISK_FULL)


class Gate:
    """A tool that waits until the test opens it."""

    def __init__(self) -> None:
        self.release = anyio.Event()

    async def gate(self) -> str:
        """Wait until the gate opens."""
        await self.release.wait()
        self.release = anyio.Event()
        return "released"


class Relay:
    """A TCP relay between the browser and the gateway that can cut every connection at
    once: a network blip, for the page's EventSource to reconnect through."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.scopes: set[anyio.CancelScope] = set()
        self.open = anyio.Event()
        self.open.set()

    async def serve(self, *, task_status: anyio.abc.TaskStatus[int]) -> None:
        listener = await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=0)
        async with listener:  # (closed when the serving is cancelled)
            task_status.started(listener.extra(anyio.abc.SocketAttribute.local_port))
            await listener.serve(self.relay)

    async def relay(self, client: anyio.abc.SocketStream) -> None:
        async def pipe(source: anyio.abc.SocketStream, sink: anyio.abc.SocketStream) -> None:
            with contextlib.suppress(anyio.EndOfStream, anyio.BrokenResourceError):
                async for data in source:
                    await sink.send(data)
            scope.cancel()  # one side ended: so does the other

        await self.open.wait()  # (held: the browser's new connections wait here)
        async with client, await anyio.connect_tcp("127.0.0.1", self.port) as server:
            with anyio.CancelScope() as scope:
                self.scopes.add(scope)
                try:
                    async with anyio.create_task_group() as group:
                        group.start_soon(pipe, client, server)
                        group.start_soon(pipe, server, client)
                finally:
                    self.scopes.discard(scope)

    def cut(self) -> None:
        for scope in list(self.scopes):
            scope.cancel()

    def hold(self) -> None:
        """Cut every connection, and keep the new ones waiting until ``release``."""
        self.open = anyio.Event()
        self.cut()

    def release(self) -> None:
        self.open.set()


class Served(NamedTuple):
    url: str
    """The gateway through the relay: what the browser uses."""
    direct: str
    """The gateway itself (what the relay connects to)."""
    login: str
    """The gateway with a token (as ``xai serve`` beyond loopback): the one-time login link."""
    gate: Gate
    relay: Relay


@asynccontextmanager
async def serving(root: Path, model: OpenAIWireServer) -> AsyncIterator[Served]:
    gate = Gate()
    provider = model.provider()
    # The gateway at / and, as an application embeds it, mounted at /embedded/ too; and the
    # same Agents with a token and the one-time link, as `XAI_SERVE_TOKEN=... xai serve
    # --host 0.0.0.0` serves them, bound to loopback as every test server is (a gateway
    # that has a token asks for it on every address).
    async with (
        provider,
        AgentHost(root, lambda _: provider, tools=[get_weather, gate.gate, save_notes]) as host,
    ):
        gateway = create_app(LocalBackend(host))
        app = Starlette(routes=[Mount(PREFIX, app=gateway), Mount("/", app=gateway)])
        tokened = create_app(LocalBackend(host), token=TOKEN)
        async with (
            listening(app) as url,
            listening(tokened) as tokened_url,
            anyio.create_task_group() as group,
        ):
            login = f"{tokened_url}/login?key={tokened.state.guard.login_key}"
            relay = Relay(int(url.rsplit(":", 1)[1]))
            port = await group.start(relay.serve)
            try:
                yield Served(f"http://127.0.0.1:{port}", url, login, gate, relay)
            finally:
                group.cancel_scope.cancel()  # the relay


class Site:
    def __init__(
        self, served: Served, portal: anyio.from_thread.BlockingPortal, root: Path
    ) -> None:
        self.root = root
        """The host's directory (an Agent's is ``root / AGENT``)."""
        self.url = served.url
        self.direct = served.direct
        self.login = served.login
        self.gate = served.gate
        self.relay = served.relay
        self.portal = portal

    def open_gate(self) -> None:
        self.portal.call(lambda: self.gate.release.set())

    def cut(self) -> None:
        """Drop every connection of the browser (it reconnects)."""
        self.portal.call(self.relay.cut)

    @contextlib.contextmanager
    def away(self) -> Iterator[None]:
        """The browser is cut off (every connection dropped, new ones wait) in the block."""
        self.portal.call(self.relay.hold)
        try:
            yield
        finally:
            self.portal.call(self.relay.release)


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    root = tmp_path_factory.mktemp("agents")
    with OpenAIWireServer() as model:
        model.script.add_responder(scripted)
        model.script.add_responder(demo_model)
        with (
            anyio.from_thread.start_blocking_portal("asyncio") as portal,
            portal.wrap_async_context_manager(serving(root, model)) as served,
        ):
            yield Site(served, portal, root)


@pytest.fixture(scope="module")
def shots(tmp_path_factory: pytest.TempPathFactory) -> Path:
    given = os.environ.get("XAI_ARTIFACTS")
    folder = Path(given) if given else tmp_path_factory.mktemp("screenshots")
    folder.mkdir(parents=True, exist_ok=True)
    print(f"\nscreenshots of the web page: {folder}")
    return folder


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    assert shutil.which(CHROMIUM), f"{CHROMIUM} is missing: `make browser` installs Chromium"
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM)
        yield browser
        browser.close()


class Watched(NamedTuple):
    """A page of a browser context of its own, and every URL it has requested."""

    context: BrowserContext
    page: Page
    requested: list[str]


@contextlib.contextmanager
def watched(browser: Browser) -> Iterator[Watched]:
    """A new context's page (1000 x 900, ``WAIT_MS`` to wait), noting every request; on
    exit the context is closed, and no script error may have happened on the page."""
    context = browser.new_context(viewport={"width": 1000, "height": 900})
    context.set_default_timeout(WAIT_MS)
    page = context.new_page()
    errors: list[str] = []
    requested: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.on("request", lambda request: requested.append(request.url))
    try:
        yield Watched(context, page, requested)
    finally:
        context.close()
    assert not errors, errors


@pytest.fixture(scope="module")
def page(browser: Browser, site: Site) -> Iterator[Page]:
    expect.set_options(timeout=WAIT_MS)
    with watched(browser) as seen:
        seen.page.goto(f"{site.url}/?agent={AGENT}")
        expect(seen.page.locator("body")).to_have_attribute("data-live", "true")
        yield seen.page
    # Offline: everything the page ever asked for came from the gateway (no CDN, no font).
    elsewhere = [url for url in seen.requested if not url.startswith(f"{site.url}/")]
    assert not elsewhere, elsewhere


def open_session(page: Page, purpose: str) -> None:
    page.get_by_role("tab", name="Chat").click()
    line = page.locator("#session-line")
    before = line.inner_text()
    page.get_by_label("Purpose").fill(purpose)
    page.get_by_role("button", name="Open Session").click()
    expect(line).not_to_have_text(before)  # the new Session is followed
    expect(page.get_by_label("Message")).to_be_enabled()


def send(page: Page, text: str) -> None:
    page.get_by_label("Message").fill(text)
    page.get_by_label("Message").press("Enter")


def ask_the_weather(page: Page, purpose: str) -> None:
    """Open a Session for ``purpose`` and wait for the scripted weather answer."""
    open_session(page, purpose)
    send(page, "What's the weather in Paris and Tokyo?")
    turn = turn_of(page, "What's the weather in Paris and Tokyo?")
    expect(turn).to_have_attribute("data-status", "completed")
    expect(turn).to_contain_text("Here is what I found")


def turn_of(page: Page, text: str) -> Locator:
    """The turn that ``text`` started (it waits for it to appear, not for the previous one)."""
    said = page.locator(".msg.user > .text", has_text=text)
    return page.locator("#transcript > li.turn").filter(has=said).last


def test_chat_streams_answer_thinking_and_tool_calls(page: Page, shots: Path) -> None:
    open_session(page, "weather for a trip")
    send(page, "What's the weather in Paris and Tokyo?")
    turn = turn_of(page, "What's the weather in Paris and Tokyo?")
    expect(turn).to_have_attribute("data-status", "completed")
    expect(turn.locator(".msg.user")).to_contain_text("weather in Paris and Tokyo")
    thinking = turn.locator("details.thinking").first  # apart from the answer, folded
    expect(thinking.locator("summary")).to_have_text("Thinking")
    expect(thinking.locator("p")).to_be_hidden()
    thinking.locator("summary").press("Enter")  # unfolded from the keyboard
    expect(thinking.locator("p")).to_be_visible()
    expect(thinking.locator("p")).to_contain_text("Two cities")
    tools = turn.locator("li.tool")
    expect(tools).to_have_count(2)
    expect(tools.first).to_have_attribute("data-state", "done")
    expect(tools.first.locator(".args")).to_contain_text('{"city":"Paris"}')
    expect(tools.first.locator(".result")).to_contain_text("condition")
    expect(turn).to_contain_text("Here is what I found")
    said = turn.locator(".msg.assistant > .text").all_inner_texts()
    assert not any("Two cities" in text for text in said), said  # not in the answer
    page.screenshot(path=shots / "chat.png", full_page=True)


def test_delegated_helper_nests_under_its_tool_call(page: Page, shots: Path) -> None:
    send(page, "Please ask a helper to plan my packing")
    turn = turn_of(page, "Please ask a helper to plan my packing")
    expect(turn).to_have_attribute("data-status", "completed")
    call = turn.locator("li.tool", has_text="delegate")
    expect(call.locator(".helper")).to_contain_text("(helper) Done")
    expect(call).to_have_attribute("data-state", "done")
    turn.screenshot(path=shots / "helper.png")
    page.reload()  # the helper is read again from its own stream, nested again
    expect(page.locator("body")).to_have_attribute("data-live", "true")
    expect(call.locator(".helper li.turn")).to_have_count(1)
    expect(call.locator(".helper")).to_contain_text("(helper) Done")
    expect(call.locator(".helper li.turn")).to_have_attribute("data-status", "completed")


def test_a_failed_tool_call_shows_its_error_as_text(page: Page, shots: Path) -> None:
    send(page, "save my notes")
    turn = turn_of(page, "save my notes")
    expect(turn).to_have_attribute("data-status", "completed")  # the error went to the model
    call = turn.locator("li.tool", has_text="save_notes")
    expect(call).to_have_attribute("data-state", "failed")
    expect(call.locator(".state")).to_have_text("failed")
    expect(call.locator(".args")).to_have_text('{"path":"<i>n</i>"}')
    expect(call.locator("pre.error")).to_contain_text(DISK_FULL)  # as text, not markup
    assert call.locator("b, i").count() == 0
    expect(call.locator(".result")).to_have_count(0)
    call.screenshot(path=shots / "tool-error.png")


def test_reload_mid_stream_resumes_without_gap_or_repeat(page: Page, site: Site) -> None:
    open_session(page, "a reload")
    send(page, "wait for the gate")
    gate_call = turn_of(page, "wait for the gate").locator("li.tool", has_text="gate")
    expect(gate_call).to_have_attribute("data-state", "running")  # the turn is mid-way
    page.reload()
    expect(page.locator("body")).to_have_attribute("data-live", "true")
    turn = turn_of(page, "wait for the gate")
    expect(turn.locator("li.tool", has_text="gate")).to_have_attribute("data-state", "running")
    site.open_gate()
    expect(turn).to_have_attribute("data-status", "completed")
    expect(turn).to_contain_text("released")
    transcript = page.locator("#transcript")
    expect(transcript).to_have_attribute("data-gaps", "0")
    expect(transcript).to_have_attribute("data-repeats", "0")
    assert turn.locator(".text").all_inner_texts().count("Part one, before the gate. ") == 1
    expect(turn.locator("li.tool")).to_have_count(1)


def test_a_dropped_connection_resumes_from_the_last_event_id(page: Page, site: Site) -> None:
    open_session(page, "a blip")
    send(page, "wait for the gate")
    turn = turn_of(page, "wait for the gate")
    expect(turn.locator("li.tool", has_text="gate")).to_have_attribute("data-state", "running")
    transcript = page.locator("#transcript")
    last = transcript.get_attribute("data-last-seq")
    assert last is not None and int(last) > 0

    def resumed(request: Request) -> bool:
        return "/sessions/" in request.url and request.header_value("last-event-id") == last

    with page.expect_request(resumed):  # EventSource's own reconnect, with Last-Event-ID
        site.cut()
        site.open_gate()  # the rest of the turn happens while the browser is away
    expect(turn).to_have_attribute("data-status", "completed")
    expect(turn).to_contain_text("released")
    expect(transcript).to_have_attribute("data-gaps", "0")
    expect(transcript).to_have_attribute("data-repeats", "0")
    expect(turn.locator("li.tool")).to_have_count(1)


def test_cancel_keeps_the_partial_answer_marked(page: Page, shots: Path) -> None:
    send(page, "tell me a long story")
    turn = turn_of(page, "tell me a long story")
    expect(turn.locator(".msg.assistant .text")).to_contain_text("Once upon")
    page.get_by_role("button", name="Cancel turn").click()
    expect(turn).to_have_attribute("data-status", "cancelled")
    expect(turn.locator(".mark")).to_contain_text("Cancelled")
    kept = turn.locator(".msg.assistant .text").inner_text()
    assert kept and STORY.startswith(kept) and len(kept) < len(STORY)
    expect(turn.locator(".msg.assistant")).to_have_attribute("data-interrupted", "true")
    turn.screenshot(path=shots / "cancelled.png")


def test_script_in_a_message_and_a_fact_is_text(page: Page, shots: Path) -> None:
    open_session(page, "tea")
    send(page, SCRIPT)
    turn = turn_of(page, "green tea")
    expect(turn).to_have_attribute("data-status", "completed")
    expect(turn.locator(".msg.user .text")).to_have_text(SCRIPT)
    session = page.locator("#session-line").inner_text().removeprefix("Session ")
    page.get_by_role("button", name="Close Session").click()
    expect(page.locator("#transcript")).to_contain_text("Session closed")
    page.get_by_role("tab", name="Memory").click()
    fact = page.locator("li.fact", has_text="green tea")
    expect(fact.locator(".text")).to_have_text(f"The user likes {SCRIPT[7:]}.")
    assert page.locator("main script, main img").count() == 0
    assert page.evaluate("window.xss") is None
    terms, values = fact.locator("dt").all_inner_texts(), fact.locator("dd").all_inner_texts()
    shown = dict(zip(terms, values, strict=True))
    assert shown.keys() >= {"Tier", "Count", "First seen", "Last seen", "Valid"}, shown
    assert shown["Count"] == "1" and shown["Valid"].endswith("now"), shown
    fact.get_by_role("button", name="Details").click()
    expect(fact.locator(".evidence")).to_contain_text(SCRIPT)
    expect(fact.locator(".evidence")).to_contain_text(f"session {session}")  # where it was said
    expect(fact.locator(".history li").first).to_contain_text("add")
    expect(fact.locator(".history li").first).to_contain_text(f"session {session}")  # the cause
    page.get_by_label("Search memory").fill("green tea")
    page.get_by_role("button", name="Search", exact=True).click()
    expect(page.locator("#hits li").first).to_contain_text("green tea")
    # the rank, not a part-score that could contradict the order shown
    expect(page.locator("#hits li .who").first).to_have_text(re.compile(r"^#1 · "))
    assert not re.search(r"\d\.\d\d", page.locator("#hits").inner_text())
    page.screenshot(path=shots / "memory.png", full_page=True)


def test_forget_removes_the_fact(page: Page) -> None:
    page.get_by_role("tab", name="Memory").click()
    fact = page.locator("li.fact", has_text="green tea")
    fact.get_by_role("button", name="Forget").press("Enter")  # from the keyboard
    choices = fact.get_by_role("group", name="Forget this fact")
    expect(choices).to_contain_text("The fact only")  # a confirm step, saying what goes
    expect(choices).to_contain_text("Erase everywhere")
    expect(choices).to_contain_text("the ledger keeps only a hash")
    expect(choices.get_by_role("radio", name=re.compile("The fact only"))).to_be_focused()
    choices.get_by_role("button", name="Confirm forget").press("Enter")
    expect(fact).to_have_count(0)
    expect(page.locator("#live")).to_contain_text("Forgotten")
    expect(page.locator("#view-memory :focus")).to_have_count(1)  # focus not lost to <body>


ERASED = "I like hibiscus tea from Okinawa"


def test_forget_with_erase_removes_the_text_from_every_file(page: Page, site: Site) -> None:
    open_session(page, "erasing")
    send(page, ERASED)
    expect(turn_of(page, "hibiscus")).to_have_attribute("data-status", "completed")
    page.get_by_role("button", name="Close Session").click()
    expect(page.locator("#transcript")).to_contain_text("Session closed")
    page.get_by_role("tab", name="Memory").click()
    fact = page.locator("li.fact", has_text="hibiscus")
    fact.get_by_role("button", name="Forget").click()
    fact.get_by_role("radio", name=re.compile("Erase everywhere")).check()
    fact.get_by_role("button", name="Cancel").click()  # asked, not done
    expect(fact).to_have_count(1)
    fact.get_by_role("button", name="Forget").click()
    fact.get_by_role("radio", name=re.compile("Erase everywhere")).check()
    fact.get_by_role("button", name="Confirm forget").click()
    expect(fact).to_have_count(0)
    expect(page.locator("#live")).to_contain_text("Erased")
    agent = site.root / AGENT
    held = [
        str(p.relative_to(agent))
        for p in agent.rglob("*")
        if p.is_file() and b"hibiscus tea from Okinawa" in p.read_bytes()
    ]
    assert held == []


def test_wakeups_pause_resume_and_fire_live(page: Page, site: Site, shots: Path) -> None:
    api = page.request
    hourly = {"id": "hourly", "trigger": {"type": "every", "seconds": 3600}, "text": "Check in."}
    ping = {"id": "ping", "trigger": {"type": "event", "name": "ping"}, "text": "Say good morning."}
    for wakeup in (hourly, ping):
        response = api.post(f"{site.url}/agents/{AGENT}/wakeups", data=wakeup)
        assert response.status == 201, response.text()
    page.get_by_role("tab", name="Wake-ups").click()
    row = page.locator('tr[data-wakeup="hourly"]')
    expect(row.locator(".state")).to_have_text("active")
    expect(row.locator(".next")).not_to_have_text("—")
    page.get_by_role("button", name="Pause hourly").press("Enter")  # from the keyboard
    expect(row).to_have_attribute("data-state", "paused")
    expect(page.get_by_role("button", name="Resume hourly")).to_be_focused()  # (redrawn)
    page.keyboard.press("Enter")
    expect(row).to_have_attribute("data-state", "active")
    expect(page.get_by_role("button", name="Pause hourly")).to_be_focused()
    response = api.post(f"{site.url}/agents/{AGENT}/notify", data={"name": "ping"})
    assert response.json() == {"fired": 1}
    fired = page.locator("#fired li.fired-session").first
    expect(fired).to_contain_text("ping")
    expect(fired.locator(".answer")).to_contain_text("Good morning")
    expect(fired).to_have_attribute("data-state", "closed")
    expect(page.locator('tr[data-wakeup="ping"] td').nth(2)).to_have_text("1")


def test_after_a_blip_the_page_reads_its_view_again(page: Page, site: Site) -> None:
    """The Agent's stream is live only: what happened while the browser was away (here a
    wake-up fired) shows once the stream reconnects, the view read again from the server."""
    page.get_by_role("tab", name="Wake-ups").click()
    runs = page.locator('tr[data-wakeup="ping"] td').nth(2)
    expect(runs).to_have_text("1")
    pause = page.get_by_role("button", name="Pause hourly")
    pause.focus()  # a keyboard user, on a row the redraw replaces
    drawn = pause.element_handle()
    with site.away():
        expect(page.locator("body")).to_have_attribute("data-live", "false")
        fired = page.request.post(f"{site.direct}/agents/{AGENT}/notify", data={"name": "ping"})
        assert fired.json() == {"fired": 1}
    expect(page.locator("body")).to_have_attribute("data-live", "true")
    expect(runs).to_have_text("2")
    page.wait_for_function("row => !row.isConnected", arg=drawn)  # (drawn again)
    expect(pause).to_be_focused()  # the keyboard's place is kept


def test_a_wakeup_added_through_the_form(page: Page, shots: Path) -> None:
    page.get_by_role("tab", name="Wake-ups").click()
    form = page.locator("#wakeup-form")
    form.get_by_label("Name", exact=True).fill("stretch")
    expect(form.get_by_label("Minutes between")).to_be_visible()  # "every": the default
    form.get_by_label("When").select_option("event")
    expect(form.get_by_label("Minutes between")).to_be_hidden()
    form.get_by_label("Event name").fill("standup")
    form.get_by_label("When").select_option("every")
    form.get_by_label("Minutes between").fill("90")
    form.get_by_label("Prompt").fill("<b>Time</b> to stretch.")
    form.get_by_role("button", name="Add wake-up").press("Enter")  # from the keyboard
    row = page.locator('tr[data-wakeup="stretch"]')
    expect(row.locator("td").first).to_have_text("every 5400 s")
    expect(row.locator(".next")).not_to_have_text(re.compile(r"^(—)?$"))
    expect(row.locator("th .block")).to_have_text("<b>Time</b> to stretch.")  # as text
    expect(page.locator("#live")).to_contain_text("Wake-up stretch added: next")
    expect(form.get_by_label("Name", exact=True)).to_have_value("")
    form.get_by_label("Name", exact=True).fill("empty")
    form.get_by_role("button", name="Add wake-up").click()  # no first message: not sent
    expect(page.locator('tr[data-wakeup="empty"]')).to_have_count(0)
    assert page.evaluate("document.getElementById('wakeup-text').validity.valueMissing")
    form.get_by_label("Name", exact=True).fill("")
    page.screenshot(path=shots / "wakeups.png", full_page=True)


def test_usage_per_session_and_day(page: Page, shots: Path) -> None:
    page.get_by_role("tab", name="Usage").click()
    rows = page.locator("#usage tbody tr")
    expect(rows.first).to_be_visible()
    assert rows.count() >= 5  # the chats, the helper, the wake-up
    expect(page.locator("#chart svg rect.completion").first).to_be_attached()
    summary = re.compile(r"^Tokens per day: \d{4}-\d\d-\d\d [\d,]+")
    expect(page.locator("#chart svg")).to_have_attribute("aria-label", summary)
    page.screenshot(path=shots / "usage.png", full_page=True)


def test_mood_over_time_and_the_deltas_that_moved_it(page: Page, shots: Path) -> None:
    """The Mood view (issue 30): the mood now, a chart of the user's valence after each
    digested conversation, and each Session's deltas; it follows ``mood_changed`` live."""
    open_session(page, "good news")
    send(page, "Thank you so much, this is wonderful and I love it!")
    expect(turn_of(page, "this is wonderful")).to_have_attribute("data-status", "completed")
    session = page.locator("#session-line").inner_text().removeprefix("Session ")
    page.get_by_role("tab", name="Mood").click()
    expect(page.locator("#mood-baseline")).to_contain_text("valence +0.00")
    page.get_by_role("tab", name="Chat").click()
    page.get_by_role("button", name="Close Session").click()
    expect(page.locator("#transcript")).to_contain_text("Session closed")
    page.get_by_role("tab", name="Mood").click()
    rows = page.locator(f'#mood-deltas tbody tr[data-session="{session}"]')
    expect(rows.first).to_be_visible()
    expect(rows.filter(has_text="user").first).to_contain_text("+0.")
    expect(rows.first).to_contain_text("lexicon")
    expect(page.locator("#mood-user")).to_contain_text("valence +0.")
    expect(page.locator("#mood-chart svg path.mood-user")).to_be_attached()
    summary = re.compile(r"^The user's valence after each conversation: [+\u2212]\d\.\d\d")
    expect(page.locator("#mood-chart svg")).to_have_attribute("aria-label", summary)
    page.screenshot(path=shots / "mood.png", full_page=True)


def test_the_page_mounted_under_a_prefix_uses_only_its_own_urls(
    browser: Browser, site: Site
) -> None:
    """Mounted at /embedded/ in another app: every request the page makes (script, style,
    API, both event streams) stays under the prefix; a Session opens and streams."""
    with watched(browser) as seen:
        page = seen.page
        page.goto(f"{site.url}{PREFIX}/?agent=embedded")
        expect(page.locator("body")).to_have_attribute("data-live", "true")
        ask_the_weather(page, "under a prefix")
        page.get_by_role("tab", name="Usage").click()
        expect(page.locator("#usage tbody tr")).to_have_count(1)
        page.get_by_role("button", name="Open").click()  # the Agent switch: stays under it
        expect(page).to_have_url(re.compile(re.escape(f"{site.url}{PREFIX}/?agent=embedded")))
        expect(page.locator("body")).to_have_attribute("data-live", "true")
    requested = seen.requested
    outside = [u for u in requested if not u.startswith(f"{site.url}{PREFIX}/")]
    assert not outside, outside
    assert any("/events" in u for u in requested) and any("static/app.js" in u for u in requested)


def test_with_a_token_the_one_time_link_logs_the_browser_in(browser: Browser, site: Site) -> None:
    """A gateway with a token (what serving beyond loopback needs): a browser without it is
    refused; the one-time link
    printed at start-up sets the cookie that stands for the token, and the whole page works
    on it (both event streams, the CSRF-checked writes); the link is then spent."""
    origin = site.login.split("/login", 1)[0]
    with watched(browser) as seen:
        page = seen.page
        refused = page.goto(f"{origin}/")
        assert refused is not None and refused.status == 401
        page.goto(site.login)
        expect(page).to_have_url(re.compile(re.escape(f"{origin}/") + "(#chat)?$"))
        expect(page.locator("body")).to_have_attribute("data-live", "true")
        ask_the_weather(page, "behind a token")
        [cookie] = seen.context.cookies()
        assert cookie["name"] == "xai_token" and cookie["httpOnly"]
        assert TOKEN not in cookie["value"]
    other = browser.new_context()
    try:
        spent = other.new_page().goto(site.login)
        assert spent is not None and spent.status == 401
    finally:
        other.close()


def test_a_new_tab_lists_the_open_sessions_and_shows_the_one_picked(
    page: Page, browser: Browser, site: Site, shots: Path
) -> None:
    """Issue 28: a new tab showed "No Session open." and no way to the Sessions already open.
    It lists them (the host API's Sessions list) and follows the one picked; a Session
    closed elsewhere leaves the list."""
    open_session(page, "a door")
    send(page, "Please remember the blue door")
    expect(turn_of(page, "Please remember the blue door")).to_have_attribute(
        "data-status", "completed"
    )
    session = page.locator("#session-line").inner_text().removeprefix("Session ")
    listed = page.locator(f'#sessions li[data-session="{session}"]')
    expect(listed).to_have_attribute("aria-current", "true")  # the one this tab shows
    with watched(browser) as seen:
        other = seen.page
        other.goto(f"{site.url}/?agent={AGENT}")
        expect(other.locator("#session-line")).to_have_text("No Session open.")
        item = other.locator(f'#sessions li[data-session="{session}"]')
        expect(item).to_contain_text("Please remember the blue door")
        expect(item).to_contain_text("1 turn")
        item.get_by_role("button", name=f"Show Session {session}").click()
        expect(other.locator("#session-line")).to_have_text(f"Session {session}")
        turn = turn_of(other, "Please remember the blue door")
        expect(turn).to_have_attribute("data-status", "completed")
        expect(item).to_have_attribute("aria-current", "true")
        expect(other.get_by_label("Message")).to_be_enabled()
        other.screenshot(path=shots / "sessions.png", full_page=True)
        page.get_by_role("button", name="Close Session").click()  # in the first tab
        expect(item).to_have_count(0)
    expect(listed).to_have_count(0)


def test_keyboard_and_phone_width(page: Page, shots: Path) -> None:
    page.set_viewport_size({"width": 390, "height": 844})
    page.get_by_role("tab", name="Usage").focus()
    page.keyboard.press("Home")
    expect(page.get_by_role("tab", name="Chat")).to_have_attribute("aria-selected", "true")
    expect(page.get_by_role("tab", name="Chat")).to_be_focused()
    page.keyboard.press("ArrowRight")
    expect(page.get_by_role("tab", name="Memory")).to_have_attribute("aria-selected", "true")
    expect(page.locator("#view-memory")).to_be_visible()
    page.keyboard.press("ArrowLeft")
    for name in (
        "Memory",
        "Wake-ups",
        "Usage",
        "Mood",
        "Chat",
    ):  # each view, full of the tests' data
        tab = page.get_by_role("tab", name=name)
        tab.click()
        expect(tab).to_have_attribute("aria-selected", "true")
        wide = page.evaluate("document.documentElement.scrollWidth")
        assert wide <= 390, f"{name}: the page is {wide} px wide at a phone's 390"
        for each in page.get_by_role("tab").all():  # the nav: every tab in sight, one line
            box = each.bounding_box()
            assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= 390, box
            assert box["height"] < 48, f"{each.inner_text()!r} wraps: {box}"
    page.screenshot(path=shots / "phone.png", full_page=False)
