"""``/v1/responses`` on the wire server: the OpenAI Responses API, streamed as published.

A request is first seen as the Chat Completions request it amounts to (``chat_view``), so
the same script, rules, responders (``demo_model`` too) and request checks answer both
endpoints. The answer follows the Responses streaming events in their documented order:

    response.created, response.in_progress,
    per reasoning item: output_item.added, reasoning_summary_part.added,
        reasoning_summary_text.delta..., reasoning_summary_text.done,
        reasoning_summary_part.done, output_item.done
    per message: output_item.added, content_part.added, output_text.delta...,
        output_text.done, content_part.done, output_item.done
    per function call: output_item.added, function_call_arguments.delta...,
        function_call_arguments.done, output_item.done
    response.completed (or response.incomplete), with the whole response and its usage

each as ``event: TYPE`` plus ``data: JSON`` with a growing ``sequence_number``, and no
``[DONE]`` line (the Responses stream simply ends). The real ``openai`` client's
``client.responses.create(stream=True)`` reads it into its typed events.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping
from typing import Any

import msgspec

from xai.messages import new_id
from xai.testing._render import estimate_usage, finish_reason, pieces
from xai.testing._script import Reply

__all__ = ["ResponseStream", "chat_view"]

_encode = msgspec.json.Encoder().encode


def _content_text(content: Any) -> str:
    """The text of a Responses message's content: a string, or ``input_text`` /
    ``output_text`` parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            str(part.get("text", ""))
            for part in content
            if isinstance(part, dict) and part.get("type") in ("input_text", "output_text", "text")
        )
    return ""


def chat_view(body: Mapping[str, Any]) -> dict[str, Any]:
    """The Chat Completions request a Responses request amounts to: ``instructions`` and
    role messages as messages, ``function_call`` items as the assistant's tool calls,
    ``function_call_output`` items as tool messages, flat tools in the ``function`` shape."""
    messages: list[dict[str, Any]] = []
    if isinstance(body.get("instructions"), str) and body["instructions"]:
        messages.append({"role": "system", "content": body["instructions"]})
    items = body.get("input")
    if isinstance(items, str):
        items = [{"role": "user", "content": items}]
    for item in items if isinstance(items, list) else []:
        if not isinstance(item, dict):
            continue
        kind = item.get("type", "message")
        if kind == "message" and "role" in item:
            role = "system" if item["role"] == "developer" else item["role"]
            messages.append({"role": role, "content": _content_text(item.get("content"))})
        elif kind == "function_call":
            call = {
                "id": item.get("call_id"),
                "type": "function",
                "function": {"name": item.get("name"), "arguments": item.get("arguments", "")},
            }
            last = messages[-1] if messages else None
            if last is not None and last["role"] == "assistant":
                last.setdefault("tool_calls", []).append(call)
            else:
                messages.append({"role": "assistant", "content": "", "tool_calls": [call]})
        elif kind == "function_call_output":
            output = item.get("output")
            messages.append(
                {
                    "role": "tool",
                    "tool_call_id": item.get("call_id"),
                    "content": output if isinstance(output, str) else _content_text(output),
                }
            )
    view: dict[str, Any] = {"model": body.get("model"), "messages": messages}
    tools = [
        {
            "type": "function",
            "function": {
                "name": tool.get("name"),
                "description": tool.get("description", ""),
                "parameters": tool.get("parameters", {}),
            },
        }
        for tool in body.get("tools") or []
        if isinstance(tool, dict) and tool.get("type") == "function"
    ]
    if tools:
        view["tools"] = tools
    choice = body.get("tool_choice")
    if isinstance(choice, dict) and choice.get("type") == "function":
        view["tool_choice"] = {"type": "function", "function": {"name": choice.get("name")}}
    elif isinstance(choice, str):
        view["tool_choice"] = choice
    if isinstance(body.get("max_output_tokens"), int):
        view["max_tokens"] = body["max_output_tokens"]
    fmt = (body.get("text") or {}).get("format") if isinstance(body.get("text"), dict) else None
    if isinstance(fmt, dict) and fmt.get("type") in ("json_object", "json_schema"):
        view["response_format"] = {"type": fmt["type"]}
    return view


