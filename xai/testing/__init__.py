"""Test doubles that ship with xai: a scripted provider, a real OpenAI-wire server, a Dify app
double, a network guard, and ``demo_model``, the scripted model of ``xai demo`` (loaded on first use: it knows
the Session's and the memory's prompts, which plain doubles do not need)."""

from typing import TYPE_CHECKING, Any

from xai.testing._dify import DifyServer
from xai.testing._guard import NetworkBlockedError, block_network
from xai.testing._render import hash_embedding
from xai.testing._script import (
    Delay,
    DropConnection,
    Fault,
    HttpError,
    MalformedChunk,
    Reply,
    Rule,
    Script,
    ScriptedCall,
    ScriptExhausted,
)
from xai.testing._scripted_provider import ScriptedProvider
from xai.testing._server import OpenAIWireServer, RecordedRequest, ToolCallStyle
from xai.testing._validate import Violation, ViolationRule, check_chat_request
from xai.testing._violations import InvalidRequest

if TYPE_CHECKING:
    from xai.testing._demo_model import demo_model

__all__ = [
    "Delay",
    "DifyServer",
    "DropConnection",
    "Fault",
    "HttpError",
    "InvalidRequest",
    "MalformedChunk",
    "NetworkBlockedError",
    "OpenAIWireServer",
    "RecordedRequest",
    "Reply",
    "Rule",
    "Script",
    "ScriptExhausted",
    "ScriptedCall",
    "ScriptedProvider",
    "ToolCallStyle",
    "Violation",
    "ViolationRule",
    "block_network",
    "check_chat_request",
    "demo_model",
    "hash_embedding",
]


def __getattr__(name: str) -> Any:
    if name == "demo_model":
        from xai.testing._demo_model import demo_model

        return demo_model
    raise AttributeError(f"module 'xai.testing' has no attribute {name!r}")
