"""Every fixed wait in the suite either waits for an event or leaves a wide margin.

A test that bounds a wait (``fail_after(10)``, ``child.expect(..., timeout=5)``,
``subprocess.run(..., timeout=20)``) fails when the machine is slow, not when the code is
wrong: issue 33 found ``test_chat_in_a_terminal`` failing at load 4-6 on 2 cores. This
scan lists every fixed wait under ``tests/`` and fails on

- a bound below ``FLOOR`` seconds, and
- a ``sleep`` (a wait for nothing in particular),

unless ``ALLOWED`` lists it with the reason it is not a wait for an event.

Why ``FLOOR = 30`` s: the steps bounded in this suite (a turn over HTTP, an Agent or a
chromadb opening, an MCP handshake, a server's first event) each take ~1.5 s at most at
load 5 on the 2-core CI box: the whole tests that hold them run in at most 2.9 s there,
several bounded steps each (``pytest --durations`` over test_agent_host, test_event_log,
test_scheduler, test_query, test_serve, test_web_security, test_memory_search_work,
2026-12-02). Load 20 leaves a process a quarter of its load-5 share: ~6 s. Five times
that is 30 s. A wait for a new interpreter to import xai (~3.5 s of CPU, measured) gets a
larger bound, 60 s or more (pexpect children, ``subprocess.run``), and a test's own limit
is ``timeout = 60`` (pyproject) unless it is marked.

The first fix of this hunt, ``test_chat_in_a_terminal`` racing the REPL's background
adjudication, waits for the decision's notice instead (``/memory`` says when one is
pending).
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path

import msgspec
import pytest

TESTS = Path(__file__).resolve().parent
FLOOR = 30.0

# Calls whose ``timeout=`` bounds a wait (the rest take ``timeout=`` as a setting under
# test: a tool's, a provider's, a hook's).
_BOUNDED_BY_TIMEOUT = frozenset(
    {
        "expect",  # pexpect
        "expect_exact",
        "spawn",  # pexpect: every expect's default
        "run",  # subprocess
        "check_output",
        "communicate",
        "wait",  # a process's, an Event's
        "join",  # a thread's, a process's
        "wait_for",
        "get",  # one HTTP request
        "Client",  # httpx: each request
        "AsyncClient",
        "kill_when",  # tests/crash_helpers.py
        "run_example",  # tests/example_helpers.py
        "runpytest_subprocess",
    }
)
_BOUNDED_BY_FIRST_ARGUMENT = frozenset({"join"})  # process.join(10)
_BOUNDS = frozenset({"fail_after", "move_on_after"})
_SLEEPS = frozenset({"sleep"})

# (file, source of the call) -> why it is not a wait for an event or needs no floor.
ALLOWED: dict[tuple[str, str], str] = {
    # The limit under test: the reply is held 30 s and the run must give up at 1 s.
    ("test_adapters.py", 'peer.run({}, "How long is the pump warranty?", timeout=1.0)'): (
        "the timeout under test"
    ),
    # Blocks until the parent kills the process: a wait for the kill, the event under test.
    ("agent_crash_child.py", "anyio.sleep(3600)"): "parked until killed",
    ("memory_crash_child.py", "anyio.sleep(3600)"): "parked until killed",
    ("memory_snapshot_child.py", "time.sleep(3600)"): "parked until killed",
    ("crash_child.py", "anyio.sleep(120)"): "parked until killed",
    ("stream_crash_child.py", "anyio.sleep(3600)"): "parked until killed",
    # Polls a Ray host for a decision a slow close handed on (no event crosses to the test).
    ("test_cluster_ray_chroma.py", "anyio.sleep(0.5)"): "polling a remote host, bounded",
    ("stream_crash_child.py", "time.sleep(0.05)"): (
        "polling the stream's log file from the dying fsync's thread (no event crosses), bounded"
    ),
    ("test_memory.py", "anyio.sleep(0.1)"): (
        "polling the index store as another program reads it (chromadb tells no one), bounded"
    ),
    # Random pauses are the experiment: where a kill -9 lands.
    ("campaign_child.py", "anyio.sleep(random.uniform("): "random work before a kill",
    ("campaign_child.py", "anyio.sleep(rng.uniform("): "random work before a kill",
    ("stream_campaign_child.py", "anyio.sleep(random.uniform("): "random work before a kill",
    ("stream_campaign_child.py", "anyio.sleep(rng.uniform("): "random work before a kill",
    ("test_kill_campaign.py", "time.sleep(rng.uniform("): "a random kill point",
    # Polls of something that offers no event to wait on (another process, a thread's
    # flag), each inside a loop bounded by a deadline the scan checks separately.
    ("chroma_server.py", "time.sleep(0.1)"): "polls the chroma process's heartbeat",
    ("chroma_server.py", "httpx.get(url, timeout=1.0)"): "one heartbeat poll; retried",
    ("crash_helpers.py", "time.sleep(0.01)"): "polls the child's progress file",
    ("test_kill_campaign.py", "time.sleep(0.01)"): "polls the life's progress file",
    ("test_embedded_app.py", "time.sleep(0.02)"): "polls uvicorn's started flag",
    ("test_embedded_app.py", "time.sleep(0.05)"): "polls /memory for the decided fact",
    # A grace period: slower only means the process is killed instead, never a failure.
    ("chroma_server.py", "self.process.wait(timeout=10)"): "terminate, then kill",
    # A tool's body (the work being timed, limited or cancelled), not a wait.
    ("test_query.py", "anyio.sleep(0.02)"): "a tool doing work while others run",
    ("test_query.py", "anyio.sleep(seconds)"): "a tool that naps for its argument",
    ("test_tools.py", "anyio.sleep(10)"): "a tool that outlasts its 0.05 s timeout",
    # Cancel points: the assertions hold wherever the cancel lands (checked with 0 s).
    ("test_provider.py", "anyio.move_on_after(0.2)"): "cancels a 2 s stream somewhere",
    ("test_query.py", "anyio.move_on_after(0.3)"): "cancels a 1 s stream somewhere",
    ("test_session_edges.py", "anyio.sleep(0.05)"): "cancels a turn somewhere",
}


class Wait(msgspec.Struct, frozen=True):
    file: str
    line: int
    kind: str  # "bound" or "sleep"
    seconds: float | None  # None: not a literal (computed, or a name)
    source: str

    def __str__(self) -> str:
        return f"{self.file}:{self.line}: {self.source}"


def _name(call: ast.Call) -> str:
    func = call.func
    if isinstance(func, ast.Attribute):
        return func.attr
    return func.id if isinstance(func, ast.Name) else ""


def _seconds(node: ast.expr) -> float | None:
    try:
        value = ast.literal_eval(node)
    except ValueError:
        return None
    return float(value) if isinstance(value, int | float) else None


def _is_deadline(node: ast.AST) -> bool:
    return (
        isinstance(node, ast.BinOp)
        and isinstance(node.op, ast.Add)
        and isinstance(node.left, ast.Call)
        and _name(node.left) == "monotonic"
    )


def fixed_waits(path: Path) -> list[Wait]:
    text = path.read_text()
    found = []
    for node in ast.walk(ast.parse(text)):
        if _is_deadline(node):  # deadline = time.monotonic() + 60
            assert isinstance(node, ast.BinOp)
            source = " ".join((ast.get_source_segment(text, node) or "").split())
            found.append(Wait(path.name, node.lineno, "bound", _seconds(node.right), source))
        if not isinstance(node, ast.Call):
            continue
        name = _name(node)
        if name not in _SLEEPS | _BOUNDS | _BOUNDED_BY_TIMEOUT:
            continue
        source = " ".join((ast.get_source_segment(text, node) or name).split())
        first = node.args[0] if node.args else None
        if name in _SLEEPS and first is not None:
            found.append(Wait(path.name, node.lineno, "sleep", _seconds(first), source))
        elif first is not None and (
            name in _BOUNDS or (name in _BOUNDED_BY_FIRST_ARGUMENT and not node.keywords)
        ):
            found.append(Wait(path.name, node.lineno, "bound", _seconds(first), source))
        elif name in _BOUNDED_BY_TIMEOUT:
            for keyword in node.keywords:
                if keyword.arg == "timeout":
                    seconds = _seconds(keyword.value)
                    found.append(Wait(path.name, node.lineno, "bound", seconds, source))
    return found


@functools.cache
def all_waits() -> list[Wait]:
    return [w for path in sorted(TESTS.glob("*.py")) for w in fixed_waits(path)]


def offenders(waits: list[Wait]) -> list[Wait]:
    bad = []
    for wait in waits:
        if any(file == wait.file and call in wait.source for file, call in ALLOWED):
            continue
        if wait.kind == "sleep" or (wait.seconds is not None and wait.seconds < FLOOR):
            bad.append(wait)
    return bad


def test_no_fixed_wait_is_below_the_floor_or_waits_for_nothing() -> None:
    bad = offenders(all_waits())
    listing = "\n".join(map(str, bad))
    assert not bad, f"below {FLOOR:.0f} s, or a sleep (wait for an event, or allow it):\n{listing}"


def test_every_allowance_still_matches_a_wait() -> None:
    """An allow-list entry whose wait is gone (or was reworded) is stale: remove it."""
    waits = all_waits()
    stale = [
        key for key in ALLOWED if not any(w.file == key[0] and key[1] in w.source for w in waits)
    ]
    assert not stale, stale


@pytest.mark.parametrize(
    ("code", "expected"),
    [
        ("child.expect('x', timeout=5)", [("bound", 5.0)]),
        ("subprocess.run(['a'], timeout=20)", [("bound", 20.0)]),
        ("anyio.fail_after(10)", [("bound", 10.0)]),
        ("time.sleep(0.1)", [("sleep", 0.1)]),
        ("asyncio.wait_for(x, timeout=T)", [("bound", None)]),
        ("Tool(fn, timeout=0.05)", []),  # a setting under test, not a wait
        ("deadline = time.monotonic() + 20", [("bound", 20.0)]),
        ("process.join(10)", [("bound", 10.0)]),
    ],
)
def test_the_scan_finds_each_kind_of_wait(tmp_path: Path, code: str, expected: object) -> None:
    """The scan can fail: each form it looks for is found, with its seconds."""
    path = tmp_path / "test_x.py"
    path.write_text(code + "\n")
    waits = fixed_waits(path)
    assert [(w.kind, w.seconds) for w in waits] == expected
    assert offenders(waits) == [w for w in waits if w.kind == "sleep" or (w.seconds or 99) < FLOOR]
