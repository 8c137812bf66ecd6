"""Each attack of issue 33 on a real ``xai serve`` (the command, a child process on 127.0.0.1,
no token: the default mode), all against one server process to keep the module fast.

The requests are written on raw sockets where the attack is the bytes themselves (a length
that lies, a body that never ends, a head never finished, a path a client library would
tidy up); the server's memory is read from ``/proc/<pid>/status``.
"""

from __future__ import annotations

import contextlib
import json
import re
import select
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.example_helpers import offline_env
from xai.agent import AgentHost
from xai.serve import MAX_BODY_BYTES, create_app
from xai.testing import ScriptedProvider

READ_TIMEOUT = 2.0
"""The server's ``--read-timeout``: short, so the stalled requests below end soon."""

GUARD = 60.0
"""How long a test waits for the server's answer before calling it missing (far beyond
what a loaded machine needs: each wait below ends on the answer, not on this)."""

ALLOWED = "xai.internal"
"""The name the server is started with ``--allowed-host`` for."""

MiB = 1 << 20


@dataclass
class Server:
    url: str
    port: int
    pid: int
    root: Path
    log: list[str] = field(default_factory=list)

    @property
    def host(self) -> str:
        return f"127.0.0.1:{self.port}"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    root = tmp_path_factory.mktemp("attacks") / "agents"
    command = [sys.executable, "-m", "xai", "serve", "--root", str(root), "--port", "0"]
    command += ["--read-timeout", str(READ_TIMEOUT), "--allowed-host", ALLOWED]
    process = subprocess.Popen(
        command, env=offline_env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
    )
    assert process.stderr is not None
    lines: list[str] = []
    found = threading.Event()

    def drain() -> None:  # read all it says (a full pipe would stall it), the URL first
        assert process.stderr is not None
        for line in process.stderr:
            lines.append(line)
            if "listening at http://" in line:
                found.set()
        found.set()  # it ended

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    try:
        assert found.wait(GUARD), "".join(lines)
        url = next(
            (line.split("listening at ")[1].split()[0] for line in lines if "listening" in line),
            None,
        )
        assert url is not None, "".join(lines)
        yield Server(url, int(url.rsplit(":", 1)[1]), process.pid, root, lines)
    finally:
        process.kill()
        process.wait()
        reader.join(GUARD)
        process.stderr.close()


# -- a small HTTP client on a raw socket ----------------------------------------------------


@dataclass
class Answer:
    status: int
    headers: dict[str, str]
    body: bytes

    def json(self) -> dict[str, object]:
        value = json.loads(self.body)
        assert isinstance(value, dict)
        return value


def connect(server: Server) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", server.port), timeout=GUARD)
    return sock


def request(
    server: Server,
    method: str,
    path: str,
    *,
    headers: dict[str, str] | None = None,
    body: bytes | None = None,
) -> Answer:
    """One request on its own connection (``Connection: close``), the path sent as given."""
    sent = {"Host": server.host, "Connection": "close", **(headers or {})}
    if body is not None:
        sent["Content-Length"] = str(len(body))
    head = f"{method} {path} HTTP/1.1\r\n" + "".join(f"{k}: {v}\r\n" for k, v in sent.items())
    with connect(server) as sock:
        sock.sendall(head.encode() + b"\r\n" + (body or b""))
        return read_answer(sock)


