"""``Telemetry``: spans and metrics by the OpenTelemetry GenAI semantic conventions.

The layers hold a ``Telemetry`` or ``None``. With ``None`` (the default) they do
nothing at all: one ``is None`` test per model request and per tool call, none per
streamed chunk. With one, each operation is a ``with`` block that makes its span
current, so whatever runs inside (a tool, a delegated Session's ``send``, an
instrumented HTTP client) nests under it; anyio tasks inherit that context.

Spans (``gen_ai.*`` names and attributes from the conventions, ``xai.*`` our own):

    invoke_agent {agent name}      a turn of a Session an Agent owns
      xai.session.turn             the Session's turn (every Session)
        xai.session.compaction     between Queries, when the context is full
        chat {model}               each model request (CLIENT)
        execute_tool {tool name}   each tool call; a delegated child's turn nests here
    xai.session.extraction         memory candidates from the turn, after it
    xai.agent.adjudication         the Agent deciding candidates (a trace of its own)
    xai.agent.wakeup               a wake-up firing (a trace of its own; its turn nests)

Metrics: ``gen_ai.client.operation.duration`` (s) and ``gen_ai.client.token.usage``
({token}) for every model request, with the bucket boundaries the conventions advise.
"""

from __future__ import annotations

import copy
import importlib.metadata
import os
import time
import weakref
from collections import Counter
from collections.abc import Iterable, Sequence
from types import TracebackType
from typing import Any, Protocol, Self

import anyio
from opentelemetry import context as otel_context
from opentelemetry import metrics, trace
from opentelemetry.context import Context
from opentelemetry.metrics import MeterProvider
from opentelemetry.trace import Span, SpanKind, Status, StatusCode, TracerProvider

from xai._redact import redact
from xai.messages import AssistantMessage, Message, ToolCall, ToolResult, TurnOutcome, Usage
from xai.telemetry._content import (
    input_messages,
    output_messages,
    server_of,
    to_json,
    tool_error_type,
)

__all__ = [
    "CAPTURE_CONTENT_ENV",
    "ChatRequest",
    "ChatSpan",
    "ModelClient",
    "Operation",
    "Telemetry",
    "ToolSpan",
    "TurnSpan",
]

CAPTURE_CONTENT_ENV = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
"""The conventions' opt-in for message contents; read when ``capture_content`` is not given."""

_SCOPE = "xai"
# The bucket boundaries the conventions advise for these two histograms.
_TOKEN_BUCKETS: tuple[float, ...] = tuple(4.0**i for i in range(14))  # 1, 4, 16 … 67108864
_DURATION_BUCKETS: tuple[float, ...] = tuple(0.01 * 2**i for i in range(14))  # 0.01 … 81.92

OPERATION = "gen_ai.operation.name"
PROVIDER = "gen_ai.provider.name"
REQUEST_MODEL = "gen_ai.request.model"
RESPONSE_MODEL = "gen_ai.response.model"
SERVER_ADDRESS = "server.address"
SERVER_PORT = "server.port"
ERROR_TYPE = "error.type"
CONVERSATION = "gen_ai.conversation.id"


class ModelClient(Protocol):
    """What telemetry reads of a provider. An optional ``base_url`` (``str``) gives
    ``server.address``/``server.port``; an optional ``provider_name`` overrides
    ``gen_ai.provider.name`` (``openai``: xai speaks the OpenAI Chat Completions API);
    an optional ``streams`` (``bool``, by default true) gives ``gen_ai.request.stream``."""

    @property
    def model(self) -> str: ...


class ChatRequest(Protocol):
    """What telemetry reads of a request (``xai.providers.ProviderRequest`` fits)."""

    @property
    def messages(self) -> Sequence[Message]: ...
    @property
    def model(self) -> str | None: ...
    @property
    def max_tokens(self) -> int | None: ...
    @property
    def temperature(self) -> float | None: ...
    @property
    def response_format(self) -> dict[str, Any] | None: ...


def _version() -> str:
    try:
        return importlib.metadata.version("xai-actors")
    except importlib.metadata.PackageNotFoundError:
        return "0"


def _capture_from_env() -> bool:
    return os.environ.get(CAPTURE_CONTENT_ENV, "").strip().lower() in ("1", "true", "yes")


