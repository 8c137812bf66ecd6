"""The stateless Query: one request to the model, run to a terminal stop.

submit → aggregate the stream → run the requested tools concurrently (inside
the Query's own task group) → append their results → submit again, until the
model ends its turn, runs out of length or rounds, the Query is cancelled, or
the provider fails. Each finished message is announced (``MessageCommitted``)
the moment it is final, and ``QueryDone`` always ends the event stream.

A Query knows nothing of Sessions, Agents, memory or compaction: it gets an
immutable view of the conversation, a provider, a tool set and a config, and
keeps its scratch in a private per-run object. Context a tool needs travels in
the tool set (``ToolSet(context=...)``), never through this API.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol, assert_never

import anyio
import msgspec

from xai.events import (
    MessageCommitted,
    QueryDone,
    QueryEvent,
    TextDelta,
    ThinkingDelta,
    ToolCallFinished,
    ToolCallStarted,
)
from xai.exceptions import ConfigurationError, ProviderError, StreamError
from xai.logs import bind_ids, get_logger
from xai.messages import (
    ApprovalDecision,
    AssistantMessage,
    ErrorInfo,
    Message,
    QueryResult,
    StopReason,
    ToolCall,
    ToolMessage,
    Usage,
    UserMessage,
    new_id,
)
from xai.providers import (
    FinishReason,
    Provider,
    ProviderRequest,
    StreamFinished,
    TextChunk,
    ThinkingChunk,
    ToolCallChunk,
    ToolCallReady,
    UsageReport,
)
from xai.tools import Tool, ToolSet

if TYPE_CHECKING:
    from xai.telemetry import Telemetry

__all__ = [
    "DENIED_TOOL_TEXT",
    "EDITED_TOOL_TEXT",
    "INTERRUPTED_TOOL_TEXT",
    "ROUND_LIMIT_TOOL_TEXT",
    "CancelToken",
    "EventSink",
    "Observer",
    "Query",
    "QueryConfig",
    "run_query",
    "run_query_sync",
]

_log = get_logger(__name__)


class EventSink(Protocol):
    """Where a Query may send its events with back-pressure (an anyio send stream fits).

    A cancel may interrupt a ``send``; a ``MessageCommitted`` so interrupted is sent
    again (see ``MessageCommitted``), other events are not.
    """

    async def send(self, item: QueryEvent, /) -> None: ...


Observer = Callable[[QueryEvent], object]
"""A synchronous callable given every event. It must not block; exceptions are logged and ignored."""

_CLEANUP_SECONDS = 5.0
_LOGGED_ARGUMENTS = 500
"""Characters of a tool call's arguments a debug line shows (never shown at info)."""
INTERRUPTED_TOOL_TEXT = "[interrupted: the tool call was cancelled before it returned a result]"
ROUND_LIMIT_TOOL_TEXT = "[not run: the query reached its round limit before this call could run]"
DENIED_TOOL_TEXT = "[not run: a person denied this tool call{reason}]"
EDITED_TOOL_TEXT = "[a person approved this call with edited arguments: {arguments}]\n"


class QueryConfig(msgspec.Struct, frozen=True, kw_only=True):
    """How far one Query may go."""

    max_rounds: int = 10
    """Model requests per Query; tools asked for in the last allowed round are not run."""
    max_tokens: int | None = None
    """Output token limit per round (``max_tokens`` on the wire)."""
    temperature: float | None = None
    response_format: dict[str, Any] | None = None
    """Passed to the provider unchanged (e.g. ``{"type": "json_object"}``)."""
    tool_choice: str | None = None
    """For the Query's first request only: ``"required"`` (call some tool), ``"none"``, or
    a tool's name (call that one). ``None`` lets the model decide and sends nothing, as
    every later round of the Query does: forcing each round would never end the turn.
    Small models behind llama.cpp call tools only when forced."""
    tool_timeout: float | None = 60.0
    """Seconds one tool call may take before it becomes an error result (``None``: no limit)."""
    tool_concurrency: int = 8
    """Tool calls of one round that may run at the same time."""

    def __post_init__(self) -> None:
        if self.max_rounds < 1:
            raise ConfigurationError(f"max_rounds must be at least 1, got {self.max_rounds}")
        if self.tool_concurrency < 1:
            raise ConfigurationError(
                f"tool_concurrency must be at least 1, got {self.tool_concurrency}"
            )


