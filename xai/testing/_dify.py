"""A wire-level double of a Dify app's Service API, for the ``dify`` orchestrator's tests.

Dify is a server product that cannot run in a test, so this double speaks its published
Service API (the app's "API Access" page: ``POST /v1/chat-messages``, ``GET /v1/parameters``,
``GET /v1/meta``) on 127.0.0.1, as an **agent-chat** app (or a plain ``chat`` app):

- the app's model is a script, the same ``Reply`` objects the OpenAI-wire server answers
  with, so one script drives every orchestrator;
- the app's tools are xai tools given to the double (in Dify they are configured in the app);
  a model round that calls tools streams one ``agent_thought`` with ``tool`` (names joined
  by ``;``) and ``tool_input`` (``{name: arguments}``), runs them, then the same thought
  again with its ``observation`` (``{name: result text}``);
- the answer streams as ``agent_message`` events (``message`` in a ``chat`` app), then
  ``message_end`` with ``metadata.usage`` and ``metadata.retriever_resources`` (the
  resources this double was given, standing for the app's own knowledge);
- conversations are kept: ``conversation_id`` continues one (unknown: 404);
- a scripted ``HttpError`` fault streams an ``error`` event (``status``, ``code``,
  ``message``), which ends the stream, as Dify reports a model provider's failure; a
  ``Delay`` waits before the stream starts;
- the documented 4xx answers: 401 for a wrong key, 400 ``invalid_param`` for a missing
  ``query``/``user`` or a bad ``response_mode``/``inputs`` (``blocking`` is refused by an
  agent app, as Dify does), 404 for an unknown conversation; each as
  ``{"code", "message", "status"}``.

The app's prompt variable ``instructions`` (``inputs.instructions``), when sent, becomes the
scripted model's system message.
"""

from __future__ import annotations

import threading
import time
from collections.abc import AsyncIterator, Iterable, Mapping
from typing import Any, Literal

import anyio
import msgspec
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from xai.messages import ToolCall, new_id
from xai.testing._render import estimate_usage
from xai.testing._script import Delay, HttpError, Reply, Rule, Script, Scripted, ScriptExhausted
from xai.testing._server import RecordedRequest
from xai.testing._threaded import ThreadedServer
from xai.tools import Tool, ToolSet

__all__ = ["DifyServer"]

_encode = msgspec.json.Encoder().encode


def _error(status: int, code: str, message: str) -> JSONResponse:
    return JSONResponse({"code": code, "message": message, "status": status}, status_code=status)


def _event(data: dict[str, Any]) -> bytes:
    return b"data: " + _encode(data) + b"\n\n"


def _code(status: int) -> str:
    if status == 429:
        return "provider_quota_exceeded"
    if status >= 500:
        return "internal_server_error"
    return "completion_request_error"


class _Conversation:
    """One conversation's history, as the scripted model's messages."""

    def __init__(self) -> None:
        self.id = new_id()
        self.messages: list[dict[str, Any]] = []


