"""Starting the MCP fixture server (tests/mcp_server_fixture.py) as a real process.

Each server is a process of its own, forked by one zygote that imported the MCP SDK once
(``tests/mcp_zygote.py``) and reached through a launcher (``tests/zygote_launch.py``) that
the client starts as its command: ~1.3 s of CPU less per server, the client side as real
as before (it starts a command, talks over its pipes or HTTP, and kills it)."""

from __future__ import annotations

import atexit
import contextlib
import os
import subprocess
import sys
import tempfile
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, Literal

import anyio
from anyio.streams.text import TextReceiveStream

from xai.tools import MCPServer

ROOT = Path(__file__).resolve().parent.parent
FIXTURE = str(ROOT / "tests" / "mcp_server_fixture.py")
LAUNCHER = str(ROOT / "tests" / "zygote_launch.py")
Transport = Literal["stdio", "http"]


def child_env() -> dict[str, str]:
    """What a child needs to import this tree (the SDK passes only a small default env)."""
    return {"PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}


_zygote: list[tuple[subprocess.Popen[str], str]] = []


def _stop_zygote() -> None:
    if _zygote:
        process, path = _zygote.pop()
        process.kill()
        process.wait()
        with contextlib.suppress(OSError):
            os.unlink(path)
            os.rmdir(os.path.dirname(path))


def fixture_command(*args: str) -> list[str]:
    """The command that runs the fixture server with ``args``, or with ``-m xai ARGS``,
    ``python -m xai ARGS`` (forked by the zygote, which starts on first use and is stopped
    when the test run ends)."""
    if not _zygote:
        path = os.path.join(tempfile.mkdtemp(prefix="xz", dir="/tmp"), "s")  # (short path)
        process = subprocess.Popen(
            [sys.executable, "-m", "tests.mcp_zygote", path],
            env={**os.environ, **child_env()},
            stdin=subprocess.PIPE,  # (it ends when this process does: its stdin closes)
            stdout=subprocess.PIPE,
            text=True,
            cwd=ROOT,
        )
        assert process.stdout is not None
        ready = process.stdout.readline()  # the event: it listens
        assert ready.strip() == "ready", f"the MCP zygote did not start: {ready!r}"
        _zygote.append((process, path))
        atexit.register(_stop_zygote)
    return [sys.executable, "-S", LAUNCHER, _zygote[0][1], *args]


async def first_line(stream: Any) -> str:
    """Read one line of a child's stdout (no timing: wait for the bytes)."""
    return await line_with(stream, "")


async def line_with(stream: Any, needle: str) -> str:
    """Read a child's output up to the first whole line that contains ``needle`` (no timing:
    wait for the bytes). Every line is looked at: lines written close together arrive in one
    read when the reader is slow (a loaded machine), and a line after the first in a read is
    as much the answer as one that came alone."""
    buffer = ""
    async for chunk in TextReceiveStream(stream):
        buffer += chunk
        *whole, buffer = buffer.split("\n")
        for line in whole:
            if needle in line:
                return line
    raise RuntimeError(f"the child closed its output without a line with {needle!r}: {buffer!r}")


@asynccontextmanager
async def http_fixture() -> AsyncIterator[str]:
    """The fixture server over streamable HTTP on 127.0.0.1, an ephemeral port; yields its URL."""
    process = await anyio.open_process(
        fixture_command("--http", "127.0.0.1"),
        env={**os.environ, **child_env()},
        stderr=None,
    )
    try:
        assert process.stdout is not None
        with anyio.fail_after(30):
            line = await first_line(process.stdout)
        yield f"http://127.0.0.1:{int(line.split()[1])}/mcp"
    finally:
        with anyio.CancelScope(shield=True):
            with contextlib.suppress(ProcessLookupError):  # a test may have killed it
                process.kill()
            await process.wait()
            await process.aclose()


@asynccontextmanager
async def fixture_server(transport: Transport, **options: Any) -> AsyncIterator[MCPServer]:
    """An (unstarted) ``MCPServer`` for the fixture over ``transport``."""
    if transport == "stdio":
        command, *args = fixture_command()
        yield MCPServer.stdio(command, args, name="fixture", env=child_env(), **options)
        return
    async with http_fixture() as url:
        yield MCPServer.http(url, name="fixture", **options)