def _check_tool_choice(choice: str | None, tools: ToolSet) -> None:
    if choice is None or choice == "none":
        return
    names = [spec.name for spec in tools.specs]
    if choice == "required" and not names:
        raise ConfigurationError("tool_choice='required' needs at least one tool")
    if choice != "required" and choice not in names:
        raise ConfigurationError(
            f"tool_choice names {choice!r}, which is not one of the tools: {names}"
        )


class CancelToken:
    """Cancels a running Query from any task; the Query then returns a cancelled result.

    (Cancelling the task that awaits ``Query.run`` works too: the Query still
    emits ``QueryDone`` and then lets the cancellation propagate.)
    """

    __slots__ = ("_requested", "_scope")

    def __init__(self) -> None:
        self._scope: anyio.CancelScope | None = None
        self._requested = False

    @property
    def cancelled(self) -> bool:
        return self._requested

    def cancel(self) -> None:
        self._requested = True
        if self._scope is not None:
            self._scope.cancel()

    def attach(self, scope: anyio.CancelScope) -> None:
        """The Query's side: from now on ``cancel()`` cancels ``scope`` (at once if it was
        cancelled already)."""
        self._scope = scope
        if self._requested:
            scope.cancel()

    def detach(self) -> None:
        """The Query's side: its run is over, ``cancel()`` reaches nothing any more."""
        self._scope = None


class Query:
    """Runs requests against ``provider`` with ``tools`` under ``config``. Reusable and stateless.

    ``telemetry``: trace each model request (``chat {model}``) and tool call
    (``execute_tool {name}``) under whatever span is current (see docs/telemetry.md).
    """

    __slots__ = ("config", "provider", "telemetry", "tools")

    def __init__(
        self,
        provider: Provider,
        *,
        tools: ToolSet | Iterable[Tool | Callable[..., Any]] | None = None,
        config: QueryConfig | None = None,
        telemetry: Telemetry | None = None,
    ) -> None:
        self.provider = provider
        self.tools = tools if isinstance(tools, ToolSet) else ToolSet(tools or ())
        self.config = config if config is not None else QueryConfig()
        _check_tool_choice(self.config.tool_choice, self.tools)
        self.telemetry = telemetry

    async def run(
        self,
        messages: Sequence[Message],
        input: str | Message | None = None,
        *,
        observers: Sequence[Observer] = (),
        channel: EventSink | None = None,
        cancel: CancelToken | None = None,
        query_id: str | None = None,
        decisions: Mapping[str, ApprovalDecision] | None = None,
    ) -> QueryResult:
        """Run to a terminal stop and return the result.

        Approval: a call the tool set holds (``ToolSet.holds``) is not run. The calls of
        that round that need no approval run at once; the held ones get no result and
        the Query returns ``awaiting_approval`` with them in ``QueryResult.pending``,
        before asking the model anything more. To go on, run it again on the history
        (the held calls still unanswered at its end) with ``decisions`` by call id: an
        approved call runs first (with its edited arguments, if any), a denied one is
        answered with the denial as its error result; a call still undecided keeps the
        Query waiting (it returns ``awaiting_approval`` again having run the decided).

        ``messages`` is the conversation so far (not modified); ``input`` is
        appended to it for this run (a string becomes a user message). Events
        go to every observer (synchronously, in order) and then to ``channel``
        (any ``EventSink``, e.g. an anyio memory object send stream; awaited,
        so a bounded channel applies back-pressure by its owner's
        choice).
        """
        history = list(messages)
        if input is not None:
            history.append(UserMessage(content=input) if isinstance(input, str) else input)
        run = _Run(self, history, tuple(observers), channel, query_id or new_id())
        run.decisions = decisions
        with bind_ids(query_id=run.query_id):
            return await run.execute(cancel)


