"""xai: LLM agents that live inside your application's event loop.

The front door. Layers, top to bottom: Agent → Session → Query → providers and
tools (the Agent and Session layers arrive in later releases). Messages,
events and errors are leaves every layer shares.
"""

from xai.config import EmbeddingConfig, LLMConfig
from xai.events import (
    MessageCommitted,
    QueryDone,
    QueryEvent,
    TextDelta,
    ThinkingDelta,
    ToolCallFinished,
    ToolCallStarted,
)
from xai.exceptions import ConfigurationError, ProviderError, RunError, UsageError, XaiError
from xai.logs import configure_logging
from xai.messages import (
    AssistantMessage,
    Message,
    Origin,
    QueryResult,
    StopReason,
    SystemMessage,
    ToolCall,
    ToolMessage,
    ToolResult,
    Usage,
    UserMessage,
)
from xai.providers import OpenAIProvider, Provider
from xai.query import CancelToken, Query, QueryConfig, run_query, run_query_sync
from xai.tools import Tool, ToolContext, ToolSet, tool

__version__ = "0.1.0"

__all__ = [
    "AssistantMessage",
    "CancelToken",
    "ConfigurationError",
    "EmbeddingConfig",
    "LLMConfig",
    "Message",
    "MessageCommitted",
    "OpenAIProvider",
    "Origin",
    "Provider",
    "ProviderError",
    "Query",
    "QueryConfig",
    "QueryDone",
    "QueryEvent",
    "QueryResult",
    "RunError",
    "StopReason",
    "SystemMessage",
    "TextDelta",
    "ThinkingDelta",
    "Tool",
    "ToolCall",
    "ToolCallFinished",
    "ToolCallStarted",
    "ToolContext",
    "ToolMessage",
    "ToolResult",
    "ToolSet",
    "Usage",
    "UsageError",
    "UserMessage",
    "XaiError",
    "__version__",
    "configure_logging",
    "run_query",
    "run_query_sync",
    "tool",
]