def _cancelled(exc: BaseException) -> bool:
    cancelled = anyio.get_cancelled_exc_class()
    if isinstance(exc, BaseExceptionGroup):
        return all(_cancelled(e) for e in exc.exceptions)
    return isinstance(exc, cancelled)


class Telemetry:
    """Turns tracing and metrics on: give one to ``Agent``, ``Session`` or ``Query``
    (``telemetry=``); what they create (children, helpers, their own requests) gets it too.

    ``tracer_provider`` / ``meter_provider``: yours; by default the global ones
    (``opentelemetry.trace.set_tracer_provider``), which are no-ops until someone sets
    them. Nothing global is set here. ``capture_content``: record message contents,
    tool arguments and results on spans (off by default, as the conventions ask; by
    default the ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT`` variable decides).
    Secrets xai knows of, and anything shaped like a key, are masked either way.
    """

    __slots__ = (
        "_clients",
        "_tracer",
        "agent_attributes",
        "capture_content",
        "duration",
        "token_usage",
    )

    def __init__(
        self,
        *,
        tracer_provider: TracerProvider | None = None,
        meter_provider: MeterProvider | None = None,
        capture_content: bool | None = None,
    ) -> None:
        self._tracer = trace.get_tracer(_SCOPE, _version(), tracer_provider)
        meter = metrics.get_meter(_SCOPE, _version(), meter_provider)
        self.token_usage = meter.create_histogram(
            "gen_ai.client.token.usage",
            unit="{token}",
            description="Number of input and output tokens used.",
            explicit_bucket_boundaries_advisory=_TOKEN_BUCKETS,
        )
        self.duration = meter.create_histogram(
            "gen_ai.client.operation.duration",
            unit="s",
            description="GenAI operation duration.",
            explicit_bucket_boundaries_advisory=_DURATION_BUCKETS,
        )
        self.capture_content = _capture_from_env() if capture_content is None else capture_content
        self.agent_attributes: dict[str, Any] = {}
        """``gen_ai.agent.id``/``name`` of the Agent this copy is bound to (``for_agent``)."""
        # What the requests to each provider share (worked out on its first request).
        self._clients: weakref.WeakKeyDictionary[Any, _Client] = weakref.WeakKeyDictionary()

    def for_agent(self, agent_id: str, name: str) -> Telemetry:
        """The same providers, for the Sessions of one Agent: their turns are
        ``invoke_agent {name}`` spans (``gen_ai.agent.id``/``name``)."""
        bound = copy.copy(self)
        bound.agent_attributes = {"gen_ai.agent.id": agent_id, "gen_ai.agent.name": name}
        return bound

    # -- context ----------------------------------------------------------------------

    def capture(self) -> Context:
        """The current context, to parent work that runs later in another task (a turn
        runs in its Session's task, not in the one that called ``send``)."""
        return otel_context.get_current()

    def _start(
        self,
        name: str,
        attributes: dict[str, Any],
        parent: Context | None = None,
        kind: SpanKind = SpanKind.INTERNAL,
    ) -> tuple[Span, Context]:
        """A span under ``parent`` (by default the current context), and that parent.

        The parent is looked up here once and handed on: to the SDK's ``start_span``
        (whose tracer and sampler otherwise each look up the current context again), to
        the operation that makes the span current in it, and from there to its metric
        records (which otherwise look it up for each one)."""
        if parent is None:
            parent = otel_context.get_current()
        return self._tracer.start_span(name, parent, kind, attributes), parent

    def _root(self, name: str, attributes: dict[str, Any]) -> tuple[Span, Context]:
        """A span that starts a trace of its own (the Agent's background work, not caused
        by whatever is current), naming the Agent; and the empty context it hangs from."""
        return self._start(name, {**attributes, **self.agent_attributes}, Context())

    # -- Query: model requests and tool calls ----------------------------------------

    def _client(self, client: ModelClient) -> _Client:
        """What every request to ``client`` shares, worked out once per provider."""
        try:
            known = self._clients.get(client)
        except TypeError:  # not weakly referable: worked out each time
            return _Client(client)
        if known is None:
            known = self._clients[client] = _Client(client)
        return known

    def chat(self, client: ModelClient, request: ChatRequest) -> ChatSpan:
        """``chat {model}``: one model request, from submit to the end of its stream."""
        model = request.model or client.model
        known = self._client(client)
        attributes = known.chat_attributes(model)
        if (
            request.max_tokens is not None
            or request.temperature is not None
            or request.response_format is not None
            or self.capture_content
        ):
            attributes = dict(attributes)  # the shared one is never changed
            if request.max_tokens is not None:
                attributes["gen_ai.request.max_tokens"] = request.max_tokens
            if request.temperature is not None:
                attributes["gen_ai.request.temperature"] = request.temperature
            if request.response_format is not None:
                attributes["gen_ai.output.type"] = "json"
            if self.capture_content:
                attributes["gen_ai.input.messages"] = input_messages(request.messages)
        span, parent = self._start(f"chat {model}", attributes, None, SpanKind.CLIENT)
        return ChatSpan(self, span, parent, known, model)

    def tool(self, call: ToolCall, description: str | None = None) -> ToolSpan:
        """``execute_tool {name}``: one tool call, made current while the tool runs."""
        attributes: dict[str, Any] = {
            OPERATION: "execute_tool",
            "gen_ai.tool.name": call.name,
            "gen_ai.tool.call.id": call.id,
            "gen_ai.tool.type": "function",
        }
        if description:
            attributes["gen_ai.tool.description"] = description
        if self.capture_content:
            attributes["gen_ai.tool.call.arguments"] = redact(call.arguments)
        return ToolSpan(self, *self._start(f"execute_tool {call.name}", attributes))

    # -- Session ----------------------------------------------------------------------

    def turn(
        self,
        client: ModelClient,
        *,
        session_id: str,
        parent_id: str | None,
        depth: int,
        origin: str | None,
        context: Context | None,
    ) -> TurnSpan:
        """A Session's turn, under ``context`` (captured where the input was sent); inside
        an ``invoke_agent`` span when the Session is an Agent's."""
        outer: Span | None = None
        if self.agent_attributes:
            attributes = dict(self._client(client).provider)
            attributes[OPERATION] = "invoke_agent"
            attributes[REQUEST_MODEL] = client.model
            attributes[CONVERSATION] = session_id
            attributes.update(self.agent_attributes)
            outer, parent = self._start(
                f"invoke_agent {self.agent_attributes['gen_ai.agent.name']}", attributes, context
            )
            context = trace.set_span_in_context(outer, parent)
        own: dict[str, Any] = {
            CONVERSATION: session_id,
            "xai.session.id": session_id,
            "xai.session.depth": depth,
        }
        if parent_id is not None:
            own["xai.session.parent_id"] = parent_id
        if origin is not None:
            own["xai.input.origin"] = origin
        return TurnSpan(*self._start("xai.session.turn", own, context), outer)

    def compaction(self, session_id: str, reason: str) -> Operation:
        return Operation(
            *self._start(
                "xai.session.compaction",
                {"xai.session.id": session_id, "xai.compaction.reason": reason},
            )
        )

    def approval_wait(self, session_id: str, turn: int, calls: Sequence[ToolCall]) -> Operation:
        """``xai.session.approval_wait``: a turn held until a person decides its calls."""
        attributes: dict[str, Any] = {
            "xai.session.id": session_id,
            "xai.turn": turn,
            "xai.approval.calls": len(calls),
            "xai.approval.tools": sorted({call.name for call in calls}),
        }
        return Operation(*self._start("xai.session.approval_wait", attributes))

    def extraction(self, session_id: str, turn: int, context: Context | None) -> Operation:
        attributes = {"xai.session.id": session_id, "xai.turn": turn}
        return Operation(*self._start("xai.session.extraction", attributes, context))

    # -- Agent ------------------------------------------------------------------------

    def adjudication(self, session_id: str | None, candidates: int) -> AdjudicationSpan:
        """The Agent deciding ``candidates`` memory candidates: a trace of its own."""
        attributes: dict[str, Any] = {"xai.adjudication.candidates": candidates}
        if session_id:
            attributes["xai.session.id"] = session_id
        return AdjudicationSpan(*self._root("xai.agent.adjudication", attributes))

    def wakeup(self, wakeup_id: str, reason: str) -> Operation:
        """A wake-up firing: a trace of its own, the turn it starts nests under it."""
        attributes = {"xai.wakeup.id": wakeup_id, "xai.wakeup.reason": reason}
        return Operation(*self._root("xai.agent.wakeup", attributes))


