"""Tools: typed Python functions the model can call, MCP servers as tool sources, and the set
that runs them."""

from xai.tools._mcp import MCPHttp, MCPServer, MCPServerConfig, MCPStdio, render_mcp_result
from xai.tools._tool import Tool, ToolContext, tool
from xai.tools._toolset import DEFAULT_MAX_RESULT_CHARS, ToolSet, clamp

__all__ = [
    "DEFAULT_MAX_RESULT_CHARS",
    "MCPHttp",
    "MCPServer",
    "MCPServerConfig",
    "MCPStdio",
    "Tool",
    "ToolContext",
    "ToolSet",
    "clamp",
    "render_mcp_result",
    "tool",
]