class _Run:
    """The scratch of one Query run; nothing here outlives ``Query.run``."""

    __slots__ = (
        "announced",
        "channel",
        "decisions",
        "finished",
        "history",
        "last_prompt_tokens",
        "observed",
        "observers",
        "pending",
        "produced",
        "query",
        "query_id",
        "round",
        "round_usage",
        "streaming",
        "text",
        "thinking",
        "usage",
    )

    def __init__(
        self,
        query: Query,
        history: list[Message],
        observers: tuple[Observer, ...],
        channel: EventSink | None,
        query_id: str,
    ) -> None:
        self.query = query
        self.history = history
        self.observers = observers
        self.channel = channel
        self.query_id = query_id
        self.produced: list[Message] = []
        self.usage = Usage()
        self.round = 0
        self.streaming = False
        self.text: list[str] = []
        self.thinking: list[str] = []
        self.last_prompt_tokens = 0
        # How the last round ended and what it cost (for its trace span).
        self.finished: StreamFinished | None = None
        self.round_usage: Usage | None = None
        # Ids of produced messages whose MessageCommitted reached the observers / the
        # channel: a cancel can interrupt the channel's send, and salvage sends it again.
        self.observed: set[str] = set()
        self.announced: set[str] = set()
        self.decisions: Mapping[str, ApprovalDecision] | None = None
        self.pending: tuple[ToolCall, ...] = ()

    async def publish(self, event: QueryEvent) -> None:
        self.observe(event)
        if self.channel is not None:
            await self.channel.send(event)

    def observe(self, event: QueryEvent) -> None:
        for observer in self.observers:
            try:
                observer(event)
            except Exception:
                _log.exception("query.observer_failed", observer=repr(observer))

    def record(self, message: Message) -> None:
        self.history.append(message)
        self.produced.append(message)

    async def commit(self, message: Message) -> None:
        # Recorded before anyone is told, so a cancel while publishing cannot lose it.
        self.record(message)
        await self.announce(message)

    def committed(self, message: Message) -> MessageCommitted:
        return MessageCommitted(query_id=self.query_id, round=self.round, message=message)

    async def announce(self, message: Message) -> None:
        """``MessageCommitted`` for a produced message, to whoever has not had it yet."""
        event = self.committed(message)
        if message.id not in self.observed:
            self.observed.add(message.id)
            self.observe(event)
        if message.id not in self.announced:
            if self.channel is not None:
                await self.channel.send(event)
            self.announced.add(message.id)

    async def execute(self, token: CancelToken | None) -> QueryResult:
        outcome: tuple[StopReason, ErrorInfo | None] | None = None
        scope = None
        if token is not None:  # without one nothing but our caller can cancel the run
            scope = anyio.CancelScope()
            token.attach(scope)
        try:
            if scope is None:
                outcome = await self.loop()
            else:
                with scope:
                    outcome = await self.loop()
        except anyio.get_cancelled_exc_class():
            # Cancelled from outside: keep the contract, then let the cancellation go on.
            await self.wind_up(StopReason.CANCELLED, None)
            raise
        except Exception as exc:
            _log.exception("query.crashed")
            self.settle()
            with anyio.move_on_after(_CLEANUP_SECONDS, shield=True):
                await self.salvage()
            outcome = (StopReason.ERROR, ErrorInfo.from_exception(exc))
        finally:
            if token is not None:
                token.detach()
        if outcome is None:  # our own scope was cancelled through the token
            return await self.wind_up(StopReason.CANCELLED, None)
        return await self.finish(*outcome)

    def result(self, stop: StopReason, error: ErrorInfo | None) -> QueryResult:
        return QueryResult(
            query_id=self.query_id,
            stop_reason=stop,
            messages=tuple(self.produced),
            usage=self.usage,
            rounds=self.round,
            error=error,
            last_prompt_tokens=self.last_prompt_tokens,
            pending=self.pending if stop is StopReason.AWAITING_APPROVAL else (),
        )

    async def finish(self, stop: StopReason, error: ErrorInfo | None) -> QueryResult:
        result = self.result(stop, error)
        _done_line(self, stop, error)
        await self.publish(QueryDone(query_id=self.query_id, round=self.round, result=result))
        return result

    async def wind_up(self, stop: StopReason, error: ErrorInfo | None) -> QueryResult:
        """Salvage and finish after a cancel, every channel send bounded.

        Both cancel paths (the token's, and a cancel from outside) end here: a full
        channel nobody reads must not turn a cancel into a hang. The history is made
        valid first and the observers are told everything before the channel is
        awaited, so they always see every message and ``QueryDone``.
        """
        self.settle()
        for message in self.produced:
            if message.id not in self.observed:
                self.observed.add(message.id)
                self.observe(self.committed(message))
        result = self.result(stop, error)
        _done_line(self, stop, error)
        done = QueryDone(query_id=self.query_id, round=self.round, result=result)
        self.observe(done)
        if self.channel is not None:
            with anyio.move_on_after(_CLEANUP_SECONDS, shield=True):
                for message in list(self.produced):
                    if message.id not in self.announced:
                        await self.channel.send(self.committed(message))
                        self.announced.add(message.id)
                await self.channel.send(done)
        return result

    def settle(self) -> None:
        """Make what was produced a valid history, announcing nothing: keep partial text
        and answer every tool call still without a result."""
        if self.streaming:
            self.streaming = False
            if self.text or self.thinking:
                self.record(
                    AssistantMessage(
                        content="".join(self.text),
                        thinking="".join(self.thinking),
                        interrupted=True,
                    )
                )
        answered = {m.tool_call_id for m in self.produced if isinstance(m, ToolMessage)}
        for message in list(self.produced):
            if isinstance(message, AssistantMessage):
                for call in message.tool_calls:
                    if call.id not in answered:
                        answered.add(call.id)
                        self.record(_synthetic(call, INTERRUPTED_TOOL_TEXT))

    async def salvage(self) -> None:
        """``settle``, then announce whatever a cancel or failure left unannounced."""
        self.settle()
        for message in list(self.produced):
            if message.id not in self.announced:
                await self.announce(message)

    async def loop(self) -> tuple[StopReason, ErrorInfo | None]:
        config = self.query.config
        specs = self.query.tools.specs
        if self.decisions is not None and await self.resume_held(self.decisions):
            return StopReason.AWAITING_APPROVAL, None
        while True:
            self.round += 1
            request = ProviderRequest(
                messages=tuple(self.history),
                tools=specs,
                max_tokens=config.max_tokens,
                temperature=config.temperature,
                response_format=config.response_format,
                tool_choice=config.tool_choice if self.round == 1 else None,
            )
            try:
                message, finish = await self.model_round(request)
            except ProviderError as exc:
                _log.warning("query.provider_failed", error=type(exc).__name__, round=self.round)
                await self.salvage()
                return StopReason.ERROR, ErrorInfo.from_exception(exc)
            await self.commit(message)
            if finish == "length":
                return StopReason.LENGTH, None
            if not message.tool_calls:
                if finish == "content_filter":
                    return StopReason.CONTENT_FILTER, None
                return StopReason.END_TURN, None
            if self.round >= config.max_rounds:
                for call in message.tool_calls:
                    await self.commit(_synthetic(call, ROUND_LIMIT_TOOL_TEXT))
                return StopReason.MAX_ROUNDS, None
            held = tuple(call for call in message.tool_calls if self.query.tools.holds(call))
            await self.run_tools(tuple(c for c in message.tool_calls if c not in held))
            if held:
                self.pending = held
                return StopReason.AWAITING_APPROVAL, None

    async def resume_held(self, decisions: Mapping[str, ApprovalDecision]) -> bool:
        """Apply the decisions on the calls the history leaves unanswered at its end; True
        when some are still undecided (they stay held; the decided ones ran)."""
        calls = _held_calls(self.history)
        approved: list[ToolCall] = []
        undecided: list[ToolCall] = []
        for call in calls:
            decision = decisions.get(call.id)
            if decision is None:
                undecided.append(call)
            elif decision.approved:
                if decision.arguments is not None:
                    call = msgspec.structs.replace(call, arguments=decision.arguments)
                approved.append(call)
            else:
                reason = f": {decision.reason}" if decision.reason else ""
                denial = ToolMessage(
                    tool_call_id=call.id,
                    tool_name=call.name,
                    content=DENIED_TOOL_TEXT.format(reason=reason),
                    is_error=True,
                )
                await self.commit(denial)
        edited = {
            call.id: decisions[call.id].arguments
            for call in approved
            if decisions[call.id].arguments is not None
        }
        await self.run_tools(tuple(approved), edited)
        self.pending = tuple(undecided)
        return bool(undecided)

    async def model_round(self, request: ProviderRequest) -> tuple[AssistantMessage, FinishReason]:
        """One model request; in a ``chat`` span when the Query has telemetry."""
        telemetry = self.query.telemetry
        if telemetry is None:
            return await self.stream_round(request)
        with telemetry.chat(self.query.provider, request) as span:
            message, finish = await self.stream_round(request)
            end = self.finished
            span.finish(
                message,
                finish,
                self.round_usage,
                response_model=end.model if end is not None else None,
                response_id=end.response_id if end is not None else None,
            )
        return message, finish

    async def stream_round(self, request: ProviderRequest) -> tuple[AssistantMessage, FinishReason]:
        self.streaming = True
        self.text = text = []
        self.thinking = thinking = []
        calls: list[ToolCall] = []
        usage: Usage | None = None
        finish: FinishReason | None = None
        query_id, round_ = self.query_id, self.round
        started = time.perf_counter()
        events = self.query.provider.stream(request)
        try:
            async for event in events:
                if isinstance(event, TextChunk):
                    text.append(event.text)
                    await self.publish(TextDelta(query_id=query_id, round=round_, text=event.text))
                elif isinstance(event, ToolCallChunk):
                    pass  # the provider assembles calls: ToolCallReady carries each whole
                elif isinstance(event, ThinkingChunk):
                    thinking.append(event.text)
                    await self.publish(
                        ThinkingDelta(query_id=query_id, round=round_, text=event.text)
                    )
                elif isinstance(event, ToolCallReady):
                    calls.append(event.call)
                elif isinstance(event, UsageReport):
                    usage = event.usage
                    if not usage.estimated:  # an estimate must not calibrate the Session's
                        self.last_prompt_tokens = usage.prompt_tokens
                elif isinstance(event, StreamFinished):
                    finish = event.reason
                    self.finished = event
                else:
                    assert_never(event)
        finally:
            # Close the stream now (not whenever it is collected): it holds a connection.
            # An async generator that ran to its end has closed already (no frame left):
            # closing it again would only cost a shielded scope.
            aclose = getattr(events, "aclose", None)
            if aclose is not None and getattr(events, "ag_frame", True) is not None:
                with anyio.move_on_after(5, shield=True):
                    await aclose()
            self.usage = self.usage + (usage if usage is not None else Usage(requests=1))
            self.round_usage = usage
        if finish is None:
            raise StreamError("the provider's stream ended without finishing")
        self.streaming = False
        if _log.enabled("debug"):
            _round_line(self, finish, usage, calls, started)
        if finish == "length":
            calls = []  # arguments cut off by the length limit are not a call anyone can run
        return (
            AssistantMessage(
                content="".join(text),
                thinking="".join(thinking),
                tool_calls=tuple(calls),
            ),
            finish,
        )

    async def run_tools(
        self, calls: tuple[ToolCall, ...], edited: Mapping[str, str | None] | None = None
    ) -> None:
        if not calls:
            return
        limiter = anyio.CapacityLimiter(self.query.config.tool_concurrency)
        notes = edited or {}
        async with anyio.create_task_group() as group:
            for call in calls:
                group.start_soon(self.run_tool, call, limiter, notes.get(call.id))

    async def run_tool(
        self, call: ToolCall, limiter: anyio.CapacityLimiter, edited: str | None = None
    ) -> None:
        async with limiter:
            await self.publish(ToolCallStarted(query_id=self.query_id, round=self.round, call=call))
            if _log.enabled("debug"):
                arguments = call.arguments[:_LOGGED_ARGUMENTS]  # redacted by the log processor
                _log.debug("tool.started", tool=call.name, call_id=call.id, arguments=arguments)
            tools, timeout = self.query.tools, self.query.config.tool_timeout
            telemetry = self.query.telemetry
            if telemetry is None:
                result = await tools.call(call, default_timeout=timeout)
            else:
                spec = tools.spec(call.name)
                description = spec.description if spec is not None else None
                with telemetry.tool(call, description) as span:
                    result = await tools.call(call, default_timeout=timeout)
                    span.finish(result)
        content = result.content
        if edited is not None:  # the model asked otherwise: say what ran
            content = EDITED_TOOL_TEXT.format(arguments=edited) + content
        message = ToolMessage(
            tool_call_id=call.id,
            tool_name=call.name,
            content=content,
            is_error=not result.success,
        )
        # Produced (so salvage neither loses nor re-answers it) before anyone is told.
        self.record(message)
        _log.debug(
            "tool.finished",
            tool=call.name,
            call_id=call.id,
            success=result.success,
            truncated=result.truncated,
            ms=round(result.duration_ms, 1),
        )
        await self.publish(
            ToolCallFinished(query_id=self.query_id, round=self.round, result=result)
        )
        await self.announce(message)


