"""An in-process provider that answers from a script, with no HTTP at all."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable
from typing import Any

import anyio

from xai.exceptions import (
    MalformedStreamError,
    ProviderError,
    ProviderTimeoutError,
    StreamError,
)
from xai.messages import ToolCall, Usage
from xai.providers import (
    ProviderEvent,
    ProviderRequest,
    StreamFinished,
    TextChunk,
    ThinkingChunk,
    ToolCallChunk,
    ToolCallReady,
    UsageReport,
    error_for_status,
    map_finish_reason,
    to_wire_messages,
    to_wire_tools,
)
from xai.testing._render import estimate_usage, finish_reason, pieces
from xai.testing._script import (
    Delay,
    DropConnection,
    HttpError,
    MalformedChunk,
    Reply,
    Rule,
    Script,
    Scripted,
)
from xai.testing._violations import InvalidRequest, screen

__all__ = ["ScriptedProvider"]


def _http_error(fault: HttpError) -> ProviderError:
    return error_for_status(
        fault.status, fault.message, code=fault.code or "", retry_after=fault.retry_after
    )


class ScriptedProvider:
    """A ``Provider`` fed from a ``Script`` (or a list of ``Reply``), in the same process.

    Cheap enough for thousands of concurrent Sessions; use the wire server
    (``OpenAIWireServer``) when the real ``openai`` client must be exercised.
    Faults map to the typed errors the real provider would raise; a ``Delay``
    longer than ``timeout`` raises ``ProviderTimeoutError``.

    Every request is checked, in the wire shape ``OpenAIProvider`` would send,
    against the Chat Completions rules (see ``xai.testing._validate``): one that
    breaks a rule raises ``BadRequestError`` (what a real endpoint's 400 gives),
    is listed in ``violations`` and is reported to the pytest plugin, which fails
    the test. ``validate_requests=False`` turns the check off.
    """

    def __init__(
        self,
        script: Script | Iterable[Reply] | None = None,
        *,
        model: str = "scripted",
        timeout: float = 60.0,
        validate_requests: bool = True,
    ) -> None:
        self.script = Scripted(script)
        self.requests: list[ProviderRequest] = []
        self.validate_requests = validate_requests
        """False: take any request, however it breaks the Chat Completions rules."""
        self.violations: list[InvalidRequest] = []
        """The requests that broke a rule (each raised ``BadRequestError``)."""
        self._model = model
        self.timeout = timeout

    @property
    def model(self) -> str:
        return self._model

    def push(self, *replies: Reply) -> None:
        self.script.push(*replies)

    def add_rule(self, rule: Rule) -> None:
        self.script.add_rule(rule)

    async def aclose(self) -> None:
        return None

    async def stream(self, request: ProviderRequest) -> AsyncIterator[ProviderEvent]:
        self.requests.append(request)
        body: dict[str, Any] = {
            "model": request.model or self._model,
            "messages": to_wire_messages(request.messages),
        }
        if request.tools:
            body["tools"] = to_wire_tools(request.tools)
        if self.validate_requests:
            invalid = screen("ScriptedProvider", body)
            if invalid is not None:
                self.violations.append(invalid)
                raise error_for_status(400, invalid.error_message(), code="invalid_request")
        reply = self.script.next_reply(body)
        fault = reply.fault
        if isinstance(fault, HttpError):
            raise _http_error(fault)
        if isinstance(fault, Delay):
            if fault.seconds >= self.timeout:
                await anyio.sleep(self.timeout)
                raise ProviderTimeoutError("scripted timeout", timeout=self.timeout)
            await anyio.sleep(fault.seconds)
        calls: dict[int, list[str]] = {}
        ids: dict[int, str] = {}
        names: dict[int, str] = {}
        for sent, piece in enumerate(pieces(reply)):
            if isinstance(fault, DropConnection) and sent >= fault.after_chunks:
                raise StreamError("the response stream broke: connection dropped (scripted)")
            if isinstance(fault, MalformedChunk) and sent >= fault.after_chunks:
                raise MalformedStreamError(f"malformed stream chunk: {fault.payload[:200]!r}")
            if reply.chunk_delay:
                await anyio.sleep(reply.chunk_delay)
            kind = piece[0]
            if kind == "text":
                yield TextChunk(piece[1])
            elif kind == "thinking":
                yield ThinkingChunk(piece[1])
            else:
                _, index, call_id, name, args = piece
                if call_id:
                    ids[index] = call_id
                if name:
                    names[index] = name
                calls.setdefault(index, []).append(args)
                yield ToolCallChunk(index, call_id, name, args)
        if isinstance(fault, DropConnection):
            raise StreamError("the response stream broke: connection dropped (scripted)")
        if isinstance(fault, MalformedChunk):
            raise MalformedStreamError(f"malformed stream chunk: {fault.payload[:200]!r}")
        for index in sorted(calls):
            yield ToolCallReady(ToolCall(ids[index], names[index], "".join(calls[index]) or "{}"))
        usage = estimate_usage(body, reply)
        yield UsageReport(
            Usage(
                prompt_tokens=usage["prompt_tokens"],
                completion_tokens=usage["completion_tokens"],
                requests=1,
            )
        )
        raw = finish_reason(reply)
        finish = map_finish_reason(raw, has_tool_calls=bool(calls))
        yield StreamFinished(finish, raw, model=body["model"])
