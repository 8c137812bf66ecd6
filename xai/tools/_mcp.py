"""MCP servers as tool sources, on the official ``mcp`` SDK (the ``xai-actors[mcp]`` extra).

An ``MCPServer`` is one connection: ``start()`` launches the server (a command over
stdio) or connects to it (streamable HTTP), lists its tools and keeps their JSON
schemas as they are; ``call`` forwards one call and maps the answer to text and a
JSON value; ``aclose()`` stops it. A ``ToolSet`` holds servers beside its Python
tools and runs their calls through the same uniform record.

The connection lives in a task of its own, inside a task group the opener enters, so
whatever the SDK's tasks raise (a server that dies, a broken pipe) stays in that task:
a dead server makes calls fail as tool errors, never the Session that called them.

Nothing here imports ``mcp`` until a server starts.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, Literal, TypeAlias

import anyio
import anyio.abc
import msgspec

from xai._redact import masked_settings, register_settings
from xai.exceptions import ConfigurationError, MCPServerError, ToolError
from xai.logs import get_logger
from xai.messages import ToolSpec

if TYPE_CHECKING:
    from mcp import Client
    from mcp_types import CallToolResult, ContentBlock

__all__ = [
    "MCPHttp",
    "MCPServer",
    "MCPServerConfig",
    "MCPStdio",
    "MCPToolOutcome",
    "render_mcp_result",
]

_log = get_logger(__name__)

DEFAULT_STARTUP_TIMEOUT = 30.0
# The SDK wants a read timeout per request; the tool timeout (a cancel scope around the
# call, so the SDK sends the server a cancellation) is the one that decides.
_CALL_CEILING = 7 * 24 * 3600.0
_INVALID_NAME_CHARS = re.compile(r"[^A-Za-z0-9_-]")


class MCPStdio(msgspec.Struct, frozen=True, kw_only=True, tag="stdio", tag_field="transport"):
    """An MCP server xai starts as a child process and talks to over stdin/stdout.

    ``env`` is added to the SDK's small default environment (``PATH``, ``HOME``...), not to
    xai's own: a server never sees ``LLM_API_KEY`` unless it is given here.
    """

    name: str
    """Names the server in errors and logs."""
    command: str
    args: list[str] = msgspec.field(default_factory=list)
    env: dict[str, str] = msgspec.field(default_factory=dict)
    cwd: str | None = None
    prefix: str = ""
    """Put before each tool name (``"files_"``), e.g. when two servers share a tool name."""
    timeout: float | None = None
    """Per-call timeout for this server's tools; ``None``: the Query's tool timeout."""
    startup_timeout: float = DEFAULT_STARTUP_TIMEOUT
    """How long starting, the handshake and listing the tools may take."""

    def __post_init__(self) -> None:
        register_settings(self.env)

    def __repr__(self) -> str:
        return _repr_masking(self, "env")


class MCPHttp(msgspec.Struct, frozen=True, kw_only=True, tag="http", tag_field="transport"):
    """An MCP server reached over streamable HTTP at ``url`` (e.g. ``http://127.0.0.1:8000/mcp``)."""

    name: str
    url: str
    headers: dict[str, str] = msgspec.field(default_factory=dict)
    """Sent with every request (e.g. ``Authorization``); never logged."""
    prefix: str = ""
    timeout: float | None = None
    startup_timeout: float = DEFAULT_STARTUP_TIMEOUT

    def __post_init__(self) -> None:
        register_settings(self.headers)

    def __repr__(self) -> str:
        return _repr_masking(self, "headers")


def _repr_masking(config: msgspec.Struct, field: str) -> str:
    """``config``'s repr with the credentials in its settings ``field`` shown as ``***``."""
    shown: list[str] = []
    for name in config.__struct_fields__:
        value = getattr(config, name)
        shown.append(f"{name}={masked_settings(value) if name == field else value!r}")
    return f"{type(config).__name__}({', '.join(shown)})"


MCPServerConfig: TypeAlias = MCPStdio | MCPHttp
"""How to reach one MCP server; in scenario files and runner input, ``transport`` picks the kind."""


class MCPToolOutcome(msgspec.Struct, frozen=True, kw_only=True):
    """One call's answer: ``text`` for the model, ``value`` for the record (the structured
    content when the server sent one), ``is_error`` as the server said."""

    text: str
    value: Any
    is_error: bool


def _sdk_missing() -> ConfigurationError:
    return ConfigurationError(
        "MCP servers need the official MCP SDK: pip install 'xai-actors[mcp]'"
    )


def _describe(exc: BaseException) -> str:
    """The innermost useful message of an error the SDK raised (often inside a group)."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    text = str(exc) or type(exc).__name__
    return f"{type(exc).__name__}: {text}" if not isinstance(exc, OSError | TimeoutError) else text


def _block_text(block: ContentBlock) -> str:
    """A content block as text; what is not text is summarised, never inlined."""
    from mcp_types import (
        AudioContent,
        EmbeddedResource,
        ImageContent,
        ResourceLink,
        TextContent,
        TextResourceContents,
    )

    if isinstance(block, TextContent):
        return block.text
    if isinstance(block, ImageContent | AudioContent):
        size = len(base64.b64decode(block.data)) if block.data else 0
        return f"[{block.type}: {block.mime_type}, {size} bytes]"
    if isinstance(block, ResourceLink):
        about = f" ({block.description})" if block.description else ""
        return f"[resource link: {block.name} <{block.uri}>{about}]"
    if isinstance(block, EmbeddedResource):
        resource = block.resource
        mime = resource.mime_type or "unknown type"
        if isinstance(resource, TextResourceContents):
            return f"[resource <{resource.uri}>, {mime}]\n{resource.text}"
        size = len(base64.b64decode(resource.blob))
        return f"[resource <{resource.uri}>: {mime}, {size} bytes]"
    return f"[{getattr(block, 'type', 'unknown')} content]"  # type: ignore[unreachable]  # a kind newer than this code


def render_mcp_result(result: CallToolResult) -> MCPToolOutcome:
    """Map an MCP ``CallToolResult`` to text, a JSON value and its error flag."""
    text = "\n".join(_block_text(block) for block in result.content)
    structured = result.structured_content
    if structured is not None:
        if not text:
            text = msgspec.json.encode(structured).decode()
        return MCPToolOutcome(text=text, value=structured, is_error=result.is_error)
    return MCPToolOutcome(text=text, value=text, is_error=result.is_error)


def _tool_name(prefix: str, name: str) -> str:
    """A name every OpenAI-compatible endpoint accepts (MCP allows dots and slashes)."""
    return _INVALID_NAME_CHARS.sub("_", f"{prefix}{name}")[:64]


class MCPServer:
    """A connection to one MCP server, a tool source for ``ToolSet(mcp=[...])``.

    Build one with ``MCPServer.stdio(...)``, ``MCPServer.http(...)`` or from a config
    (``MCPServer(MCPStdio(...))``). A Session or Agent given it starts it in its run and
    stops it when it closes; ``async with server:`` opens it yourself (the Session or
    Agent then leaves it open). Whoever starts it must stop it, from the same task.
    """

    def __init__(self, config: MCPServerConfig) -> None:
        self.config = config
        self.name = config.name
        self._state: Literal["closed", "opening", "open"] = "closed"
        self._client: Client | None = None
        self._specs: tuple[ToolSpec, ...] = ()
        self._remote: dict[str, str] = {}  # the model's name -> the server's name
        self._stop: anyio.Event | None = None
        self._group: anyio.abc.TaskGroup | None = None

    @classmethod
    def stdio(
        cls,
        command: str,
        args: list[str] | tuple[str, ...] = (),
        *,
        name: str | None = None,
        env: dict[str, str] | None = None,
        cwd: str | None = None,
        prefix: str = "",
        timeout: float | None = None,
        startup_timeout: float = DEFAULT_STARTUP_TIMEOUT,
    ) -> MCPServer:
        return cls(
            MCPStdio(
                name=name or command,
                command=command,
                args=list(args),
                env=dict(env or {}),
                cwd=cwd,
                prefix=prefix,
                timeout=timeout,
                startup_timeout=startup_timeout,
            )
        )

    @classmethod
    def http(
        cls,
        url: str,
        *,
        name: str | None = None,
        headers: dict[str, str] | None = None,
        prefix: str = "",
        timeout: float | None = None,
        startup_timeout: float = DEFAULT_STARTUP_TIMEOUT,
    ) -> MCPServer:
        return cls(
            MCPHttp(
                name=name or url,
                url=url,
                headers=dict(headers or {}),
                prefix=prefix,
                timeout=timeout,
                startup_timeout=startup_timeout,
            )
        )

    # -- what the tool set reads -------------------------------------------------------

    @property
    def state(self) -> Literal["closed", "opening", "open"]:
        return self._state

    @property
    def timeout(self) -> float | None:
        return self.config.timeout

    @property
    def specs(self) -> tuple[ToolSpec, ...]:
        """The server's tools with their schemas as listed (empty until it is open)."""
        return self._specs

    def tool_names(self) -> Iterator[str]:
        return iter(self._remote)

    def __contains__(self, name: object) -> bool:
        return name in self._remote

    def __repr__(self) -> str:
        return f"MCPServer({self.name!r}, {self._state})"

    # -- lifecycle ---------------------------------------------------------------------

    async def __aenter__(self) -> MCPServer:
        await self.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def start(self) -> None:
        """Start (or connect to) the server and list its tools.

        Raises ``MCPServerError`` naming the server if it cannot be started, does not
        answer the handshake within ``startup_timeout`` or fails to list its tools.
        """
        if self._state != "closed":
            raise ConfigurationError(f"MCP server {self.name!r} is already {self._state}")
        self._state = "opening"
        self._stop = anyio.Event()
        group = anyio.create_task_group()
        await group.__aenter__()
        try:
            await group.start(self._serve)
        except Exception:
            # The task failed before it started and is gone: the group closes cleanly.
            await group.__aexit__(None, None, None)
            self._state = "closed"
            raise
        except BaseException as exc:  # cancelled while starting: the group must see it
            self._state = "closed"
            await group.__aexit__(type(exc), exc, exc.__traceback__)
            raise
        self._group = group

    async def aclose(self) -> None:
        """Stop the server (a child process is ended) and forget its tools. Idempotent."""
        group, self._group = self._group, None
        if group is None:
            return
        assert self._stop is not None
        self._stop.set()
        # Shield the group's own scope (a scope around it could not be left first): the
        # server is stopped even when the closer is being cancelled.
        group.cancel_scope.shield = True
        await group.__aexit__(None, None, None)

    def _http_client(self) -> Any:
        """The HTTP client of a streamable HTTP server (``None`` for stdio): the caller
        closes it, whatever happens after it is made."""
        config = self.config
        if isinstance(config, MCPStdio):
            return None
        import httpx2

        return httpx2.AsyncClient(
            headers=config.headers,
            timeout=httpx2.Timeout(config.startup_timeout, read=_CALL_CEILING),
        )

    def _client_for(self, http: Any) -> Client:
        """The SDK client (over ``http`` for a streamable HTTP server)."""
        try:
            from mcp import Client, StdioServerParameters
            from mcp.client.streamable_http import streamable_http_client
            from mcp_types import Implementation
        except ImportError:  # pragma: no cover - the extra is installed in CI
            raise _sdk_missing() from None
        info = Implementation(name="xai", version="0.1.0")
        config = self.config
        timeout = config.startup_timeout
        if isinstance(config, MCPStdio):
            params = StdioServerParameters(
                command=config.command, args=config.args, env=config.env or None, cwd=config.cwd
            )
            return Client(params, read_timeout_seconds=timeout, client_info=info)
        transport = streamable_http_client(config.url, http_client=http)
        return Client(transport, read_timeout_seconds=timeout, client_info=info)

    async def _serve(self, *, task_status: anyio.abc.TaskStatus[None]) -> None:
        assert self._stop is not None
        started = False
        try:
            http = self._http_client()
            try:
                client = self._client_for(http)  # if this fails, `http` is closed all the same
                async with client:
                    await self._list(client)
                    self._client = client
                    self._state = "open"
                    started = True
                    task_status.started()
                    await self._stop.wait()
            finally:
                if http is not None:
                    with anyio.CancelScope(shield=True):
                        await http.aclose()
        except ConfigurationError:
            raise
        except Exception as exc:
            if not started:
                raise MCPServerError(
                    f"MCP server {self.name!r} failed to start: {_describe(exc)}",
                    server=self.name,
                ) from None
            # It died or its connection broke while closing: calls already said so.
            _log.warning("mcp.server_closed_with_error", server=self.name, error=_describe(exc))
        finally:
            self._client = None
            self._specs = ()
            self._remote = {}
            self._state = "closed"

    async def _list(self, client: Client) -> None:
        specs: list[ToolSpec] = []
        remote: dict[str, str] = {}
        cursor: str | None = None
        while True:
            page = await client.list_tools(cursor=cursor)
            for t in page.tools:
                name = _tool_name(self.config.prefix, t.name)
                if name in remote:
                    raise MCPServerError(
                        f"MCP server {self.name!r} lists two tools named {name!r}",
                        server=self.name,
                    )
                remote[name] = t.name
                schema = dict(t.input_schema) if t.input_schema else {"type": "object"}
                specs.append(
                    ToolSpec(
                        name=name, description=t.description or t.title or "", parameters=schema
                    )
                )
            cursor = page.next_cursor
            if not cursor:
                break
        self._specs = tuple(specs)
        self._remote = remote

    # -- calls -------------------------------------------------------------------------

    async def call(self, name: str, arguments: dict[str, Any]) -> MCPToolOutcome:
        """Forward one call (``name`` as the model knows it). Raises ``ToolError`` when the
        server is not open, breaks the connection (dies) or answers with a protocol error;
        cancelling the caller cancels the request on the server."""
        client = self._client
        remote = self._remote.get(name)
        if client is None or remote is None:
            raise ToolError(f"MCP server {self.name!r} is not running")
        from mcp import MCPError
        from mcp_types import CONNECTION_CLOSED

        try:
            result = await client.call_tool(remote, arguments, read_timeout_seconds=_CALL_CEILING)
        except MCPError as exc:
            if exc.code == CONNECTION_CLOSED:
                raise ToolError(
                    f"MCP server {self.name!r} closed the connection during the call "
                    "(it may have crashed)"
                ) from None
            raise ToolError(f"MCP server {self.name!r}: {exc}") from None
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream):
            raise ToolError(f"MCP server {self.name!r} is gone") from None
        return render_mcp_result(result)