def _round_line(
    run: _Run, finish: FinishReason, usage: Usage | None, calls: list[ToolCall], started: float
) -> None:
    """The debug line of one model round: what it cost, never what it said."""
    end = run.finished
    _log.debug(
        "query.round",
        round=run.round,
        model=end.model if end is not None else None,
        finish=finish,
        prompt_tokens=usage.prompt_tokens if usage is not None else None,
        completion_tokens=usage.completion_tokens if usage is not None else None,
        estimated=usage.estimated if usage is not None else None,
        tool_calls=len(calls),
        ms=round((time.perf_counter() - started) * 1000, 1),
    )


def _done_line(run: _Run, stop: StopReason, error: ErrorInfo | None) -> None:
    _log.debug(
        "query.done",
        stop=stop.value,
        rounds=run.round,
        error=error.type if error is not None else None,
    )


def _held_calls(history: Sequence[Message]) -> list[ToolCall]:
    """The calls of the history's last assistant message that no tool result after it
    answers (the ones a previous run held for approval)."""
    answered: set[str] = set()
    for message in reversed(history):
        if isinstance(message, ToolMessage):
            answered.add(message.tool_call_id)
        elif isinstance(message, AssistantMessage):
            return [call for call in message.tool_calls if call.id not in answered]
        else:
            return []
    return []