class _Client:
    """The attributes every request to one provider shares, built once and never changed
    after, so they are handed to the SDK as they are: the provider's own, the ``chat``
    span's start by model, and the metric records' sets by model, response model and error."""

    __slots__ = ("_chat", "_metrics", "provider", "streams")

    _MAX_SETS = 256
    """Attribute sets kept per provider; past it (models by the hundred) they are built
    each time, not kept."""

    def __init__(self, client: ModelClient) -> None:
        self.provider: dict[str, Any] = {
            PROVIDER: getattr(client, "provider_name", None) or "openai"
        }
        server = server_of(getattr(client, "base_url", None))
        if server is not None:
            self.provider[SERVER_ADDRESS], self.provider[SERVER_PORT] = server
        self.streams = bool(getattr(client, "streams", True))
        self._chat: dict[str, dict[str, Any]] = {}
        self._metrics: dict[tuple[str, str | None, str | None], _MetricAttributes] = {}

    def chat_attributes(self, model: str) -> dict[str, Any]:
        known = self._chat.get(model)
        if known is None:
            known = {
                **self.provider,
                OPERATION: "chat",
                REQUEST_MODEL: model,
                "gen_ai.request.stream": self.streams,
            }
            if len(self._chat) < self._MAX_SETS:
                self._chat[model] = known
        return known

    def metric_attributes(
        self, model: str, response_model: str | None, error_type: str | None
    ) -> _MetricAttributes:
        key = (model, response_model, error_type)
        known = self._metrics.get(key)
        if known is None:
            known = _MetricAttributes(self.provider, model, response_model, error_type)
            if len(self._metrics) < self._MAX_SETS:
                self._metrics[key] = known
        return known


