"""Tools: typed Python functions the model can call, and the set that runs them."""

from xai.tools._tool import Tool, ToolContext, tool
from xai.tools._toolset import DEFAULT_MAX_RESULT_CHARS, ToolSet, clamp

__all__ = ["DEFAULT_MAX_RESULT_CHARS", "Tool", "ToolContext", "ToolSet", "clamp", "tool"]