class DifyServer(ThreadedServer):
    """A Dify agent-chat app on ``http://127.0.0.1:PORT/v1`` (``base_url``), key ``api_key``.

    Use as a context manager (sync or async). ``tools`` are the app's tools;
    ``retriever_resources`` the citations its own knowledge adds to every answer;
    ``max_iterations`` the agent's round limit (Dify's ``agent_mode.max_iteration``).
    """

    what = "the Dify double"

    def __init__(
        self,
        script: Script | Iterable[Reply] | None = None,
        *,
        tools: Iterable[Tool] = (),
        api_key: str = "app-xai-test-key",
        mode: Literal["agent-chat", "chat"] = "agent-chat",
        retriever_resources: Iterable[Mapping[str, Any]] = (),
        max_iterations: int = 5,
        host: str = "127.0.0.1",
        port: int = 0,
    ) -> None:
        self.script = Scripted(script)
        self.tools = ToolSet(tools)
        self.api_key = api_key
        self.mode = mode
        self.retriever_resources = [dict(r) for r in retriever_resources]
        self.max_iterations = max_iterations
        super().__init__(host, port)
        # What `reset` restores: the settings a test may change on a shared double.
        self._settings = {name: getattr(self, name) for name in _SETTINGS}
        self.requests: list[RecordedRequest] = []
        self.conversations: dict[str, _Conversation] = {}
        self._lock = threading.Lock()
        self.app = Starlette(
            routes=[
                Route("/v1/chat-messages", self._chat, methods=["POST"]),
                Route("/v1/parameters", self._parameters, methods=["GET"]),
                Route("/v1/meta", self._meta, methods=["GET"]),
            ]
        )

    # -- scripting ---------------------------------------------------------------

    def push(self, *replies: Reply) -> None:
        self.script.push(*replies)

    def add_rule(self, rule: Rule) -> None:
        self.script.add_rule(rule)

    def reset(self) -> None:
        """Forget the script, the recorded requests and the conversations, and put the
        settings (``tools``, ``api_key``, ``mode``, ``retriever_resources``,
        ``max_iterations``) back as the double was built."""
        for name, value in self._settings.items():
            setattr(self, name, value)
        self.script.reset()
        with self._lock:
            self.requests.clear()
            self.conversations.clear()

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}/v1"

    def env(self) -> dict[str, str]:
        """``DIFY_BASE_URL`` and ``DIFY_API_KEY`` for this app."""
        return {"DIFY_BASE_URL": self.base_url, "DIFY_API_KEY": self.api_key}

    def chat_requests(self) -> list[RecordedRequest]:
        with self._lock:
            return [r for r in self.requests if r.path.endswith("/chat-messages")]

    # -- lifecycle ---------------------------------------------------------------

    # -- endpoints ---------------------------------------------------------------

    def _authorised(self, request: Request) -> bool:
        return request.headers.get("authorization", "") == f"Bearer {self.api_key}"

    async def _parameters(self, request: Request) -> Response:
        if not self._authorised(request):
            return _error(401, "unauthorized", "Access token is invalid")
        form = [
            {"paragraph": {"label": "instructions", "variable": "instructions", "required": False}}
        ]
        return JSONResponse({"opening_statement": "", "user_input_form": form})

    async def _meta(self, request: Request) -> Response:
        if not self._authorised(request):
            return _error(401, "unauthorized", "Access token is invalid")
        return JSONResponse({"tool_icons": {spec.name: "" for spec in self.tools.specs}})

    async def _chat(self, request: Request) -> Response:
        raw = await request.body()
        try:
            body = msgspec.json.decode(raw) if raw else None
        except msgspec.DecodeError:
            body = None
        with self._lock:
            self.requests.append(
                RecordedRequest(
                    path=request.url.path,
                    body=body if isinstance(body, dict) else {},
                    headers=dict(request.headers),
                    received_at=time.time(),
                )
            )
        if not self._authorised(request):
            return _error(401, "unauthorized", "Access token is invalid")
        if not isinstance(body, dict):
            return _error(400, "invalid_param", "The request body must be a JSON object.")
        query, user = body.get("query"), body.get("user")
        if not isinstance(query, str) or not query:
            return _error(400, "invalid_param", "query is required")
        if not isinstance(user, str) or not user:
            return _error(400, "invalid_param", "user is required")
        inputs = body.get("inputs", {})
        if not isinstance(inputs, dict):
            return _error(400, "invalid_param", "inputs must be an object")
        mode = body.get("response_mode")
        if mode not in ("streaming", "blocking"):
            return _error(400, "invalid_param", "response_mode must be streaming or blocking")
        if mode == "blocking" and self.mode == "agent-chat":
            return _error(400, "invalid_param", "Agent Chat App does not support blocking mode")
        conversation_id = body.get("conversation_id") or ""
        with self._lock:
            if conversation_id:
                conversation = self.conversations.get(conversation_id)
                if conversation is None:
                    return _error(404, "not_found", "Conversation Not Exists.")
            else:
                conversation = _Conversation()
                self.conversations[conversation.id] = conversation
        instructions = inputs.get("instructions")
        if not conversation.messages and isinstance(instructions, str) and instructions:
            conversation.messages.append({"role": "system", "content": instructions})
        conversation.messages.append({"role": "user", "content": query})
        try:
            first = self.script.next_reply({"messages": conversation.messages})
        except ScriptExhausted as exc:
            return _error(500, "internal_server_error", str(exc))
        if isinstance(first.fault, Delay):
            deadline = anyio.current_time() + first.fault.seconds
            while anyio.current_time() < deadline:  # stop waiting once the client gave up
                await anyio.sleep(min(0.05, deadline - anyio.current_time()))
                if await request.is_disconnected():
                    return Response(status_code=499)
        return StreamingResponse(self._stream(conversation, first), media_type="text/event-stream")

    async def _stream(self, conversation: _Conversation, reply: Reply) -> AsyncIterator[bytes]:
        task_id, message_id = new_id(), new_id()
        head = {
            "task_id": task_id,
            "message_id": message_id,
            "conversation_id": conversation.id,
            "created_at": int(time.time()),
        }
        started = time.perf_counter()
        prompt_tokens = completion_tokens = 0
        for iteration in range(self.max_iterations + 1):
            if iteration:
                try:
                    reply = self.script.next_reply({"messages": conversation.messages})
                except ScriptExhausted as exc:
                    yield _event(
                        {
                            **head,
                            "event": "error",
                            "status": 500,
                            "code": "internal_server_error",
                            "message": str(exc),
                        }
                    )
                    return
            if isinstance(reply.fault, HttpError):
                fault = reply.fault
                yield _event(
                    {
                        **head,
                        "event": "error",
                        "status": fault.status,
                        "code": fault.code or _code(fault.status),
                        "message": fault.message,
                    }
                )
                return
            used = estimate_usage({"messages": conversation.messages}, reply)
            prompt_tokens += used["prompt_tokens"]
            completion_tokens += used["completion_tokens"]
            if not reply.tool_calls or iteration == self.max_iterations:
                break
            calls = [
                ToolCall(c.id or f"call_{new_id()}", c.name, c.arguments_text)
                for c in reply.tool_calls
            ]
            thought = {
                **head,
                "event": "agent_thought",
                "id": new_id(),
                "position": iteration + 1,
                "thought": reply.text,
                "tool": ";".join(c.name for c in calls),
                "tool_input": _encode({c.name: _decoded(c.arguments) for c in calls}).decode(),
                "observation": "",
                "message_files": [],
            }
            yield _event(thought)
            results = [await self.tools.call(c) for c in calls]
            observation = {r.tool_name: r.content for r in results}
            yield _event({**thought, "observation": _encode(observation).decode()})
            conversation.messages.append(
                {
                    "role": "assistant",
                    "content": reply.text,
                    "tool_calls": [
                        {
                            "id": c.id,
                            "type": "function",
                            "function": {"name": c.name, "arguments": c.arguments},
                        }
                        for c in calls
                    ],
                }
            )
            conversation.messages.extend(
                {"role": "tool", "tool_call_id": r.call_id, "content": r.content} for r in results
            )
        kind = "agent_message" if self.mode == "agent-chat" else "message"
        text = reply.text
        for start in range(0, len(text), max(1, reply.chunk_chars)):
            yield _event({**head, "event": kind, "answer": text[start : start + reply.chunk_chars]})
        conversation.messages.append({"role": "assistant", "content": text})
        usage = {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
            "total_price": "0",
            "currency": "USD",
            "latency": time.perf_counter() - started,
        }
        resources = [{"position": n, **r} for n, r in enumerate(self.retriever_resources, 1)]
        yield _event(
            {
                **head,
                "event": "message_end",
                "id": message_id,
                "metadata": {"usage": usage, "retriever_resources": resources},
            }
        )


_SETTINGS = ("tools", "api_key", "mode", "retriever_resources", "max_iterations")


def _decoded(arguments: str) -> Any:
    try:
        return msgspec.json.decode(arguments)
    except msgspec.DecodeError:
        return arguments
