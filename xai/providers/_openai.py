"""The real provider: OpenAI Chat Completions (or the Responses API, ``LLMConfig.api``)
through the official ``openai`` SDK.

The SDK does what it is good at (auth, base URL, HTTP, typed HTTP errors);
xai decodes the stream itself (``_wire``) and owns the retry loop, so a retry
never happens after any part of an answer has been handed on.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncGenerator, AsyncIterator, Mapping
from contextlib import aclosing
from typing import TYPE_CHECKING, Any, assert_never

import anyio
import msgspec

from xai._redact import redact
from xai.config import LLMConfig
from xai.exceptions import (
    AuthenticationError,
    BadRequestError,
    ContextTooLongError,
    ProviderConnectionError,
    ProviderError,
    ProviderTimeoutError,
    RateLimitError,
    ServerError,
    StreamError,
)
from xai.logs import get_logger
from xai.messages import (
    AssistantMessage,
    Message,
    SystemMessage,
    ToolMessage,
    ToolSpec,
    UserMessage,
)
from xai.providers._estimate import estimate_prompt_tokens, fill_missing_usage
from xai.providers._limit import RequestLimit
from xai.providers._protocol import ProviderEvent, ProviderRequest
from xai.providers._responses import decode_responses, responses_params
from xai.providers._retry import RetryPolicy, parse_retry_after
from xai.providers._wire import EmptyAnswerError, decode_body

if TYPE_CHECKING:  # the SDK costs about a second of CPU to import: it loads on first use
    import httpx2
    import openai

__all__ = [
    "EMPTY_REPLY_TEXT",
    "INTERRUPTED_REPLY_TEXT",
    "OpenAIProvider",
    "error_for_status",
    "map_error",
    "to_wire_messages",
    "to_wire_tools",
]

_log = get_logger(__name__)

_encode = msgspec.json.Encoder().encode
"""The request body, encoded here: the SDK sends bytes as they are (its own encoder is the
standard library's ``json``, several times slower on a long history)."""

_CONTEXT_MARKERS = (
    "context_length_exceeded",
    "maximum context length",
    "context length",
    "context window",
    "too many tokens",
    "prompt is too long",
    "input is too long",
)


_CHAT = "/chat/completions"
_RESPONSES = "/responses"

EMPTY_REPLY_TEXT = "[empty reply]"
"""Sent for a stored assistant message with no text and no tool calls."""
INTERRUPTED_REPLY_TEXT = "[interrupted before the reply began]"
"""Sent for an interrupted assistant message that kept no text (only thinking, say)."""


def to_wire_messages(messages: tuple[Message, ...] | list[Message]) -> list[dict[str, Any]]:
    """Messages in the Chat Completions shape. Thinking is not sent back (providers reject it).

    Every request passes through here, so this is where a history that is fine
    to store but not to send is made sendable. An assistant message with no
    text (or only whitespace) and no tool calls, which a model may return, is
    refused by strict endpoints (Mistral, Anthropic-compatible ones), so it goes
    out as ``EMPTY_REPLY_TEXT`` (``INTERRUPTED_REPLY_TEXT`` if it was cut off):
    the model learns that its turn said nothing, and user and assistant
    messages still alternate. Blank text beside tool calls goes out as ``""``:
    OpenAI takes ``null`` or ``""`` there, but llama.cpp's server answers 500
    to ``null`` (or no content), which would fail every tool loop's second round.
    The partial text of an interrupted message goes out as it is, as a chat
    window shows a stopped answer; the next input says what happened.
    """
    wire: list[dict[str, Any]] = []
    for message in messages:
        if isinstance(message, UserMessage):
            wire.append({"role": "user", "content": message.content})
        elif isinstance(message, AssistantMessage):
            blank = not message.content.strip()
            entry: dict[str, Any] = {
                "role": "assistant",
                "content": "" if blank else message.content,
            }
            if message.tool_calls:
                entry["tool_calls"] = [
                    {
                        "id": call.id,
                        "type": "function",
                        "function": {"name": call.name, "arguments": call.arguments},
                    }
                    for call in message.tool_calls
                ]
            elif blank:
                entry["content"] = (
                    INTERRUPTED_REPLY_TEXT if message.interrupted else EMPTY_REPLY_TEXT
                )
            wire.append(entry)
        elif isinstance(message, ToolMessage):
            wire.append(
                {"role": "tool", "tool_call_id": message.tool_call_id, "content": message.content}
            )
        elif isinstance(message, SystemMessage):
            wire.append({"role": "system", "content": message.content})
        else:
            assert_never(message)
    return wire


def to_wire_tools(tools: tuple[ToolSpec, ...]) -> list[dict[str, Any]]:
    """Tool specs in the Chat Completions ``tools`` shape."""
    return [
        {
            "type": "function",
            "function": {
                "name": spec.name,
                "description": spec.description,
                "parameters": spec.parameters,
            },
        }
        for spec in tools
    ]


def _error_message(exc: openai.APIStatusError) -> str:
    body = exc.body
    if isinstance(body, Mapping):
        inner = body.get("error", body)
        if isinstance(inner, Mapping) and isinstance(inner.get("message"), str):
            return str(inner["message"])
    return str(exc.message)


def _error_code(exc: openai.APIStatusError) -> str:
    body = exc.body
    if isinstance(body, Mapping):
        inner = body.get("error", body)
        if isinstance(inner, Mapping):
            return str(inner.get("code") or inner.get("type") or "")
    return ""


_FORMAT_MARKERS = ("response_format", "json_schema", "json_object")


def error_for_status(
    status: int, message: str, *, code: str = "", retry_after: float | None = None
) -> ProviderError:
    """The typed error for an HTTP error status and the server's message and code."""
    text = redact(f"HTTP {status} from the model endpoint: {message}")
    if status == 429:
        return RateLimitError(text, retry_after=retry_after)
    if status in (401, 403):
        return AuthenticationError(text, status_code=status)
    haystack = f"{code} {message}".lower()
    if status >= 500:
        if any(m in haystack for m in _FORMAT_MARKERS):
            # A server that validates the request late (llama.cpp) refuses a response
            # format it does not support with a 500 that names it: a bad request, and
            # retrying it as a server fault only sends the same refusal again.
            return BadRequestError(text, status_code=status)
        return ServerError(text, status_code=status)
    if status in (400, 413, 422) and any(m in haystack for m in _CONTEXT_MARKERS):
        return ContextTooLongError(text, status_code=status)
    return BadRequestError(text, status_code=status)


def _import_legacy_httpx() -> None:
    """Import ``httpx`` (chromadb's HTTP client) here, on the caller's thread, if installed.

    On every request the SDK looks ``httpx`` up in ``sys.modules`` to recognise its types.
    When a memory opens its chromadb store in a worker thread, that thread imports ``httpx``,
    and a request meanwhile found the half-imported module: ``partially initialized module
    'httpx' has no attribute 'Timeout'`` failed the first extractions of ``xai eval``. Imported
    here it is whole before any worker starts (or this waits for the worker's import).
    """
    with contextlib.suppress(ImportError):
        import httpx  # noqa: F401


def to_wire_tool_choice(choice: str) -> str | dict[str, Any]:
    """``"required"`` and ``"none"`` as they are; a tool's name as the named-function form."""
    if choice in ("required", "none"):
        return choice
    return {"type": "function", "function": {"name": choice}}


def map_error(exc: Exception, *, timeout: float | None = None) -> ProviderError:
    """Translate an SDK or transport exception into xai's typed provider errors."""
    import httpx2
    import openai

    if isinstance(exc, openai.APITimeoutError):
        return ProviderTimeoutError(
            f"the model endpoint did not answer within {timeout}s", timeout=timeout
        )
    if isinstance(exc, openai.APIConnectionError):
        cause = exc.__cause__
        detail = f": {type(cause).__name__}: {cause}" if cause is not None else ""
        return ProviderConnectionError(redact(f"could not reach the model endpoint{detail}"))
    if isinstance(exc, openai.APIStatusError):
        return error_for_status(
            exc.status_code,
            _error_message(exc),
            code=_error_code(exc),
            retry_after=parse_retry_after(exc.response.headers),
        )
    if isinstance(exc, httpx2.TimeoutException):
        return ProviderTimeoutError(
            f"the model endpoint stopped sending within {timeout}s", timeout=timeout
        )
    if isinstance(exc, httpx2.HTTPError):
        return StreamError(redact(f"the response stream broke: {type(exc).__name__}: {exc}"))
    return ProviderError(redact(f"unexpected provider failure: {type(exc).__name__}: {exc}"))


def _inferred_overflow(request: ProviderRequest) -> ContextTooLongError:
    """An empty HTTP 200 answer, read as the context overflow it most likely is.

    llama.cpp's server answers a streamed request past its context window with
    an empty 200 body (the same request unstreamed gets a clean 400
    ``context_length_exceeded``). Reported as ``ContextTooLongError`` with
    ``inferred=True``, a Session compacts its history and retries once, as it
    does for a 400; a server that sends empty bodies for another reason costs
    one compaction and then fails the turn with this error.
    """
    tokens = estimate_prompt_tokens(request)
    return ContextTooLongError(
        "the model endpoint answered HTTP 200 with an empty body, which is how some servers "
        f"(llama.cpp) refuse a request past the context window (about {tokens} tokens sent): "
        "treated as a context overflow",
        status_code=200,
        inferred=True,
    )


class OpenAIProvider:
    """Streams Chat Completions from any OpenAI-compatible endpoint.

    Build it from an ``LLMConfig`` (``OpenAIProvider.from_env()`` reads
    ``LLM_*``) or hand it a ready ``openai.AsyncOpenAI`` client, which stays
    yours to close (a client the provider builds is closed by ``aclose``).
    The config's ``extra_headers`` go with every request either way.
    Retryable failures (429, 5xx, timeouts, refused connections) are retried
    with backoff that honours ``Retry-After``, but only before the first
    event of an answer has been yielded.

    Streamed (SSE) and whole (JSON) answers give the same events: the
    response's content type decides how it is read, so a gateway that ignores
    ``"stream": true`` works, and ``LLMConfig(stream=False)`` asks for whole
    answers. An answer without usage gets an estimated ``UsageReport``
    (``Usage.estimated``; see ``xai.providers._estimate``).
    """

    def __init__(
        self,
        config: LLMConfig | None = None,
        *,
        client: openai.AsyncOpenAI | None = None,
        retry: RetryPolicy | None = None,
        include_usage: bool = True,
        extra_body: Mapping[str, Any] | None = None,
    ) -> None:
        import openai

        _import_legacy_httpx()
        config = (config if config is not None else LLMConfig.from_env()).validated()
        self._config = config
        assert config.model is not None  # validated() guarantees it
        self._model: str = config.model
        self._retry = retry if retry is not None else RetryPolicy(max_retries=config.max_retries)
        self._include_usage = include_usage
        self._extra_body = dict(extra_body) if extra_body else None
        self._owns_client = client is None
        self._client = client or openai.AsyncOpenAI(
            api_key=config.api_key or "not-needed",
            base_url=config.base_url,
            timeout=config.timeout,
            max_retries=0,  # our own loop retries, and only before anything was streamed
        )

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None, **overrides: Any) -> OpenAIProvider:
        return cls(LLMConfig.from_env(env, **overrides))

    @property
    def model(self) -> str:
        return self._model

    @property
    def config(self) -> LLMConfig:
        return self._config

    @property
    def client(self) -> openai.AsyncOpenAI:
        """The SDK client requests go through (the one passed in, or the provider's own)."""
        return self._client

    @property
    def base_url(self) -> str:
        """The endpoint requests go to (``server.address`` in traces)."""
        return str(self._client.base_url)

    @property
    def streams(self) -> bool:
        """Whether requests ask for a streamed answer (``LLMConfig.stream``;
        ``gen_ai.request.stream`` in traces)."""
        return self._config.stream

    async def aclose(self) -> None:
        if self._owns_client:
            await self._client.close()

    async def __aenter__(self) -> OpenAIProvider:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    def _params(self, request: ProviderRequest) -> dict[str, Any]:
        streamed = self._config.stream
        params: dict[str, Any] = {
            "model": request.model or self._model,
            "messages": to_wire_messages(request.messages),
            "stream": streamed,
        }
        if self._include_usage and streamed:
            # Only valid on a streamed request: a whole answer always carries its usage.
            params["stream_options"] = {"include_usage": True}
        if request.tools:
            params["tools"] = to_wire_tools(request.tools)
        if request.tool_choice is not None and request.tools:
            params["tool_choice"] = to_wire_tool_choice(request.tool_choice)
        if request.max_tokens is not None:
            params["max_tokens"] = request.max_tokens
        if request.temperature is not None:
            params["temperature"] = request.temperature
        if request.response_format is not None:
            params["response_format"] = request.response_format
        if self._extra_body:
            params.update(self._extra_body)
        return params

    def _read_timeout(self) -> float | None:
        """The most one read of a response's body can wait (the client's read timeout)."""
        import httpx2

        timeout = self._client.timeout
        if isinstance(timeout, httpx2.Timeout):
            return timeout.read
        return float(timeout) if isinstance(timeout, int | float) else None

    async def _open(
        self,
        path: str,
        params: dict[str, Any],
        options: openai.RequestOptions,
        request: ProviderRequest,
    ) -> tuple[httpx2.Response, AsyncGenerator[bytes, None], AsyncGenerator[ProviderEvent, None]]:
        """Send one request; its open response, the body's bytes, and the decoder over them.

        The SDK's generic `post` with a body we built ourselves: the SDK keeps auth, base
        URL and typed HTTP errors, and we skip its per-request walk over every message
        (`maybe_transform`), which grows with the history. `stream=True` here means "hand
        us the open response": SSE or JSON, the body is read by `decode_body`, which goes
        by the response's content type. The request limit is set here, once: one scope
        bounds the connection and the headers, and the decoder bounds the body's reads
        (see `xai.providers._limit`). The decoder is the only generator between the
        socket's bytes and `stream`'s caller: each layer costs CPU on every event."""
        import httpx2

        limit_s = self._config.request_limit
        limit = None if limit_s is None else RequestLimit(limit_s, self._read_timeout())
        post = self._client.post(
            path, cast_to=httpx2.Response, content=_encode(params), options=options, stream=True
        )
        response = await (post if limit is None else limit.bounded(post))
        body = response.aiter_bytes()
        if path == _RESPONSES:
            pieces = body if limit is None else limit.guard(body)
            return response, body, fill_missing_usage(decode_responses(pieces), request)
        content_type = response.headers.get("content-type")
        return response, body, decode_body(body, content_type, request=request, limit=limit)

    async def stream(self, request: ProviderRequest) -> AsyncIterator[ProviderEvent]:
        import httpx2
        import openai

        responses = self._config.api == "responses"
        if responses:  # always streamed: LLMConfig.stream applies to Chat Completions
            params = {**responses_params(request, self._model), **(self._extra_body or {})}
        else:
            params = self._params(request)
        # Per request rather than as the client's defaults: an injected client gets them too.
        options: openai.RequestOptions = (
            {"headers": self._config.extra_headers} if self._config.extra_headers else {}
        )
        path = _RESPONSES if responses else _CHAT
        attempt = 0
        while True:
            started = False
            error: ProviderError | None = None
            try:
                response, body, events = await self._open(path, params, options, request)
                try:
                    # Closed explicitly: left to the garbage collector, trio warns and the
                    # connection is released late.
                    async with aclosing(body), aclosing(events):
                        async for event in events:
                            started = True
                            yield event
                finally:
                    if not response.is_closed:  # a body read to its end closed it already
                        with anyio.CancelScope(shield=True):
                            await response.aclose()
                return
            except EmptyAnswerError:
                error = _inferred_overflow(request)
            except ProviderError:
                raise
            except (openai.APIError, httpx2.HTTPError) as exc:
                error = map_error(exc, timeout=self._config.timeout)
            # Raised here, after the handler: raised inside it, even `from None`, our error
            # would keep the SDK's as `__context__`, and a 401's message and body echo the key.
            assert error is not None
            if started or not error.retryable:
                raise error
            attempt += 1
            hint = error.retry_after if isinstance(error, RateLimitError) else None
            delay = self._retry.delay(attempt, hint)
            if delay is None:
                raise error
            _log.warning(
                "provider.retry",
                attempt=attempt,
                delay=round(delay, 3),
                error=type(error).__name__,
                status=error.status_code,
            )
            await anyio.sleep(delay)