def _synthetic(call: ToolCall, text: str) -> ToolMessage:
    return ToolMessage(
        tool_call_id=call.id, tool_name=call.name, content=text, is_error=True, synthetic=True
    )


async def run_query(
    messages: Sequence[Message] | str,
    *,
    provider: Provider,
    tools: ToolSet | Iterable[Tool | Callable[..., Any]] | None = None,
    config: QueryConfig | None = None,
    observers: Sequence[Observer] = (),
    telemetry: Telemetry | None = None,
) -> QueryResult:
    """Run one Query from a list of messages (or a single user prompt) — for scripts and batches."""
    query = Query(provider, tools=tools, config=config, telemetry=telemetry)
    if isinstance(messages, str):
        return await query.run((), messages, observers=observers)
    return await query.run(messages, observers=observers)


def run_query_sync(
    messages: Sequence[Message] | str,
    *,
    provider: Provider,
    tools: ToolSet | Iterable[Tool | Callable[..., Any]] | None = None,
    config: QueryConfig | None = None,
    observers: Sequence[Observer] = (),
    backend: str = "asyncio",
) -> QueryResult:
    """``run_query`` for code that has no event loop of its own."""

    async def main() -> QueryResult:
        return await run_query(
            messages, provider=provider, tools=tools, config=config, observers=observers
        )

    return anyio.run(main, backend=backend)
