"""Model providers: the streaming protocol and the OpenAI-compatible implementation."""

from xai.providers._estimate import estimate_tokens, estimate_usage
from xai.providers._openai import (
    EMPTY_REPLY_TEXT,
    INTERRUPTED_REPLY_TEXT,
    OpenAIProvider,
    error_for_status,
    map_error,
    to_wire_messages,
    to_wire_tools,
)
from xai.providers._protocol import (
    FinishReason,
    Provider,
    ProviderEvent,
    ProviderRequest,
    StreamFinished,
    TextChunk,
    ThinkingChunk,
    ToolCallChunk,
    ToolCallReady,
    UsageReport,
)
from xai.providers._retry import RetryPolicy, parse_retry_after
from xai.providers._wire import decode_body, decode_completion, decode_stream, map_finish_reason

__all__ = [
    "EMPTY_REPLY_TEXT",
    "INTERRUPTED_REPLY_TEXT",
    "FinishReason",
    "OpenAIProvider",
    "Provider",
    "ProviderEvent",
    "ProviderRequest",
    "RetryPolicy",
    "StreamFinished",
    "TextChunk",
    "ThinkingChunk",
    "ToolCallChunk",
    "ToolCallReady",
    "UsageReport",
    "decode_body",
    "decode_completion",
    "decode_stream",
    "error_for_status",
    "estimate_tokens",
    "estimate_usage",
    "map_error",
    "map_finish_reason",
    "parse_retry_after",
    "to_wire_messages",
    "to_wire_tools",
]