class _MetricAttributes:
    """The attributes of one request's records: the duration's and each token type's."""

    __slots__ = ("duration", "input", "output", "response_model")

    def __init__(
        self,
        provider: dict[str, Any],
        model: str,
        response_model: str | None,
        error_type: str | None,
    ) -> None:
        self.response_model = response_model
        self.duration: dict[str, Any] = {**provider, OPERATION: "chat", REQUEST_MODEL: model}
        if response_model:
            self.duration[RESPONSE_MODEL] = response_model
        if error_type is not None:
            self.duration[ERROR_TYPE] = error_type
        self.input = {**self.duration, "gen_ai.token.type": "input"}
        self.output = {**self.duration, "gen_ai.token.type": "output"}


class Operation:
    """One span, current inside ``with``. An exception leaving the block sets ``error.type``
    (its class name) and an error status; a cancellation only sets ``xai.cancelled``: it is
    how xai stops work on request, not a failure."""

    __slots__ = ("_current", "_parent", "_token", "error_type", "span")

    def __init__(self, span: Span, parent: Context) -> None:
        self.span = span
        self._parent = parent
        self._current: Context | None = None
        """The context the span is current in, inside ``with``."""
        self._token: object = None
        self.error_type: str | None = None

    def __enter__(self) -> Self:
        self._current = current = trace.set_span_in_context(self.span, self._parent)
        self._token = otel_context.attach(current)
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        try:
            if exc is not None:
                if _cancelled(exc):
                    self.span.set_attribute("xai.cancelled", True)
                else:
                    self.fail(type(exc).__name__, str(exc))
            self._closing()
        finally:
            otel_context.detach(self._token)  # type: ignore[arg-type]
            self.span.end()

    def set(self, key: str, value: Any) -> None:
        self.span.set_attribute(key, value)

    def fail(self, error_type: str, description: str | None = None) -> None:
        self.error_type = error_type
        self.span.set_attribute(ERROR_TYPE, error_type)
        self.span.set_status(Status(StatusCode.ERROR, redact(description) if description else None))

    def _closing(self) -> None:
        """Subclasses: what to record once the outcome is known, before the span ends."""


