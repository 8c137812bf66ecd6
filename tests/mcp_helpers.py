"""Starting the MCP fixture server (tests/mcp_server_fixture.py) as a real process."""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, Literal

import anyio
from anyio.streams.text import TextReceiveStream

from xai.tools import MCPServer

ROOT = Path(__file__).resolve().parent.parent
FIXTURE = str(ROOT / "tests" / "mcp_server_fixture.py")
Transport = Literal["stdio", "http"]


def child_env() -> dict[str, str]:
    """What a child needs to import this tree (the SDK passes only a small default env)."""
    return {"PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}


async def first_line(stream: Any) -> str:
    """Read one line of a child's stdout (no timing: wait for the bytes)."""
    buffer = ""
    async for chunk in TextReceiveStream(stream):
        buffer += chunk
        if "\n" in buffer:
            return buffer.split("\n", 1)[0]
    raise RuntimeError(f"the child closed its output after {buffer!r}")


@asynccontextmanager
async def http_fixture() -> AsyncIterator[str]:
    """The fixture server over streamable HTTP on 127.0.0.1, an ephemeral port; yields its URL."""
    process = await anyio.open_process(
        [sys.executable, FIXTURE, "--http", "127.0.0.1"],
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
        yield MCPServer.stdio(sys.executable, [FIXTURE], name="fixture", env=child_env(), **options)
        return
    async with http_fixture() as url:
        yield MCPServer.http(url, name="fixture", **options)
