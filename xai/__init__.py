"""xai: LLM agents that live inside your application's event loop.

The front door. Layers, top to bottom: the one-shot facade (``run_agent``) →
Agent (and ``AgentHost`` for many) → Session → Query → providers and tools.
Messages, events and errors are leaves every layer shares. Every name a user
needs to build an application is here::

    from xai import ask_sync

    print(ask_sync("What do you remember about me?", agent="fern").text)

Each subpackage (``xai.agent``, ``xai.session``, ``xai.memory``, ``xai.core``,
``xai.providers``, ``xai.tools``, ``xai.testing``, ...) holds the rest of its
layer's public names.

Names load on first use (module ``__getattr__``), so ``import xai`` costs
next to nothing; the ``openai`` SDK, chromadb and the embedding model load only
when a provider is built or memory is opened.
"""

# Imported under private names: everything public here is in ``__all__``.
import importlib as _importlib
import typing as _typing

if _typing.TYPE_CHECKING:
    from xai.agent import Agent, AgentConfig, AgentHost, Persona
    from xai.config import EmbeddingConfig, LLMConfig
    from xai.core import AgentResult, ScenarioConfig, arun_agent, ask, ask_sync, run_agent
    from xai.events import (
        AgentEvent,
        MessageCommitted,
        QueryDone,
        QueryEvent,
        SessionEvent,
        TextDelta,
        ThinkingDelta,
        ToolCallFinished,
        ToolCallStarted,
        TurnDone,
    )
    from xai.exceptions import ConfigurationError, ProviderError, RunError, UsageError, XaiError
    from xai.logs import configure_logging
    from xai.messages import (
        AssistantMessage,
        MemoryCandidate,
        Message,
        Origin,
        QueryResult,
        StopReason,
        SystemMessage,
        ToolCall,
        ToolMessage,
        ToolResult,
        TurnOutcome,
        Usage,
        UserMessage,
    )
    from xai.providers import OpenAIProvider, Provider
    from xai.query import CancelToken, Query, QueryConfig, run_query, run_query_sync
    from xai.session import Session, SessionConfig
    from xai.structured import ask_structured
    from xai.tools import Tool, ToolContext, ToolSet, tool

__version__ = "0.1.0"

# Each public name and the module that defines it, by layer.
_SOURCES: dict[str, tuple[str, ...]] = {
    "xai.core": ("AgentResult", "ScenarioConfig", "arun_agent", "ask", "ask_sync", "run_agent"),
    "xai.agent": ("Agent", "AgentConfig", "AgentHost", "Persona"),
    "xai.session": ("Session", "SessionConfig"),
    "xai.query": ("CancelToken", "Query", "QueryConfig", "run_query", "run_query_sync"),
    "xai.structured": ("ask_structured",),
    "xai.providers": ("OpenAIProvider", "Provider"),
    "xai.tools": ("Tool", "ToolContext", "ToolSet", "tool"),
    "xai.config": ("EmbeddingConfig", "LLMConfig"),
    "xai.logs": ("configure_logging",),
    "xai.events": (
        "AgentEvent",
        "MessageCommitted",
        "QueryDone",
        "QueryEvent",
        "SessionEvent",
        "TextDelta",
        "ThinkingDelta",
        "ToolCallFinished",
        "ToolCallStarted",
        "TurnDone",
    ),
    "xai.messages": (
        "AssistantMessage",
        "MemoryCandidate",
        "Message",
        "Origin",
        "QueryResult",
        "StopReason",
        "SystemMessage",
        "ToolCall",
        "ToolMessage",
        "ToolResult",
        "TurnOutcome",
        "Usage",
        "UserMessage",
    ),
    "xai.exceptions": ("ConfigurationError", "ProviderError", "RunError", "UsageError", "XaiError"),
}
_MODULE_OF: dict[str, str] = {name: module for module, names in _SOURCES.items() for name in names}

__all__ = [
    "Agent",
    "AgentConfig",
    "AgentEvent",
    "AgentHost",
    "AgentResult",
    "AssistantMessage",
    "CancelToken",
    "ConfigurationError",
    "EmbeddingConfig",
    "LLMConfig",
    "MemoryCandidate",
    "Message",
    "MessageCommitted",
    "OpenAIProvider",
    "Origin",
    "Persona",
    "Provider",
    "ProviderError",
    "Query",
    "QueryConfig",
    "QueryDone",
    "QueryEvent",
    "QueryResult",
    "RunError",
    "ScenarioConfig",
    "Session",
    "SessionConfig",
    "SessionEvent",
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
    "TurnDone",
    "TurnOutcome",
    "Usage",
    "UsageError",
    "UserMessage",
    "XaiError",
    "__version__",
    "arun_agent",
    "ask",
    "ask_structured",
    "ask_sync",
    "configure_logging",
    "run_agent",
    "run_query",
    "run_query_sync",
    "tool",
]


if not _typing.TYPE_CHECKING:  # hidden from type checkers, so `xai.Typo` is still an error

    def __getattr__(name: str) -> object:
        """Load a front-door name from its module on first use, then keep it here."""
        module = _MODULE_OF.get(name)
        if module is None:
            raise AttributeError(f"module 'xai' has no attribute {name!r}")
        value = getattr(_importlib.import_module(module), name)
        globals()[name] = value  # the next lookup is an ordinary one
        return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
