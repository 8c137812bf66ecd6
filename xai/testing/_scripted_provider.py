"""An in-process provider that answers from a script, with no HTTP at all."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable

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
    """

    def __init__(
        self,
        script: Script | Iterable[Reply] | None = None,
        *,
        model: str = "scripted",
        timeout: float = 60.0,
    ) -> None:
        self.script = Scripted(script)
        self.requests: list[ProviderRequest] = []
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
        body = {
            "model": request.model or self._model,
            "messages": to_wire_messages(request.messages),
        }
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
        yield StreamFinished(map_finish_reason(raw, has_tool_calls=bool(calls)), raw)