def read_answer(sock: socket.socket) -> Answer:
    """The answer on ``sock``, read to the end of its body (its ``Content-Length``) or of
    the connection."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        assert chunk, f"the connection ended before an answer: {data!r}"
        data += chunk
    head, _, rest = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split()[1])
    headers = {k.strip().lower(): v.strip() for k, v in (line.split(":", 1) for line in lines[1:])}
    length = int(headers.get("content-length", "-1"))
    while length < 0 or len(rest) < length:
        chunk = sock.recv(65536)
        if not chunk:
            break
        rest += chunk
    return Answer(status, headers, rest if length < 0 else rest[:length])


def write(server: Server, method: str, path: str, value: object, **headers: str) -> Answer:
    body = json.dumps(value).encode()
    return request(
        server,
        method,
        path,
        headers={"Content-Type": "application/json", **headers},
        body=body,
    )


def page(server: Server) -> str:
    answer = request(server, "GET", "/")
    assert answer.status == 200, answer
    return answer.body.decode()


def csrf(server: Server) -> str:
    found = re.search(r'<meta name="xai-csrf" content="([^"]+)"', page(server))
    assert found is not None
    return found.group(1)


def agent_dirs(server: Server) -> set[str]:
    return {p.name for p in server.root.iterdir() if p.is_dir()} if server.root.exists() else set()


# -- memory ------------------------------------------------------------------------------


def status_kib(pid: int, field_name: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field_name + ":"):
            return int(line.split()[1])
    raise AssertionError(f"no {field_name} in /proc/{pid}/status")


@contextlib.contextmanager
def peak_growth(pid: int) -> Iterator[list[int]]:
    """The growth of the process's resident memory at its peak while the block runs, in KiB
    (its high-water mark reset first; where that is not allowed, its RSS after the block)."""
    out: list[int] = []
    try:
        Path(f"/proc/{pid}/clear_refs").write_text("5")  # resets VmHWM to the current RSS
        name = "VmHWM"
    except OSError:
        name = "VmRSS"
    before = status_kib(pid, "VmRSS")
    yield out
    out.append(status_kib(pid, name) - before)


# -- Host, Origin, CSRF ------------------------------------------------------------------


def test_dns_rebinding_a_foreign_host_gets_nothing(server: Server) -> None:
    """A page of evil.example whose name resolves to 127.0.0.1 sends ``Host: evil.example``:
    no page (its CSRF token), no read, no write. The name given by ``--allowed-host`` is
    answered, with or without its port."""
    evil = {"Host": f"evil.example:{server.port}"}
    for method, path in (
        ("GET", "/"),
        ("GET", "/agents/ada/facts"),
        ("POST", "/agents/ada/sessions"),
    ):
        body = b"{}" if method == "POST" else None
        answer = request(server, method, path, headers=evil, body=body)
        assert answer.status == 400, (path, answer)
        assert b"xai-csrf" not in answer.body
    assert "ada" not in agent_dirs(server)
    for name in (ALLOWED, f"{ALLOWED}:{server.port}", f"127.0.0.1:{server.port}", "localhost"):
        assert request(server, "GET", "/", headers={"Host": name}).status == 200, name


def test_a_write_from_a_foreign_origin_is_refused_even_with_the_token(server: Server) -> None:
    token = csrf(server)
    for origin in (f"http://evil.example:{server.port}", "null", f"file://{server.host}"):
        headers = {"Origin": origin, "X-XAI-CSRF": token}
        answer = write(server, "POST", "/agents/mallory/sessions", {}, **headers)
        assert answer.status == 403, (origin, answer)
    assert "mallory" not in agent_dirs(server)


def test_a_browser_write_without_the_csrf_token_is_refused(server: Server) -> None:
    """A form or fetch from a page (any of a browser's headers) needs the page's token;
    a client that is no browser (none of them) does not."""
    origin = {"Origin": server.url}
    for headers in (
        origin,  # a same-origin page that has not read the token
        {"Cookie": "xai_token=anything"},
        {"Sec-Fetch-Site": "cross-site"},
        {**origin, "X-XAI-CSRF": "guessed"},
    ):
        answer = write(server, "POST", "/agents/csrf/sessions", {}, **headers)
        assert answer.status == 403, (headers, answer)
    assert "csrf" not in agent_dirs(server)
    answer = write(
        server, "POST", "/agents/csrf/sessions", {}, **origin, **{"X-XAI-CSRF": csrf(server)}
    )
    assert answer.status == 201, answer


def test_a_get_never_creates_an_agent(server: Server) -> None:
    """``<img src="http://127.0.0.1:8000/agents/x/facts">`` on any page: a GET of an Agent
    the server does not have is 404 and makes nothing."""
    headers = {"Sec-Fetch-Dest": "image", "Sec-Fetch-Site": "cross-site"}
    for path in ("/agents/img/facts", "/agents/img/wakeups", "/agents/img/usage", "/?agent=img"):
        answer = request(server, "GET", path, headers=headers)
        assert answer.status == (200 if path.startswith("/?") else 404), (path, answer)
    assert "img" not in agent_dirs(server)


# -- bodies and timeouts -------------------------------------------------------------------


def test_a_huge_content_length_is_refused_before_the_body_is_read(server: Server) -> None:
    """A head announcing 200 MiB is answered 413 at once: the server reads none of the body
    (none is sent here: the answer comes anyway) and holds nothing for it."""
    head = (
        "POST /agents/big/sessions HTTP/1.1\r\n"
        f"Host: {server.host}\r\nContent-Type: application/json\r\n"
        f"Content-Length: {200 * MiB}\r\n\r\n"
    )
    with peak_growth(server.pid) as growth, connect(server) as sock:
        sock.sendall(head.encode())
        answer = read_answer(sock)  # before the old server read this body, it never answered
    assert answer.status == 413, answer
    assert answer.json()["type"] == "too_large"
    assert growth[0] < 8 * 1024, f"the server grew by {growth[0]} KiB"
    assert "big" not in agent_dirs(server)


def test_an_endless_body_is_cut_at_the_limit_and_never_held(server: Server) -> None:
    """A chunked body (no length to refuse it by) streamed a MiB at a time, up to 200 MiB:
    the server counts it as it reads, answers 413 once it passes 1 MiB, and its memory does
    not follow the body (the old server held all of it: +200 MiB and more)."""
    head = (
        "POST /agents/big/sessions HTTP/1.1\r\n"
        f"Host: {server.host}\r\nContent-Type: application/json\r\n"
        "Transfer-Encoding: chunked\r\n\r\n"
    )
    piece = b"%x\r\n" % MiB + b" " * MiB + b"\r\n"
    sent = 0
    with peak_growth(server.pid) as growth, connect(server) as sock:
        sock.sendall(head.encode())
        while sent < 200 * MiB:
            readable, _, _ = select.select([sock], [], [], 0)
            if readable:  # the server has answered: stop sending
                break
            try:
                sock.sendall(piece)
            except OSError:  # (it ended the connection)
                break
            sent += MiB
        answer = read_answer(sock)
    assert answer.status == 413, answer
    assert sent < 200 * MiB, "the whole body was taken in before the answer"
    assert growth[0] < 8 * 1024, f"the server grew by {growth[0]} KiB for a {sent >> 20} MiB body"
    assert request(server, "GET", "/").status == 200  # still serving


def test_a_body_at_the_limit_is_read_and_one_past_it_refused(server: Server) -> None:
    """The limit itself: a body of exactly ``MAX_BODY_BYTES`` is read (and judged on what it
    says), one byte more is 413, by its length or by counting."""
    fits = b'{"text": "' + b"x" * (MAX_BODY_BYTES - 12) + b'"}'
    assert len(fits) == MAX_BODY_BYTES
    path = "/agents/limit/sessions"
    answer = request(server, "POST", path, body=fits)  # read, and refused for what it says:
    assert answer.status == 400 and "text" in str(answer.json()["message"]), answer  # no field
    assert request(server, "POST", path, body=fits + b" ").status == 413
    head = f"POST {path} HTTP/1.1\r\nHost: {server.host}\r\nTransfer-Encoding: chunked\r\n\r\n"
    chunked = b"%x\r\n" % (len(fits) + 1) + fits + b" \r\n0\r\n\r\n"
    with connect(server) as sock:
        sock.sendall(head.encode() + chunked)
        assert read_answer(sock).status == 413


def test_stalled_requests_and_idle_connections_are_dropped(server: Server) -> None:
    """A connection that sends nothing, a head never finished, a body that stops halfway:
    each is closed once the read timeout passes (the last after a 408), where the old
    server waited on all three for ever."""
    started = time.monotonic()  # (before the first connection: each timer starts after it)
    idle = connect(server)
    half_head = connect(server)
    half_head.sendall(f"POST /agents/slow/sessions HTTP/1.1\r\nHost: {server.host}\r\n".encode())
    half_body = connect(server)
    half_body.sendall(
        f"POST /agents/slow/sessions HTTP/1.1\r\nHost: {server.host}\r\n"
        'Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{"purpose": '.encode()
    )
    with idle, half_head, half_body:
        assert idle.recv(1) == b"", "an idle connection stayed open"
        assert half_head.recv(1) == b"", "a half-sent head kept its connection"
        answer = read_answer(half_body)
        assert answer.status == 408 and answer.json()["type"] == "request_timeout", answer
        assert half_body.recv(1) == b""  # and the connection is closed
    assert time.monotonic() - started >= READ_TIMEOUT * 0.9  # (not closed at once, either)
    assert "slow" not in agent_dirs(server)


def test_a_request_inside_the_timeout_is_served_on_a_kept_connection(server: Server) -> None:
    """The timers cut stalls, not clients: two requests on one connection, each answered."""
    with connect(server) as sock:
        for _ in range(2):
            sock.sendall(f"GET /agents/none/facts HTTP/1.1\r\nHost: {server.host}\r\n\r\n".encode())
            assert read_answer(sock).status == 404


# -- paths and ids ---------------------------------------------------------------------------


def test_static_files_cannot_be_reached_past_their_folder(server: Server) -> None:
    for path in (
        "/static/../_app.py",
        "/static/..%2f_app.py",
        "/static/%2e%2e%2f%2e%2e%2fpyproject.toml",
        "/static/..%5c_app.py",
        "/static/index.html",  # in the folder, not one of the files served
        "/static/app.js%00.py",
        "/static/%2fetc%2fpasswd",
        "/static//etc/passwd",
        "/static/" + "a" * 5000,
    ):
        answer = request(server, "GET", path)
        assert answer.status in (400, 404), (path, answer)
        assert b"import" not in answer.body and b"root:" not in answer.body, path
    assert request(server, "GET", "/static/app.js").status == 200


ODD_IDS = [
    "a" * 65,  # one past an Agent id
    "a" * 129,  # one past a Session id
    "a" * 300,  # the issue's
    "a" * 5000,
    "%2e",
    "%2e%2e",
    ".hidden",
    "a%20b",
    "a%00b",
    "a%2fb",
    "a%5cb",
    "%c3%a9",  # é
    "%ff",  # not UTF-8
    "%25",
    "*",
    "~",
]


def test_every_route_answers_odd_ids_with_4xx(server: Server) -> None:
    """A general check over every route the app has (read from the app itself, so a route
    added later is checked too): each path parameter in turn replaced by an over-long or
    odd id, the others naming things that exist. Never a 5xx, never a success."""
    opened = write(server, "POST", "/agents/fuzz/sessions", {})
    assert opened.status == 201, opened
    valid = {
        "agent_id": "fuzz",
        "session_id": str(opened.json()["session_id"]),
        "fact_id": "f1",
        "wakeup_id": "w1",
        "call_id": "call-1",
        "name": "app.js",
    }
    wakeup = {"id": "w1", "trigger": {"type": "event", "name": "ping"}, "text": "hello"}
    assert write(server, "POST", "/agents/fuzz/wakeups", wakeup).status == 201
    app = create_app(AgentHost(server.root, lambda _: ScriptedProvider([])))
    checked = 0
    for route in app.routes:
        template: str = getattr(route, "path", "")
        params = re.findall(r"{(\w+)}", template)
        for param in params:
            assert param in valid, f"a new path parameter {param!r}: add it to this test"
            for odd in ODD_IDS:
                path = template
                for name in params:
                    path = path.replace(f"{{{name}}}", odd if name == param else valid[name])
                for method in sorted(getattr(route, "methods", None) or {"GET"}):
                    body = b'{"text": "hi", "name": "ping"}' if method == "POST" else None
                    answer = request(server, method, path, body=body)
                    assert 400 <= answer.status < 500, (method, path[:120], answer)
                    checked += 1
    assert checked > 300
    assert agent_dirs(server) <= {"fuzz", "csrf", "limit"}  # no odd id became an Agent


def test_wakeup_ids_follow_the_id_rule(server: Server) -> None:
    """A wake-up's id names it in URLs, logs and events: the rule of every other id, with a
    clear 400 before anything is made (an Agent included)."""
    for odd in ("", "a" * 65, "a" * 300, "../x", ".hidden", "a b", "é", "a/b"):
        wakeup = {"id": odd, "trigger": {"type": "event", "name": "ping"}, "text": "hello"}
        answer = write(server, "POST", "/agents/wakes/wakeups", wakeup)
        assert answer.status == 400, (odd, answer)
        message = str(answer.json()["message"])
        assert message.startswith("wake-up id") and "letters, digits" in message, message
        assert len(message) < 300, message  # a long id is cut short
    assert "wakes" not in agent_dirs(server)
    good = {"id": "morning-1.b_c", "trigger": {"type": "event", "name": "ping"}, "text": "hi"}
    assert write(server, "POST", "/agents/wakes/wakeups", good).status == 201


def test_the_server_is_still_whole(server: Server) -> None:
    """After every attack above: the page, a Session, no error in its log."""
    answer = write(server, "POST", "/agents/after/sessions", {})
    assert answer.status == 201, answer
    assert not [line for line in server.log if "Traceback" in line or "serve.failed" in line]


# -- addresses -----------------------------------------------------------------------------


def run_serve(
    tmp_path: Path, *args: str, **env: str
) -> tuple[str | None, subprocess.Popen[str], list[str]]:
    """``xai serve`` with ``args``: the URL it listens at (``None`` if it ended first), the
    process and what it said."""
    command = [sys.executable, "-m", "xai", "serve", "--root", str(tmp_path / "agents"), *args]
    process = subprocess.Popen(
        command,
        env=offline_env(**env),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stderr is not None
    said: list[str] = []
    for line in process.stderr:  # ends when it does
        said.append(line)
        if "listening at http://" in line:
            return line.split("listening at ")[1].split()[0], process, said
    return None, process, said


def test_an_ipv6_address_in_brackets_binds_or_fails_in_one_line(tmp_path: Path) -> None:
    """``--host "[::1]"`` passed the bind rule and then failed to bind with a traceback:
    it binds (IPv6 loopback) and answers for ``[::1]``; an IPv6 address this machine does not
    have fails with one ``xai:`` line, no traceback."""
    if not socket.has_ipv6:
        pytest.skip("this Python has no IPv6")
    url, process, said = run_serve(tmp_path, "--host", "[::1]", "--port", "0")
    try:
        if url is None:  # no IPv6 loopback here: a clear line, then
            assert process.wait(GUARD) != 0
            assert said[-1].startswith("xai: ") and "Traceback" not in "".join(said), said
        else:
            assert url.startswith("http://[::1]:")
            port = int(url.rsplit(":", 1)[1])
            with socket.create_connection(("::1", port), timeout=GUARD) as sock:
                sock.sendall(f"GET / HTTP/1.1\r\nHost: [::1]:{port}\r\n\r\n".encode())
                assert read_answer(sock).status == 200
    finally:
        process.kill()
        process.wait()
        assert process.stderr is not None
        process.stderr.close()
    command = [sys.executable, "-m", "xai", "serve", "--root", str(tmp_path / "agents")]
    done = subprocess.run(
        [*command, "--host", "[2001:db8::1]", "--port", "0"],
        env=offline_env(XAI_SERVE_TOKEN="t" * 32),
        capture_output=True,
        text=True,
        timeout=GUARD,
    )
    lines = done.stderr.strip().splitlines()
    assert done.returncode != 0 and "Traceback" not in done.stderr, done.stderr
    assert lines[-1].startswith("xai: ") and "2001:db8::1" in lines[-1], done.stderr


def test_a_wakeup_id_is_checked_however_it_is_added(tmp_path: Path) -> None:
    """The same rule through the host API (any transport) and the scheduler itself (the
    Python API, ``xai chat``'s ``/wake``)."""
    import anyio

    from xai.agent import AddWakeup, OnEvent, Wakeup
    from xai.exceptions import ConfigurationError

    async def main() -> None:
        async with AgentHost(tmp_path, lambda _: ScriptedProvider([])) as host:
            bad = Wakeup(id="a b", trigger=OnEvent(name="ping"), text="hi")
            with pytest.raises(ConfigurationError, match="wake-up id 'a b'"):
                await host.call(AddWakeup(agent_id="ada", wakeup=bad))
            assert not host.has("ada")  # refused before an Agent was made for it
            agent = await host.agent("ada")
            with pytest.raises(ConfigurationError, match="wake-up id 'a b'"):
                agent.scheduler.add(bad)
            assert agent.scheduler.list() == []

    anyio.run(main)