class ChatSpan(Operation):
    __slots__ = ("_client", "_metric", "_model", "_started", "_telemetry")

    def __init__(
        self, telemetry: Telemetry, span: Span, parent: Context, client: _Client, model: str
    ) -> None:
        super().__init__(span, parent)
        self._telemetry = telemetry
        self._client = client
        self._model = model
        self._metric: _MetricAttributes | None = None
        """The records' attributes once the answer named its model (``finish``)."""
        self._started = time.perf_counter()

    def finish(
        self,
        message: AssistantMessage,
        finish_reason: str,
        usage: Usage | None,
        *,
        response_model: str | None = None,
        response_id: str | None = None,
    ) -> None:
        """The answer came: what the model said it did and what it cost."""
        self._metric = metric = self._client.metric_attributes(self._model, response_model, None)
        if usage is not None and not usage.estimated:  # a histogram of counts, not guesses
            record, current = self._telemetry.token_usage.record, self._current
            record(usage.prompt_tokens, metric.input, current)
            record(usage.completion_tokens, metric.output, current)
        span = self.span
        if not span.is_recording():  # sampled out: attributes would be dropped anyway
            return
        attributes: dict[str, Any] = {"gen_ai.response.finish_reasons": (finish_reason,)}
        if response_model:
            attributes[RESPONSE_MODEL] = response_model
        if response_id:
            attributes["gen_ai.response.id"] = response_id
        if usage is not None:
            attributes["gen_ai.usage.input_tokens"] = usage.prompt_tokens
            attributes["gen_ai.usage.output_tokens"] = usage.completion_tokens
            if usage.estimated:  # the server sent none: counted with the tokenizer
                attributes["xai.usage.estimated"] = True
            if usage.reasoning_tokens:
                attributes["gen_ai.usage.reasoning.output_tokens"] = usage.reasoning_tokens
            if usage.cached_tokens:
                attributes["gen_ai.usage.cache_read.input_tokens"] = usage.cached_tokens
        if self._telemetry.capture_content:
            attributes["gen_ai.output.messages"] = output_messages(message, finish_reason)
        span.set_attributes(attributes)

    def _closing(self) -> None:
        metric = self._metric
        if metric is None or self.error_type is not None:
            response_model = metric.response_model if metric is not None else None
            metric = self._client.metric_attributes(self._model, response_model, self.error_type)
        duration = time.perf_counter() - self._started
        self._telemetry.duration.record(duration, metric.duration, self._current)


class ToolSpan(Operation):
    __slots__ = ("_telemetry",)

    def __init__(self, telemetry: Telemetry, span: Span, parent: Context) -> None:
        super().__init__(span, parent)
        self._telemetry = telemetry

    def finish(self, result: ToolResult) -> None:
        self.span.set_attribute("xai.tool.success", result.success)
        if not result.success:
            self.fail(tool_error_type(result), result.error)
        elif self._telemetry.capture_content:
            self.span.set_attribute("gen_ai.tool.call.result", to_json(result.result))


class TurnSpan(Operation):
    """``xai.session.turn``, inside ``invoke_agent`` when there is one (both end together)."""

    __slots__ = ("_outer",)

    def __init__(self, span: Span, parent: Context, outer: Span | None) -> None:
        super().__init__(span, parent)
        self._outer = outer

    def outcome(self, outcome: TurnOutcome | None) -> None:
        if outcome is None:
            return
        attributes = {
            "xai.turn": outcome.turn,
            "xai.turn.status": outcome.status.value,
            "gen_ai.usage.input_tokens": outcome.usage.prompt_tokens,
            "gen_ai.usage.output_tokens": outcome.usage.completion_tokens,
        }
        self.span.set_attributes(attributes)
        if self._outer is not None:
            self._outer.set_attributes(attributes)
        if outcome.error is not None:
            self.fail(outcome.error.type, outcome.error.message)

    def fail(self, error_type: str, description: str | None = None) -> None:
        super().fail(error_type, description)
        if self._outer is not None:
            self._outer.set_attribute(ERROR_TYPE, error_type)
            self._outer.set_status(Status(StatusCode.ERROR))

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        try:
            super().__exit__(exc_type, exc, traceback)
        finally:
            if self._outer is not None:
                if exc is not None and _cancelled(exc):
                    self._outer.set_attribute("xai.cancelled", True)
                self._outer.end()


class AdjudicationSpan(Operation):
    __slots__ = ()

    def decisions(self, kinds: Iterable[str]) -> None:
        """How many decisions of each kind (``xai.adjudication.add`` …) and in all."""
        counts = Counter(kinds)
        self.span.set_attribute("xai.adjudication.decisions", sum(counts.values()))
        for kind, count in counts.items():
            self.span.set_attribute(f"xai.adjudication.{kind}", count)
