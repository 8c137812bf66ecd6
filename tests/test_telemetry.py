"""OpenTelemetry spans and metrics, read back with the SDK's in-memory exporter and reader."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import anyio
import pytest
from opentelemetry.context import Context
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import HistogramDataPoint, InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.sdk.trace.sampling import ALWAYS_OFF, ALWAYS_ON, Sampler, SamplingResult
from opentelemetry.trace import Link, SpanKind, StatusCode, TraceState, get_current_span
from opentelemetry.util.types import Attributes

from tests.session_helpers import extraction_responder, is_side_request, last_content
from xai._redact import register_secret
from xai.agent import Agent, AgentConfig, Persona
from xai.exceptions import ToolError
from xai.memory import JUDGE_MARKER
from xai.messages import TurnStatus
from xai.mood import MoodSeed, MoodState
from xai.providers import OpenAIProvider
from xai.query import CancelToken, Query, QueryConfig
from xai.session import HELPER_INSTRUCTIONS, Session, SessionConfig, SystemPrompt
from xai.telemetry import Telemetry
from xai.testing import HttpError, OpenAIWireServer, Reply, ScriptedCall, ScriptedProvider

pytestmark = pytest.mark.anyio


class Traces:
    """A tracer and a meter provider of the SDK, kept in memory."""

    def __init__(self, *, capture_content: bool = False, sampler: Sampler | None = None) -> None:
        self.exporter = InMemorySpanExporter()
        self.tracer_provider = TracerProvider(sampler=sampler)
        self.tracer_provider.add_span_processor(SimpleSpanProcessor(self.exporter))
        self.reader = InMemoryMetricReader()
        self.meter_provider = MeterProvider(metric_readers=[self.reader])
        self.telemetry = Telemetry(
            tracer_provider=self.tracer_provider,
            meter_provider=self.meter_provider,
            capture_content=capture_content,
        )

    def spans(self) -> list[ReadableSpan]:
        return list(self.exporter.get_finished_spans())

    def named(self, name: str) -> list[ReadableSpan]:
        return [s for s in self.spans() if s.name == name]

    def one(self, name: str) -> ReadableSpan:
        (span,) = self.named(name)
        return span

    def children(self, parent: ReadableSpan) -> list[ReadableSpan]:
        assert parent.context is not None
        return sorted(
            (s for s in self.spans() if s.parent and s.parent.span_id == parent.context.span_id),
            key=lambda s: s.start_time or 0,
        )

    def histogram(self, name: str) -> tuple[str, list[HistogramDataPoint]]:
        return self.histograms(name)[0]

    def histograms(self, *names: str) -> list[tuple[str, list[HistogramDataPoint]]]:
        """Each of ``names`` from one collection (a collection hands the exemplars over and
        starts afresh, so a second one has none to show)."""
        data = self.reader.get_metrics_data()
        assert data is not None
        found: dict[str, tuple[str, list[HistogramDataPoint]]] = {}
        for resource in data.resource_metrics:
            for scope in resource.scope_metrics:
                for metric in scope.metrics:
                    points = list(metric.data.data_points)
                    assert all(isinstance(p, HistogramDataPoint) for p in points)
                    found[metric.name] = (metric.unit or "", points)  # type: ignore[assignment]
        missing = [name for name in names if name not in found]
        assert not missing, f"no metric {missing}"
        return [found[name] for name in names]

    def close(self) -> None:
        self.tracer_provider.shutdown()
        self.meter_provider.shutdown()


@pytest.fixture
def traces() -> Iterator[Traces]:
    t = Traces()
    yield t
    t.close()


def attrs(span: ReadableSpan) -> dict[str, Any]:
    return dict(span.attributes or {})


def tree(traces: Traces, root: ReadableSpan, depth: int = 0) -> list[str]:
    """The span names under ``root``, indented, children in start order (for failure messages
    and for the shape checks)."""
    lines = ["  " * depth + root.name]
    for child in traces.children(root):
        lines.extend(tree(traces, child, depth + 1))
    return lines


# -- the Query: chat and execute_tool spans ---------------------------------------------------


async def test_a_query_traces_each_round_and_each_tool_call(traces: Traces) -> None:
    async def weather(city: str) -> str:
        """The weather in a city."""
        return f"sunny in {city}"

    provider = ScriptedProvider(
        [
            Reply(tool_calls=(ScriptedCall(name="weather", arguments={"city": "Oslo"}, id="c1"),)),
            Reply(text="It is sunny."),
        ],
        model="model-x",
    )
    query = Query(provider, tools=[weather], telemetry=traces.telemetry)
    result = await query.run((), "weather in Oslo?")
    assert result.text == "It is sunny."

    first, second = traces.named("chat model-x")
    tool = traces.one("execute_tool weather")
    assert first.kind is SpanKind.CLIENT and tool.kind is SpanKind.INTERNAL
    assert first.parent is None  # no span was current: the rounds are roots
    a = attrs(first)
    assert a["gen_ai.operation.name"] == "chat"
    assert a["gen_ai.provider.name"] == "openai"
    assert a["gen_ai.request.model"] == a["gen_ai.response.model"] == "model-x"
    assert a["gen_ai.response.finish_reasons"] == ("tool_calls",)
    assert a["gen_ai.usage.input_tokens"] > 0 and a["gen_ai.usage.output_tokens"] > 0
    assert attrs(second)["gen_ai.response.finish_reasons"] == ("stop",)
    t = attrs(tool)
    assert t["gen_ai.operation.name"] == "execute_tool"
    assert t["gen_ai.tool.name"] == "weather"
    assert t["gen_ai.tool.call.id"] == "c1"
    assert t["gen_ai.tool.description"] == "The weather in a city."
    assert t["xai.tool.success"] is True
    assert "error.type" not in t
    # The tool ran after the first round ended and before the second began.
    assert first.end_time and tool.start_time and tool.end_time and second.start_time
    assert first.end_time <= tool.start_time <= tool.end_time <= second.start_time
    # Off by default: no contents.
    assert not any(k.startswith(("gen_ai.input", "gen_ai.output.m")) for k in a)
    assert "gen_ai.tool.call.arguments" not in t


async def test_failed_tool_calls_say_why_in_error_type(traces: Traces) -> None:
    async def broken() -> str:
        raise ValueError("no luck")

    async def refuses() -> str:
        raise ToolError("not today")

    async def slow() -> str:
        await anyio.sleep_forever()
        return "never"

    calls = (
        ScriptedCall(name="broken", id="a"),
        ScriptedCall(name="refuses", id="b"),
        ScriptedCall(name="missing", id="c"),
        ScriptedCall(name="broken", arguments="{not json", id="d"),
        ScriptedCall(name="slow", id="e"),
    )
    provider = ScriptedProvider([Reply(tool_calls=calls), Reply(text="ok")])
    config = QueryConfig(tool_timeout=0.01)
    query = Query(
        provider, tools=[broken, refuses, slow], config=config, telemetry=traces.telemetry
    )
    await query.run((), "go")
    by_id = {
        attrs(s)["gen_ai.tool.call.id"]: s
        for s in traces.spans()
        if s.name.startswith("execute_tool")
    }
    kinds = {i: attrs(s)["error.type"] for i, s in by_id.items()}
    assert kinds == {
        "a": "ValueError",
        "b": "tool_error",
        "c": "unknown_tool",
        "d": "invalid_arguments",
        "e": "timeout",
    }
    for span in by_id.values():
        assert span.status.status_code is StatusCode.ERROR
        assert attrs(span)["xai.tool.success"] is False


async def test_a_provider_error_marks_the_round_and_its_duration(traces: Traces) -> None:
    provider = ScriptedProvider([Reply(fault=HttpError(status=400, message="bad"))])
    result = await Query(provider, telemetry=traces.telemetry).run((), "hi")
    assert result.error is not None
    span = traces.one("chat scripted")
    assert attrs(span)["error.type"] == "BadRequestError"
    assert span.status.status_code is StatusCode.ERROR
    _, points = traces.histogram("gen_ai.client.operation.duration")
    assert [dict(p.attributes or {}).get("error.type") for p in points] == ["BadRequestError"]


async def test_a_cancelled_tool_call_is_marked_cancelled_not_failed(traces: Traces) -> None:
    started = anyio.Event()

    async def wait() -> str:
        started.set()
        await anyio.sleep_forever()
        return "never"

    provider = ScriptedProvider([Reply(tool_calls=(ScriptedCall(name="wait"),))])
    token = CancelToken()
    query = Query(provider, tools=[wait], telemetry=traces.telemetry)
    async with anyio.create_task_group() as group:

        async def cancel_when_started() -> None:
            await started.wait()
            token.cancel()

        group.start_soon(cancel_when_started)
        result = await query.run((), "go", cancel=token)
    assert result.stop_reason == "cancelled"
    span = traces.one("execute_tool wait")
    assert attrs(span)["xai.cancelled"] is True
    assert "error.type" not in attrs(span)
    assert span.status.status_code is not StatusCode.ERROR


# -- metrics ----------------------------------------------------------------------------------


async def test_token_usage_and_duration_histograms_follow_the_conventions(
    traces: Traces, openai_server: OpenAIWireServer, provider: OpenAIProvider
) -> None:
    openai_server.push(Reply(text="hello there"))
    result = await Query(provider, telemetry=traces.telemetry).run((), "hi")
    unit, points = traces.histogram("gen_ai.client.token.usage")
    assert unit == "{token}"
    by_type = {dict(p.attributes or {})["gen_ai.token.type"]: p for p in points}
    assert by_type["input"].sum == result.usage.prompt_tokens > 0
    assert by_type["output"].sum == result.usage.completion_tokens > 0
    assert list(by_type["input"].explicit_bounds) == [4.0**i for i in range(14)]
    common = dict(by_type["input"].attributes or {})
    assert common["gen_ai.operation.name"] == "chat"
    assert common["gen_ai.provider.name"] == "openai"
    assert common["gen_ai.request.model"] == provider.model
    assert common["server.address"] == "127.0.0.1"
    assert common["server.port"] == openai_server.port
    unit, (duration,) = traces.histogram("gen_ai.client.operation.duration")
    assert unit == "s"
    assert duration.count == 1
    assert list(duration.explicit_bounds)[:3] == [0.01, 0.02, 0.04]
    assert "error.type" not in dict(duration.attributes or {})
    chat = traces.one(f"chat {provider.model}")
    assert attrs(chat)["server.address"] == "127.0.0.1"
    assert attrs(chat)["server.port"] == openai_server.port
    assert attrs(chat)["gen_ai.response.id"].startswith("chatcmpl-")


@pytest.mark.parametrize("stream", [True, False])
async def test_the_stream_setting_and_an_estimated_usage_are_recorded_as_what_they_are(
    traces: Traces, stream: bool
) -> None:
    """``gen_ai.request.stream`` is the request's own; usage the server did not send is
    xai's estimate: on the span, marked so, and kept out of the token histogram."""
    async with (
        OpenAIWireServer([Reply(text="Hello!")], send_usage=False) as server,
        OpenAIProvider(server.llm_config(stream=stream)) as provider,
    ):
        result = await Query(provider, telemetry=traces.telemetry).run((), "hi")
        assert server.chat_requests()[0].body.get("stream", False) is stream
    assert result.usage.estimated and result.usage.prompt_tokens > 0
    chat = attrs(traces.one(f"chat {provider.model}"))
    assert chat["gen_ai.request.stream"] is stream
    assert chat["gen_ai.usage.input_tokens"] == result.usage.prompt_tokens
    assert chat["xai.usage.estimated"] is True
    data = traces.reader.get_metrics_data()
    assert data is not None
    names = {m.name for r in data.resource_metrics for sc in r.scope_metrics for m in sc.metrics}
    assert names == {"gen_ai.client.operation.duration"}  # no token records from a guess


