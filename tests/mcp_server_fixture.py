"""A small MCP server written with the official SDK, run by the MCP tests as a real process.

    python tests/mcp_server_fixture.py                   # stdio
    python tests/mcp_server_fixture.py --http 127.0.0.1  # streamable HTTP on an ephemeral port;
                                                         # prints "port N" once it listens

Tools cover what xai must map: a schema with an enum and a description, structured content,
``isError``, an image, a call that blocks until cancelled (and records that it was), helpers
that let a test wait for those events without sleeping, and a call that kills the server.
"""

from __future__ import annotations

import argparse
import base64
import os
import signal
import socket
from typing import Annotated, Literal

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import CallToolResult, ImageContent, TextContent
from pydantic import BaseModel, Field

server = MCPServer("xai-test-fixture", log_level="WARNING")

_started: dict[str, anyio.Event] = {}
_cancelled: dict[str, anyio.Event] = {}


def _event(table: dict[str, anyio.Event], tag: str) -> anyio.Event:
    if tag not in table:
        table[tag] = anyio.Event()
    return table[tag]


@server.tool()
def convert(
    amount: Annotated[float, Field(description="how much, in the source unit")],
    unit: Literal["km", "mi"],
) -> str:
    """Convert a distance between kilometres and miles."""
    if unit == "km":
        return f"{amount} km = {amount / 1.609344:.2f} mi"
    return f"{amount} mi = {amount * 1.609344:.2f} km"


class Forecast(BaseModel):
    city: str
    celsius: float
    sky: Literal["clear", "cloudy", "rain"]


@server.tool()
def forecast(city: str) -> Forecast:
    """Tomorrow's weather for a city (structured)."""
    return Forecast(city=city, celsius=21.5, sky="clear")


@server.tool()
def refuse(reason: str) -> str:
    """Always fails with the reason given."""
    raise ToolError(f"refused: {reason}")


@server.tool()
def picture() -> CallToolResult:
    """A caption and a small PNG."""
    return CallToolResult(
        content=[
            TextContent(type="text", text="a red dot"),
            ImageContent(
                type="image", data=base64.b64encode(b"png" * 10).decode(), mime_type="image/png"
            ),
        ]
    )


@server.tool()
async def block(tag: str) -> str:
    """Wait until cancelled; the server remembers the cancellation under ``tag``."""
    _event(_started, tag).set()
    try:
        await anyio.sleep_forever()
    except anyio.get_cancelled_exc_class():
        _event(_cancelled, tag).set()
        raise
    return "unreachable"


@server.tool()
async def wait_started(tag: str) -> str:
    """Return once ``block(tag)`` is running."""
    await _event(_started, tag).wait()
    return "started"


@server.tool()
async def wait_cancelled(tag: str) -> str:
    """Return once ``block(tag)`` was cancelled."""
    await _event(_cancelled, tag).wait()
    return "cancelled"


@server.tool()
def die() -> str:
    """Kill this server process in the middle of the call."""
    os.kill(os.getpid(), signal.SIGKILL)
    return "unreachable"


async def _serve_http(host: str) -> None:
    import uvicorn

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind((host, 0))
    sock.listen()
    app = server.streamable_http_app()
    config = uvicorn.Config(app, log_level="warning", lifespan="on")
    uv = uvicorn.Server(config)
    print(f"port {sock.getsockname()[1]}", flush=True)
    await uv.serve(sockets=[sock])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--http", metavar="HOST")
    args = parser.parse_args()
    if args.http:
        anyio.run(_serve_http, args.http)
    else:
        anyio.run(server.run_stdio_async)


if __name__ == "__main__":
    main()
