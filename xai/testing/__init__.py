"""Test doubles that ship with xai: a scripted provider, a real OpenAI-wire server, a network guard."""

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
from xai.testing._server import OpenAIWireServer, RecordedRequest
from xai.testing._validate import Violation, ViolationRule, check_chat_request
from xai.testing._violations import InvalidRequest

__all__ = [
    "Delay",
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
    "Violation",
    "ViolationRule",
    "block_network",
    "check_chat_request",
    "hash_embedding",
]