async def test_spans_sampled_out_still_leave_every_metric_record_with_its_own_error() -> None:
    # xai builds each request's metric attributes once and skips span attributes nobody
    # records: the records must not depend on sampling, nor one request's error leak into
    # the attribute set of the next.
    traces = Traces(sampler=ALWAYS_OFF)
    provider = ScriptedProvider(
        [Reply(text="one"), Reply(fault=HttpError(status=400, message="bad")), Reply(text="two")]
    )
    try:
        for _ in range(3):
            await Query(provider, telemetry=traces.telemetry).run((), "hi")
        assert traces.spans() == []
        _, points = traces.histogram("gen_ai.client.operation.duration")
        counts = {dict(p.attributes or {}).get("error.type"): p.count for p in points}
        assert counts == {None: 2, "BadRequestError": 1}
        _, tokens = traces.histogram("gen_ai.client.token.usage")
        by_type = {dict(p.attributes or {})["gen_ai.token.type"]: p.count for p in tokens}
        assert by_type == {"input": 2, "output": 2}
        assert all("error.type" not in dict(p.attributes or {}) for p in tokens)
    finally:
        traces.close()


class Seen(Sampler):
    """Samples everything and keeps what each decision was given: a sampler sees a span's
    name, its attributes at start and its parent, nothing that comes later."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, dict[str, Any], int | None]] = []

    def should_sample(
        self,
        parent_context: Context | None,
        trace_id: int,
        name: str,
        kind: SpanKind | None = None,
        attributes: Attributes = None,
        links: Sequence[Link] | None = None,
        trace_state: TraceState | None = None,
    ) -> SamplingResult:
        parent = get_current_span(parent_context).get_span_context()
        self.seen.append(
            (name, dict(attributes or {}), parent.span_id if parent.is_valid else None)
        )
        return ALWAYS_ON.should_sample(
            parent_context, trace_id, name, kind, attributes, links, trace_state
        )

    def get_description(self) -> str:
        return "Seen"


async def test_records_link_to_their_round_and_samplers_see_the_start_under_the_current_span(
    openai_server: OpenAIWireServer, provider: OpenAIProvider
) -> None:
    # xai looks the current context up once per span and hands it on (to start_span, to the
    # span made current, to the records): the spans must still hang from whatever is current,
    # a sampler still sees every attribute known at the start, and each record's exemplar
    # still points at the chat span of its own round.
    async def weather(city: str) -> str:
        """The weather in a city."""
        return f"sunny in {city}"

    sampler = Seen()
    traces = Traces(sampler=sampler)
    openai_server.push(
        Reply(tool_calls=(ScriptedCall(name="weather", arguments={"city": "Oslo"}),))
    )
    openai_server.push(Reply(text="It is sunny."))
    try:
        with traces.tracer_provider.get_tracer("app").start_as_current_span("app") as app:
            query = Query(provider, tools=[weather], telemetry=traces.telemetry)
            result = await query.run((), "weather in Oslo?")
        assert result.text == "It is sunny."
        app_id = app.get_span_context().span_id
        chats = traces.named(f"chat {provider.model}")
        tool = traces.one("execute_tool weather")
        assert len(chats) == 2
        for span in (*chats, tool):
            assert span.parent is not None and span.parent.span_id == app_id
        at_start = {name: (a, parent) for name, a, parent in sampler.seen}
        chat_start, chat_parent = at_start[f"chat {provider.model}"]
        assert chat_parent == app_id
        assert chat_start == {
            "gen_ai.operation.name": "chat",
            "gen_ai.provider.name": "openai",
            "gen_ai.request.model": provider.model,
            "gen_ai.request.stream": True,
            "server.address": "127.0.0.1",
            "server.port": openai_server.port,
        }
        tool_start, tool_parent = at_start["execute_tool weather"]
        assert tool_parent == app_id
        assert set(tool_start) == {
            "gen_ai.operation.name",
            "gen_ai.tool.name",
            "gen_ai.tool.call.id",
            "gen_ai.tool.type",
            "gen_ai.tool.description",
        }

        rounds = {s.context.span_id: s for s in chats if s.context is not None}
        trace_id = app.get_span_context().trace_id
        usage = {"input": "gen_ai.usage.input_tokens", "output": "gen_ai.usage.output_tokens"}
        (_, tokens), (_, durations) = traces.histograms(
            "gen_ai.client.token.usage", "gen_ai.client.operation.duration"
        )
        linked = 0
        for point in (*tokens, *durations):
            assert point.exemplars, point
            for exemplar in point.exemplars:
                assert exemplar.trace_id == trace_id
                assert exemplar.span_id in rounds
                token_type = dict(point.attributes or {}).get("gen_ai.token.type")
                if token_type is not None:
                    chat = attrs(rounds[exemplar.span_id])
                    assert exemplar.value == chat[usage[str(token_type)]]
                linked += 1
        assert linked >= 3
    finally:
        traces.close()


# -- contents: opt-in, redacted --------------------------------------------------------------


async def test_contents_are_recorded_only_on_request_and_never_with_secrets() -> None:
    register_secret("hunter2-secret-value")
    traces = Traces(capture_content=True)
    try:

        async def echo(text: str) -> str:
            return f"echo {text} sk-abcdefghijklmnopqrst"

        provider = ScriptedProvider(
            [
                Reply(tool_calls=(ScriptedCall(name="echo", arguments={"text": "hi"}),)),
                Reply(text="done, hunter2-secret-value"),
            ]
        )
        query = Query(provider, tools=[echo], telemetry=traces.telemetry)
        await query.run((), "my password is hunter2-secret-value")
        first, second = traces.named("chat scripted")
        sent = json.loads(attrs(first)["gen_ai.input.messages"])
        assert sent == [
            {"role": "user", "parts": [{"type": "text", "content": "my password is ***"}]}
        ]
        answered = json.loads(attrs(first)["gen_ai.output.messages"])
        assert answered[0]["parts"][0]["type"] == "tool_call"
        assert answered[0]["parts"][0]["arguments"] == {"text": "hi"}
        assert answered[0]["finish_reason"] == "tool_calls"
        resent = json.loads(attrs(second)["gen_ai.input.messages"])
        assert resent[-1]["role"] == "tool"
        assert resent[-1]["parts"][0]["response"] == "echo hi ***"
        tool = attrs(traces.one("execute_tool echo"))
        assert json.loads(tool["gen_ai.tool.call.arguments"]) == {"text": "hi"}
        assert json.loads(tool["gen_ai.tool.call.result"]) == "echo hi ***"
        everything = json.dumps([attrs(s) for s in traces.spans()], default=str)
        assert "hunter2-secret-value" not in everything
        assert "sk-abcdefghijklmnopqrst" not in everything
    finally:
        traces.close()


# -- a Session: turn, compaction, extraction ------------------------------------------------


async def test_a_session_turn_holds_its_compaction_rounds_and_tools(traces: Traces) -> None:
    async def note(text: str) -> str:
        return "noted"

    provider = ScriptedProvider()

    def respond(body: Mapping[str, Any]) -> Reply | None:
        if is_side_request(body):
            return extraction_responder(body) or Reply(text="SUMMARY")
        if body["messages"][-1]["role"] == "user":
            return Reply(tool_calls=(ScriptedCall(name="note", arguments={"text": "x"}),))
        return Reply(text="ok " + "y" * 400)

    provider.script.add_responder(respond)
    config = SessionConfig(
        context_window=400, keep_recent_tokens=50, compact_at=0.5, extract_memory=True
    )
    async with Session(provider, tools=[note], config=config, telemetry=traces.telemetry) as s:
        for text in ("first question " * 20, "second question " * 20):
            assert (await s.send(text)).status is TurnStatus.COMPLETED
    turns = traces.named("xai.session.turn")
    assert len(turns) == 2
    assert not traces.named("invoke_agent xai")  # no Agent: no agent span
    second = turns[1]
    assert tree(traces, second) == [
        "xai.session.turn",
        "  xai.session.compaction",
        "    chat scripted",
        "  chat scripted",
        "  execute_tool note",
        "  chat scripted",
    ], tree(traces, second)
    a = attrs(second)
    assert a["gen_ai.conversation.id"] == a["xai.session.id"] == s.id
    assert a["xai.turn"] == 2 and a["xai.turn.status"] == "completed"
    assert a["xai.input.origin"] == "user"
    compaction = attrs(traces.one("xai.session.compaction"))
    assert compaction["xai.compaction.reason"] == "proactive"
    assert compaction["xai.compaction.compacted"] is True
    extractions = traces.named("xai.session.extraction")
    assert [attrs(e)["xai.turn"] for e in extractions] == [1, 2]
    assert all(e.parent is None for e in extractions)  # siblings of the turns (both roots)
    assert attrs(extractions[0])["xai.extraction.candidates"] == 1
    assert [c.name for c in traces.children(extractions[0])] == ["chat scripted"]


# -- an Agent: invoke_agent, parallel tools, a delegation, adjudication ------------------------


def _judge_adds(body: Mapping[str, Any]) -> Reply | None:
    if last_content(body).startswith(JUDGE_MARKER):
        return Reply(text='{"decision": "add", "reason": "new"}')
    return None


async def test_an_agent_turn_with_parallel_tools_and_a_delegation(
    tmp_path: Path, traces: Traces, openai_server: OpenAIWireServer, provider: OpenAIProvider
) -> None:
    # The two tools only finish once both have started: they must run at the same time.
    started = {"forecast": anyio.Event(), "tides": anyio.Event()}

    async def forecast(city: str) -> str:
        started["forecast"].set()
        await started["tides"].wait()
        return f"rain in {city}"

    async def tides(city: str) -> str:
        started["tides"].set()
        await started["forecast"].wait()
        return "high at noon"

    def respond(body: Mapping[str, Any]) -> Reply | None:
        messages = body["messages"]
        if is_side_request(body) or last_content(body).startswith(JUDGE_MARKER):
            return None
        if HELPER_INSTRUCTIONS in messages[0]["content"]:
            return Reply(text="42 boats")
        if messages[-1]["role"] == "user":
            return Reply(
                tool_calls=(
                    ScriptedCall(name="forecast", arguments={"city": "Bergen"}, id="call-f"),
                    ScriptedCall(name="tides", arguments={"city": "Bergen"}, id="call-t"),
                    ScriptedCall(name="delegate", arguments={"task": "count boats"}, id="call-d"),
                )
            )
        return Reply(text="Rain, high tide at noon, 42 boats.")

    openai_server.script.add_responder(extraction_responder)
    openai_server.script.add_responder(_judge_adds)
    openai_server.script.add_responder(respond)
    config = AgentConfig(
        session=SessionConfig(extract_memory=True, delegation=True), memory_tool=False
    )
    agent = Agent(
        tmp_path,
        provider,
        tools=[forecast, tides],
        persona=Persona(name="Skipper"),
        config=config,
        telemetry=traces.telemetry,
    )
    async with agent:
        session = await agent.open_session("sailing")
        outcome = await session.send("Plan my sail in Bergen")
        assert outcome.status is TurnStatus.COMPLETED, outcome
    model = provider.model

    top = next(s for s in traces.named("invoke_agent Skipper") if s.parent is None)
    shape = "\n".join(tree(traces, top))
    (turn,) = traces.children(top)
    assert turn.name == "xai.session.turn", shape
    steps = [s.name for s in traces.children(turn)]
    # Two rounds around the three calls, which start in any order (they run concurrently).
    assert steps[0] == steps[-1] == f"chat {model}", shape
    assert sorted(steps[1:-1]) == sorted(
        ["execute_tool forecast", "execute_tool tides", "execute_tool delegate"]
    ), shape
    delegate = traces.one("execute_tool delegate")
    # (The child's extraction may follow, a sibling of its turn; its input is the Agent's,
    # so it proposes nothing.)
    assert tree(traces, delegate)[:4] == [
        "execute_tool delegate",
        "  invoke_agent Skipper",
        "    xai.session.turn",
        f"      chat {model}",
    ], shape
    a = attrs(top)
    assert a["gen_ai.operation.name"] == "invoke_agent"
    assert a["gen_ai.agent.name"] == "Skipper" and a["gen_ai.agent.id"] == agent.id
    assert a["gen_ai.conversation.id"] == session.id
    assert a["gen_ai.provider.name"] == "openai" and a["gen_ai.request.model"] == model
    assert a["server.address"] == "127.0.0.1" and a["server.port"] == openai_server.port
    assert a["xai.turn.status"] == "completed"
    assert a["gen_ai.usage.input_tokens"] > 0

    # The parallel tools: siblings under the turn that overlap in time.
    f, t = traces.one("execute_tool forecast"), traces.one("execute_tool tides")
    for tool in (f, t):
        assert tool.parent is not None and turn.context is not None
        assert tool.parent.span_id == turn.context.span_id
    assert f.start_time and f.end_time and t.start_time and t.end_time
    assert f.start_time < t.end_time and t.start_time < f.end_time
    assert {attrs(f)["gen_ai.tool.call.id"], attrs(t)["gen_ai.tool.call.id"]} == {
        "call-f",
        "call-t",
    }

    # The delegation: the child's turn under the call that spawned it, in the same trace.
    assert attrs(delegate)["gen_ai.tool.call.id"] == "call-d"
    assert attrs(delegate)["xai.tool.success"] is True
    child = traces.children(delegate)[0]
    assert child.name == "invoke_agent Skipper"
    assert child.context is not None and top.context is not None
    assert child.context.trace_id == top.context.trace_id
    child_turn = attrs(traces.children(child)[0])
    assert child_turn["xai.session.parent_id"] == session.id
    assert child_turn["xai.session.depth"] == 1
    assert child_turn["xai.input.origin"] == "agent"

    # Extraction after the turn, adjudication in a trace of its own with decision counts.
    extraction = [s for s in traces.named("xai.session.extraction") if s.parent is None]
    assert [attrs(e)["xai.session.id"] for e in extraction] == [session.id]
    adjudications = traces.named("xai.agent.adjudication")
    assert adjudications and all(s.parent is None for s in adjudications)
    decided = sum(attrs(s)["xai.adjudication.decisions"] for s in adjudications)
    added = sum(attrs(s).get("xai.adjudication.add", 0) for s in adjudications)
    assert decided == added >= 1
    assert attrs(adjudications[0])["gen_ai.agent.id"] == agent.id


async def test_a_fact_remembered_from_outside_a_session_is_traced_as_an_adjudication(
    traces: Traces, tmp_path: Path
) -> None:
    """``Agent.remember`` (what the MCP server's ``remember`` calls) decides like a closing
    Session does, so its decision is in a trace too."""
    async with Agent(tmp_path / "agent", ScriptedProvider([]), telemetry=traces.telemetry) as agent:
        decisions = await agent.remember("The user's cat is called Miso.", source="mcp")
    (span,) = traces.named("xai.agent.adjudication")
    assert span.parent is None
    assert attrs(span)["xai.session.id"] == "mcp"
    assert attrs(span)["xai.adjudication.candidates"] == 1
    assert attrs(span)["xai.adjudication.decisions"] == len(decisions) == 1
    assert attrs(span)["gen_ai.agent.id"] == agent.id


async def test_the_users_own_span_is_the_parent_of_a_turn(traces: Traces) -> None:
    provider = ScriptedProvider([Reply(text="hi")])
    tracer = traces.tracer_provider.get_tracer("app")
    async with Session(provider, telemetry=traces.telemetry) as session:
        with tracer.start_as_current_span("request from the app"):
            handle = session.send("hello")
        await handle
    app = traces.one("request from the app")
    turn = traces.one("xai.session.turn")
    assert turn.parent is not None and app.context is not None
    assert turn.parent.span_id == app.context.span_id


async def test_the_extraction_span_says_what_the_turn_did_to_the_mood(traces: Traces) -> None:
    """With mood (issue 30), the extraction span carries where the turn's delta came from
    and the user's valence change."""
    provider = ScriptedProvider()

    def respond(body: Mapping[str, Any]) -> Reply | None:
        return extraction_responder(body) or Reply(text="glad to hear it")

    provider.script.add_responder(respond)
    system = SystemPrompt(mood=MoodSeed(state=MoodState()))
    config = SessionConfig(extract_memory=True)
    async with Session(provider, config=config, system=system, telemetry=traces.telemetry) as s:
        await s.send("Thank you, this is wonderful news!")
    (extraction,) = traces.named("xai.session.extraction")
    assert attrs(extraction)["xai.mood.source"] == "lexicon"  # the reply had no mood
    assert attrs(extraction)["xai.mood.user_valence_delta"] > 0
