"""An xai Agent served over MCP (``xai mcp serve``): search, remember, forget, recent facts,
send a message to a Session. Needs the ``xai-actors[mcp]`` extra."""

try:
    import mcp as _sdk  # noqa: F401
except ImportError:  # pragma: no cover - the extra is installed in CI
    from xai.exceptions import ConfigurationError

    raise ConfigurationError(
        "serving an Agent over MCP needs the official MCP SDK: pip install 'xai-actors[mcp]'"
    ) from None

from xai.mcp._server import (
    FactView,
    Remembered,
    SessionAnswer,
    agent_mcp_server,
    serve_http,
    serve_stdio,
)

__all__ = [
    "FactView",
    "Remembered",
    "SessionAnswer",
    "agent_mcp_server",
    "serve_http",
    "serve_stdio",
]
