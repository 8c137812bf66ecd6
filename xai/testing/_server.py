"""A real HTTP server that speaks the OpenAI wire protocol, for tests, demos and benchmarks.

Starlette app served by uvicorn on 127.0.0.1 (ephemeral port by default) in a
thread of its own, so it serves the same whether the test runs on asyncio or
trio. Replies come from a script (``Scripted``); faults are injected per reply;
every request is recorded. Every chat request is checked against the Chat
Completions rules (``_validate``): one that breaks any gets a 400, like a real
endpoint, and is reported so the test that sent it fails (``_violations``).
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterable, Mapping
from typing import Any, Literal, TypeAlias, assert_never

import anyio
import msgspec
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from xai.config import LLMConfig
from xai.messages import new_id
from xai.providers import OpenAIProvider, RetryPolicy
from xai.testing._render import estimate_usage, finish_reason, hash_embedding, pieces
from xai.testing._responses import ResponseStream, chat_view
from xai.testing._script import (
    Delay,
    DropConnection,
    HttpError,
    MalformedChunk,
    Reply,
    Rule,
    Script,
    Scripted,
    ScriptExhausted,
)
from xai.testing._threaded import ThreadedServer
from xai.testing._validate import Violation
from xai.testing._violations import InvalidRequest, screen

__all__ = ["OpenAIWireServer", "RecordedRequest", "ToolCallStyle"]

ToolCallStyle: TypeAlias = Literal["openai", "llama.cpp", "legacy"]

_encode = msgspec.json.Encoder().encode


class RecordedRequest(msgspec.Struct, frozen=True, kw_only=True):
    """One request as the server received it."""

    path: str
    body: dict[str, Any]
    headers: dict[str, str]
    received_at: float
    violations: tuple[Violation, ...] = ()
    """The Chat Completions rules the request broke (it was answered with a 400)."""


class _InjectedDrop(Exception):
    """Raised inside a streaming body to make uvicorn cut the connection."""


class _QuietInjectedDrops(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        return not isinstance(exc, _InjectedDrop)


async def _cut(payload: bytes) -> AsyncIterator[bytes]:
    """The first half of a payload (a whole JSON answer, or nothing), then a cut connection."""
    yield payload[: len(payload) // 2]
    raise _InjectedDrop


def _error(
    status: int,
    message: str,
    *,
    code: str | None = None,
    kind: str = "server_error",
    param: str | None = None,
) -> JSONResponse:
    return JSONResponse(
        {"error": {"message": message, "type": kind, "param": param, "code": code}},
        status_code=status,
    )


def _null_tool_content(body: dict[str, Any]) -> bool:
    """Whether an assistant message with tool calls has ``content`` null or missing."""
    messages = body.get("messages")
    return isinstance(messages, list) and any(
        isinstance(m, dict)
        and m.get("role") == "assistant"
        and m.get("tool_calls")
        and m.get("content") is None
        for m in messages
    )


class OpenAIWireServer(ThreadedServer):
    """``/v1/chat/completions`` (JSON and SSE), ``/v1/responses`` (the Responses API, JSON and
    SSE: ``xai.testing._responses``), ``/v1/embeddings`` and ``/v1/models``.

    Use as a context manager (sync or async), as the ``openai_server`` pytest
    fixture, or from the command line (``python -m xai.testing serve``).
    ``api_key`` makes the server demand that key (and echo it in its 401, to
    prove clients never log it).

    Every chat request is validated (see ``xai.testing._validate``): one that
    breaks a rule is answered with a 400 ``invalid_request_error`` naming each
    rule, listed in ``violations``, and reported to the pytest plugin, which
    fails the test. ``validate_requests=False`` turns the check off for a server
    that must take anything (a test that sends bad requests on purpose).
    """

    what = "the OpenAI-wire test server"

    def __init__(
        self,
        script: Script | Iterable[Reply] | None = None,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        model: str = "xai-scripted",
        api_key: str | None = None,
        embedding_dim: int = 64,
        send_usage: bool = True,
        validate_requests: bool = True,
        ignore_stream: bool = False,
        refuse_null_tool_content: bool = False,
        tool_call_style: ToolCallStyle = "openai",
        empty_stream_over: int | None = None,
        cut_empty_stream: bool = False,
        runaway: bool = False,
        runaway_interval: float = 0.002,
        tools_only_when_forced: bool = False,
        refuse_formats: tuple[str, ...] = (),
        keep_requests: bool = True,
    ) -> None:
        self.script = Scripted(script)
        self.keep_requests = keep_requests
        """False: ``requests`` stays empty (``violations`` are still kept). A server that
        answers for as long as a process runs (``xai eval``'s offline model, ``xai demo``)
        would otherwise keep the body of every request it was sent: each turn's request
        carries its whole conversation, megabytes per question of an evaluation (issue 29)."""
        self.validate_requests = validate_requests
        """False: take any chat request, however it breaks the Chat Completions rules."""
        self.violations: list[InvalidRequest] = []
        """The chat requests that broke a rule (each answered with a 400)."""
        self.send_usage = send_usage
        """False emulates servers that send no usage: they ignore
        ``stream_options.include_usage``, and leave ``usage`` out of a whole JSON answer."""
        self.ignore_stream = ignore_stream
        """Quirk: answer every chat request with one whole JSON body, as gateways that ignore
        ``"stream": true`` do (``application/json``, not an event stream)."""
        self.refuse_null_tool_content = refuse_null_tool_content
        """Quirk of llama.cpp's server: answer HTTP 500 to a request holding an assistant
        message with tool calls whose ``content`` is ``null`` or missing (``""`` is taken)."""
        self.tool_call_style: ToolCallStyle = tool_call_style
        """How streamed tool calls look: ``"openai"`` (id and name on a call's first piece
        only), ``"llama.cpp"`` (id, type and name on every piece, plus each piece again in
        the legacy ``function_call`` field) or ``"legacy"`` (only ``function_call``, no
        ``tool_calls``; one call per answer, as before OpenAI's ``tools``)."""
        self.empty_stream_over = empty_stream_over
        """Quirk of llama.cpp's server past its context window: answer a streamed request
        whose ``messages`` (as JSON) are longer than this many characters with HTTP 200 and
        an empty body (a request without ``stream`` still gets its answer)."""
        self.cut_empty_stream = cut_empty_stream
        """With ``empty_stream_over``: send the empty answer's headers, then cut the
        connection instead of ending the body, so a client that kept it would reuse a dead one."""
        self.runaway = runaway
        """Quirk of a small model that never stops by itself: every answer streams one
        word per ``runaway_interval`` seconds until the request's ``max_tokens`` (then
        ``finish_reason: "length"``) or, without a cap, until the client goes away (a whole
        JSON answer without a cap never comes)."""
        self.runaway_interval = runaway_interval
        self.tools_only_when_forced = tools_only_when_forced
        """Quirk of small models behind llama.cpp: a scripted tool call is made only when
        ``tool_choice`` forces one (``"required"`` or a named function); otherwise the model
        writes prose about the tool instead."""
        self.refuse_formats = refuse_formats
        """Quirk of llama-cpp-python's server: answer HTTP 500 with its validation error to a
        request whose ``response_format`` type is one of these (it refuses ``json_schema``
        and takes ``json_object``)."""
        super().__init__(host, port)
        self.model = model
        self.api_key = api_key
        # What `reset` restores: every setting a test may change on a shared server.
        self._settings = {name: getattr(self, name) for name in _SETTINGS}
        self.embedding_dim = embedding_dim
        self.requests: list[RecordedRequest] = []
        self._lock = threading.Lock()
        self.app = Starlette(
            routes=[
                Route("/v1/chat/completions", self._chat, methods=["POST"]),
                Route("/v1/responses", self._responses, methods=["POST"]),
                Route("/v1/embeddings", self._embeddings, methods=["POST"]),
                Route("/v1/models", self._models, methods=["GET"]),
                Route("/health", self._health, methods=["GET"]),
            ]
        )

    # -- scripting ---------------------------------------------------------------

    def push(self, *replies: Reply) -> None:
        self.script.push(*replies)

    def add_rule(self, rule: Rule) -> None:
        self.script.add_rule(rule)

    def reset(self) -> None:
        """Forget the script, the recorded requests and violations, and put every setting
        (quirks, ``api_key``, ``validate_requests``) back as the server was built (the
        pytest fixture does this per test, so a quirk never leaks into the next test)."""
        for name, value in self._settings.items():
            setattr(self, name, value)
        self.script.reset()
        with self._lock:
            self.requests.clear()
            self.violations.clear()

    def chat_requests(self) -> list[RecordedRequest]:
        with self._lock:
            return [r for r in self.requests if r.path.endswith("/chat/completions")]

    def responses_requests(self) -> list[RecordedRequest]:
        """The Responses API requests (``/v1/responses``), bodies as sent."""
        with self._lock:
            return [r for r in self.requests if r.path.endswith("/responses")]

    # -- addresses ---------------------------------------------------------------

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}/v1"

    def llm_config(self, **overrides: Any) -> LLMConfig:
        values: dict[str, Any] = {
            "model": self.model,
            "base_url": self.base_url,
            "api_key": self.api_key or "test-key",
            "timeout": 10.0,
            "max_retries": 2,
        }
        values.update(overrides)
        return LLMConfig(**values)

    def provider(self, *, retry: RetryPolicy | None = None, **overrides: Any) -> OpenAIProvider:
        """An ``OpenAIProvider`` (real ``openai`` client) pointed at this server.

        Keyword overrides go to ``llm_config`` (e.g. ``timeout=0.5, max_retries=0``).
        """
        return OpenAIProvider(self.llm_config(**overrides), retry=retry)

    # -- lifecycle ---------------------------------------------------------------

    def start(self) -> OpenAIWireServer:
        logging.getLogger("uvicorn.error").addFilter(_QuietInjectedDrops())
        return super().start()

    # -- endpoints ---------------------------------------------------------------

    async def _record(
        self, request: Request, *, chat: bool = False, responses: bool = False
    ) -> dict[str, Any] | Response:
        raw = await request.body()
        try:
            body = msgspec.json.decode(raw) if raw else {}
        except msgspec.DecodeError:
            return _error(400, "request body is not valid JSON", kind="invalid_request_error")
        if not isinstance(body, dict):
            return _error(400, "request body must be a JSON object", kind="invalid_request_error")
        invalid = None
        if (chat or responses) and self.validate_requests:
            # A Responses request is checked as the conversation it carries (its chat view).
            checked = chat_view(body) if responses else body
            invalid = screen(f"OpenAIWireServer at {self.base_url}", checked)
        with self._lock:
            if self.keep_requests:
                self.requests.append(
                    RecordedRequest(
                        path=request.url.path,
                        body=body,
                        headers=dict(request.headers),
                        received_at=time.time(),
                        violations=invalid.violations if invalid is not None else (),
                    )
                )
            if invalid is not None:
                self.violations.append(invalid)
        if self.api_key is not None:
            sent = request.headers.get("authorization", "")
            if sent != f"Bearer {self.api_key}":
                shown = sent.removeprefix("Bearer ")
                return _error(
                    401,
                    f"Incorrect API key provided: {shown}.",
                    code="invalid_api_key",
                    kind="invalid_request_error",
                )
        if invalid is not None:
            first = invalid.violations[0]
            return _error(
                400,
                invalid.error_message(),
                code="invalid_request",
                kind="invalid_request_error",
                param=f"messages.[{first.index}]" if first.index is not None else None,
            )
        return body

    async def _health(self, request: Request) -> Response:
        return JSONResponse({"status": "ok"})

    async def _models(self, request: Request) -> Response:
        return JSONResponse(
            {"object": "list", "data": [{"id": self.model, "object": "model", "owned_by": "xai"}]}
        )

    async def _embeddings(self, request: Request) -> Response:
        body = await self._record(request)
        if isinstance(body, Response):
            return body
        inputs = body.get("input", [])
        texts = [inputs] if isinstance(inputs, str) else list(inputs)
        if not all(isinstance(t, str) for t in texts):
            return _error(
                400, "input must be a string or a list of strings", kind="invalid_request_error"
            )
        data = [
            {"object": "embedding", "index": i, "embedding": hash_embedding(t, self.embedding_dim)}
            for i, t in enumerate(texts)
        ]
        tokens = sum(len(t) // 4 + 1 for t in texts)
        return JSONResponse(
            {
                "object": "list",
                "data": data,
                "model": body.get("model", self.model),
                "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
            }
        )

    async def _chat(self, request: Request) -> Response:
        body = await self._record(request, chat=True)
        if isinstance(body, Response):
            return body
        if self.refuse_null_tool_content and _null_tool_content(body):
            # What llama-cpp-python's server says when its chat template meets the null.
            return _error(500, 'can only concatenate str (not "NoneType") to str')
        limit = self.empty_stream_over
        streamed = bool(body.get("stream")) and not self.ignore_stream
        if streamed and limit is not None and len(_encode(body.get("messages", []))) > limit:
            if self.cut_empty_stream:
                return StreamingResponse(_cut(b""), media_type="text/event-stream")
            return Response(b"", media_type="text/event-stream")
        kind = (body.get("response_format") or {}).get("type")
        if kind in self.refuse_formats:
            return _error(
                500,
                "1 validation error for CreateChatCompletionRequest\nresponse_format.type\n"
                f"  Input should be 'text' or 'json_object' [input_value={kind!r}]",
            )
        if self.runaway:
            return await self._runaway(request, body)
        try:
            reply = self.script.next_reply(body)
        except ScriptExhausted as exc:
            return _error(500, str(exc), code="script_exhausted")
        if self.tools_only_when_forced and reply.tool_calls and not _forced(body):
            names = ", ".join(call.name for call in reply.tool_calls)
            reply = msgspec.structs.replace(
                reply, tool_calls=(), text=reply.text or f"I would use {names} for that."
            )
        fault = reply.fault
        if isinstance(fault, HttpError):
            headers: dict[str, str] = {}
            if fault.retry_after is not None:
                headers["retry-after-ms"] = str(int(fault.retry_after * 1000))
                headers["retry-after"] = str(math.ceil(fault.retry_after))
            kind = (
                "rate_limit_error"
                if fault.status == 429
                else "server_error"
                if fault.status >= 500
                else "invalid_request_error"
            )
            return JSONResponse(
                {"error": {"message": fault.message, "type": kind, "code": fault.code}},
                status_code=fault.status,
                headers=headers,
            )
        if isinstance(fault, Delay):
            deadline = anyio.current_time() + fault.seconds
            while anyio.current_time() < deadline:  # stop waiting once the client gave up
                await anyio.sleep(min(0.05, deadline - anyio.current_time()))
                if await request.is_disconnected():
                    return Response(status_code=499)
        model = str(body.get("model") or self.model)
        if body.get("stream") and not self.ignore_stream:
            options = body.get("stream_options") or {}
            include_usage = self.send_usage and bool(options.get("include_usage"))
            return StreamingResponse(
                self._sse(body, reply, model, include_usage),
                media_type="text/event-stream",
                headers={"cache-control": "no-cache"},
            )
        completion = self._completion(body, reply, model, include_usage=self.send_usage)
        if isinstance(fault, MalformedChunk):
            return Response(fault.payload, media_type="application/json")
        if isinstance(fault, DropConnection):
            return StreamingResponse(_cut(_encode(completion)), media_type="application/json")
        return JSONResponse(completion)

    async def _responses(self, request: Request) -> Response:
        """The Responses API: the script answers the request's chat view; HTTP faults and
        delays as on ``/v1/chat/completions``, the reply streamed as Responses events."""
        body = await self._record(request, responses=True)
        if isinstance(body, Response):
            return body
        view = chat_view(body)
        try:
            reply = self.script.next_reply(view)
        except ScriptExhausted as exc:
            return _error(500, str(exc), code="script_exhausted")
        fault = reply.fault
        if isinstance(fault, HttpError):
            return _error(fault.status, fault.message, code=fault.code)
        if isinstance(fault, Delay):
            deadline = anyio.current_time() + fault.seconds
            while anyio.current_time() < deadline:  # stop waiting once the client gave up
                await anyio.sleep(min(0.05, deadline - anyio.current_time()))
                if await request.is_disconnected():
                    return Response(status_code=499)
        answer = ResponseStream(body, view, reply, str(body.get("model") or self.model))
        if body.get("stream"):

            async def sse() -> AsyncIterator[bytes]:
                for event in answer.events(usage=self.send_usage):
                    if reply.chunk_delay:
                        await anyio.sleep(reply.chunk_delay)
                    yield event

            return StreamingResponse(
                sse(), media_type="text/event-stream", headers={"cache-control": "no-cache"}
            )
        status = answer.final_status()
        return JSONResponse(answer.response(answer.outputs(), status, usage=self.send_usage))

    async def _runaway(self, request: Request, body: dict[str, Any]) -> Response:
        cap = body.get("max_tokens")
        limit = cap if isinstance(cap, int) and cap > 0 else None
        model = str(body.get("model") or self.model)
        if body.get("stream") and not self.ignore_stream:
            return StreamingResponse(
                self._runaway_sse(model, limit), media_type="text/event-stream"
            )
        if limit is None:  # no whole answer ever comes: wait for the client to give up
            while (await request.receive())["type"] != "http.disconnect":
                pass  # the body was read: the next message is the disconnect
            return Response(status_code=499)
        reply = Reply(text="and then " * limit, finish_reason="length")
        return JSONResponse(self._completion(body, reply, model, include_usage=self.send_usage))

    async def _runaway_sse(self, model: str, limit: int | None) -> AsyncIterator[bytes]:
        _, chunk = _chunks(model)
        yield chunk({"role": "assistant", "content": ""})
        sent = 0
        while limit is None or sent < limit:
            await anyio.sleep(self.runaway_interval)
            yield chunk({"content": "and then "})
            sent += 1
        yield chunk({}, "length")
        yield b"data: [DONE]\n\n"

    def _completion(
        self, body: dict[str, Any], reply: Reply, model: str, *, include_usage: bool
    ) -> dict[str, Any]:
        message: dict[str, Any] = {"role": "assistant", "content": reply.text or None}
        if reply.thinking:
            message[reply.reasoning_field] = reply.thinking
        if reply.tool_calls:
            message["tool_calls"] = [
                {
                    "id": call.id or f"call_{new_id()}",
                    "type": "function",
                    "function": {"name": call.name, "arguments": call.arguments_text},
                }
                for call in reply.tool_calls
            ]
        completion: dict[str, Any] = {
            "id": f"chatcmpl-{new_id()}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": model,
            "choices": [{"index": 0, "message": message, "finish_reason": finish_reason(reply)}],
        }
        if include_usage:
            completion["usage"] = estimate_usage(body, reply)
        return completion

    def _tool_delta(self, piece: tuple[Any, ...], reply: Reply) -> dict[str, Any]:
        """The delta for one piece of a tool call, in ``tool_call_style``."""
        _, index, call_id, name, args = piece
        style = self.tool_call_style
        if style == "openai":
            entry: dict[str, Any] = {"index": index, "function": {"arguments": args}}
            if call_id is not None:
                entry["id"] = call_id
                entry["type"] = "function"
                entry["function"]["name"] = name
            return {"tool_calls": [entry]}
        # Every piece names its call again: the scripted id and name of call ``index``.
        call = reply.tool_calls[index]
        call_id = call.id or f"call_{index}_{call.name}"
        legacy = {"name": call.name, "arguments": args}
        if style == "legacy":
            return {"function_call": legacy}
        if style == "llama.cpp":
            return {
                "function_call": legacy,
                "tool_calls": [
                    {"index": index, "id": call_id, "type": "function", "function": legacy}
                ],
            }
        assert_never(style)

    async def _sse(
        self, body: dict[str, Any], reply: Reply, model: str, include_usage: bool
    ) -> AsyncIterator[bytes]:
        head, chunk = _chunks(model)
        fault = reply.fault
        yield chunk({"role": "assistant", "content": ""})
        # Faults count content pieces (text, thinking, tool-call parts), not the role chunk.
        for sent, piece in enumerate(pieces(reply)):
            if isinstance(fault, DropConnection) and sent >= fault.after_chunks:
                raise _InjectedDrop
            if isinstance(fault, MalformedChunk) and sent >= fault.after_chunks:
                yield b"data: " + fault.payload.encode() + b"\n\n"
                fault = None
            if reply.chunk_delay:
                await anyio.sleep(reply.chunk_delay)
            kind = piece[0]
            if kind == "text":
                yield chunk({"content": piece[1]})
            elif kind == "thinking":
                yield chunk({reply.reasoning_field: piece[1]})
            else:
                yield chunk(self._tool_delta(piece, reply))
        if isinstance(fault, DropConnection):
            raise _InjectedDrop
        if isinstance(fault, MalformedChunk):  # fewer pieces than after_chunks: send it last
            yield b"data: " + fault.payload.encode() + b"\n\n"
        yield chunk({}, finish_reason(reply))
        if include_usage:
            usage = {**head, "choices": [], "usage": estimate_usage(body, reply)}
            yield b"data: " + _encode(usage) + b"\n\n"
        yield b"data: [DONE]\n\n"


_SETTINGS = (
    "api_key",
    "validate_requests",
    "send_usage",
    "ignore_stream",
    "refuse_null_tool_content",
    "tool_call_style",
    "empty_stream_over",
    "cut_empty_stream",
    "runaway",
    "runaway_interval",
    "tools_only_when_forced",
    "refuse_formats",
    "keep_requests",
)


def _chunks(model: str) -> tuple[dict[str, Any], Callable[..., bytes]]:
    """One answer's chunk header, and the function that frames a delta as an SSE event."""
    head = {
        "id": f"chatcmpl-{new_id()}",
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": model,
    }

    def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
        data = {**head, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
        return b"data: " + _encode(data) + b"\n\n"

    return head, chunk


def _forced(body: Mapping[str, Any]) -> bool:
    """Whether the request's ``tool_choice`` makes the model call a tool."""
    choice = body.get("tool_choice")
    return choice == "required" or isinstance(choice, dict)