class ResponseStream:
    """One scripted reply as a Responses API answer: streamed events or a whole response."""

    def __init__(
        self, body: Mapping[str, Any], view: Mapping[str, Any], reply: Reply, model: str
    ) -> None:
        self.body = body
        self.view = view
        self.reply = reply
        self.model = model
        self.id = f"resp_{new_id()}"
        self.created_at = int(time.time())
        self._sequence = 0

    def _event(self, kind: str, **fields: Any) -> bytes:
        data = {"type": kind, "sequence_number": self._sequence, **fields}
        self._sequence += 1
        return b"event: " + kind.encode() + b"\ndata: " + _encode(data) + b"\n\n"

    def _usage(self) -> dict[str, Any]:
        usage = estimate_usage(self.view, self.reply)
        return {
            "input_tokens": usage["prompt_tokens"],
            "input_tokens_details": {"cached_tokens": usage.get("cached_tokens", 0)},
            "output_tokens": usage["completion_tokens"],
            "output_tokens_details": {"reasoning_tokens": usage.get("reasoning_tokens", 0)},
            "total_tokens": usage["total_tokens"],
        }

    def response(self, output: list[dict[str, Any]], status: str, *, usage: bool) -> dict[str, Any]:
        """The Response object, as ``response.created`` (empty) or at the end (whole)."""
        reason = finish_reason(self.reply)
        incomplete = (
            {"reason": "max_output_tokens" if reason == "length" else "content_filter"}
            if status == "incomplete"
            else None
        )
        return {
            "id": self.id,
            "object": "response",
            "created_at": self.created_at,
            "status": status,
            "error": None,
            "incomplete_details": incomplete,
            "instructions": self.body.get("instructions"),
            "max_output_tokens": self.body.get("max_output_tokens"),
            "model": self.model,
            "output": output,
            "parallel_tool_calls": True,
            "temperature": self.body.get("temperature"),
            "tool_choice": self.body.get("tool_choice", "auto"),
            "tools": self.body.get("tools") or [],
            "top_p": None,
            "store": bool(self.body.get("store", True)),
            "usage": self._usage() if usage else None,
            "metadata": {},
        }

    def final_status(self) -> str:
        return (
            "incomplete"
            if finish_reason(self.reply) in ("length", "content_filter")
            else "completed"
        )

    def outputs(self) -> list[dict[str, Any]]:
        """The finished output items (reasoning, message, function calls), in order."""
        return [item for _, item in self._items()]

    def _items(self) -> Iterator[tuple[list[tuple[Any, ...]], dict[str, Any]]]:
        """Each output item with the stream pieces that build it."""
        reasoning = [p for p in pieces(self.reply) if p[0] == "thinking"]
        text = [p for p in pieces(self.reply) if p[0] == "text"]
        tools = [p for p in pieces(self.reply) if p[0] == "tool"]
        if reasoning:
            summary = "".join(p[1] for p in reasoning)
            yield (
                reasoning,
                {
                    "id": f"rs_{new_id()}",
                    "type": "reasoning",
                    "summary": [{"type": "summary_text", "text": summary}],
                },
            )
        if text or not tools:
            yield (
                text,
                {
                    "id": f"msg_{new_id()}",
                    "type": "message",
                    "role": "assistant",
                    "status": "completed",
                    "content": [
                        {
                            "type": "output_text",
                            "text": "".join(p[1] for p in text),
                            "annotations": [],
                            "logprobs": [],
                        }
                    ],
                },
            )
        by_call: dict[int, list[tuple[Any, ...]]] = {}
        for piece in tools:
            by_call.setdefault(piece[1], []).append(piece)
        for parts in by_call.values():
            yield (
                parts,
                {
                    "id": f"fc_{new_id()}",
                    "type": "function_call",
                    "status": "completed",
                    "call_id": parts[0][2],
                    "name": parts[0][3],
                    "arguments": "".join(p[4] for p in parts),
                },
            )

    def events(self, *, usage: bool) -> Iterator[bytes]:
        """The whole answer as Server-Sent Events, in the published order."""
        yield self._event(
            "response.created", response=self.response([], "in_progress", usage=False)
        )
        yield self._event(
            "response.in_progress", response=self.response([], "in_progress", usage=False)
        )
        done: list[dict[str, Any]] = []
        for index, (parts, item) in enumerate(self._items()):
            yield from self._item_events(index, parts, item)
            done.append(item)
        status = self.final_status()
        kind = "response.completed" if status == "completed" else "response.incomplete"
        yield self._event(kind, response=self.response(done, status, usage=usage))

    def _item_events(
        self, index: int, parts: list[tuple[Any, ...]], item: dict[str, Any]
    ) -> Iterator[bytes]:
        kind = item["type"]
        where = {"item_id": item["id"], "output_index": index}
        if kind == "reasoning":
            yield self._event(
                "response.output_item.added", output_index=index, item={**item, "summary": []}
            )
            part = {"type": "summary_text", "text": ""}
            yield self._event(
                "response.reasoning_summary_part.added", **where, summary_index=0, part=part
            )
            for piece in parts:
                yield self._event(
                    "response.reasoning_summary_text.delta",
                    **where,
                    summary_index=0,
                    delta=piece[1],
                )
            text = item["summary"][0]["text"]
            yield self._event(
                "response.reasoning_summary_text.done", **where, summary_index=0, text=text
            )
            yield self._event(
                "response.reasoning_summary_part.done",
                **where,
                summary_index=0,
                part={"type": "summary_text", "text": text},
            )
        elif kind == "message":
            empty = {"type": "output_text", "text": "", "annotations": [], "logprobs": []}
            yield self._event(
                "response.output_item.added",
                output_index=index,
                item={**item, "status": "in_progress", "content": []},
            )
            yield self._event("response.content_part.added", **where, content_index=0, part=empty)
            for piece in parts:
                yield self._event(
                    "response.output_text.delta",
                    **where,
                    content_index=0,
                    delta=piece[1],
                    logprobs=[],
                )
            whole = item["content"][0]
            yield self._event(
                "response.output_text.done",
                **where,
                content_index=0,
                text=whole["text"],
                logprobs=[],
            )
            yield self._event("response.content_part.done", **where, content_index=0, part=whole)
        else:
            yield self._event(
                "response.output_item.added",
                output_index=index,
                item={**item, "status": "in_progress", "arguments": ""},
            )
            for piece in parts:
                if piece[4]:
                    yield self._event(
                        "response.function_call_arguments.delta", **where, delta=piece[4]
                    )
            yield self._event(
                "response.function_call_arguments.done",
                **where,
                name=item["name"],
                arguments=item["arguments"],
            )
        yield self._event("response.output_item.done", output_index=index, item=item)
