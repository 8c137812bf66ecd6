"""Tools: typed Python functions the model can call (msgspec or Pydantic types), MCP servers
as tool sources, and the set that runs them."""

from xai.tools._approval import ApprovalPolicy, ArgumentsPolicy
from xai.tools._mcp import MCPHttp, MCPServer, MCPServerConfig, MCPStdio, render_mcp_result
from xai.tools._pydantic import is_pydantic_model, validation_text
from xai.tools._tool import Tool, ToolContext, tool
from xai.tools._toolset import DEFAULT_MAX_RESULT_CHARS, ToolSet, clamp

__all__ = [
    "DEFAULT_MAX_RESULT_CHARS",
    "ApprovalPolicy",
    "ArgumentsPolicy",
    "MCPHttp",
    "MCPServer",
    "MCPServerConfig",
    "MCPStdio",
    "Tool",
    "ToolContext",
    "ToolSet",
    "clamp",
    "is_pydantic_model",
    "render_mcp_result",
    "tool",
    "validation_text",
]
