"""Telemetry end to end and at zero: spans exported over real OTLP/HTTP to a receiver in the
test, and no OpenTelemetry at all when tracing is off."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import anyio
import pytest
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

from xai.session import Session
from xai.telemetry import Telemetry
from xai.testing import Reply, ScriptedCall, ScriptedProvider


class Receiver:
    """An OTLP/HTTP trace receiver on 127.0.0.1: keeps each decoded export request."""

    def __init__(self) -> None:
        self.requests: list[ExportTraceServiceRequest] = []
        self.content_types: list[str] = []
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                request = ExportTraceServiceRequest()
                request.ParseFromString(body)
                receiver.requests.append(request)
                receiver.content_types.append(self.headers.get("Content-Type", ""))
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, format: str, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def endpoint(self) -> str:
        host, port = self.server.server_address[:2]
        return f"http://{host!s}:{port}/v1/traces"

    def spans(self) -> list[tuple[str, dict[str, object]]]:
        found = []
        for request in self.requests:
            for resource in request.resource_spans:
                for scope in resource.scope_spans:
                    for span in scope.spans:
                        values: dict[str, object] = {}
                        for kv in span.attributes:
                            value = kv.value
                            kind = value.WhichOneof("value")
                            values[kv.key] = getattr(value, kind) if kind else None
                        found.append((span.name, values))
        return found


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    r = Receiver()
    r.thread.start()
    try:
        yield r
    finally:
        r.server.shutdown()
        r.server.server_close()
        r.thread.join()


@pytest.mark.anyio
async def test_spans_reach_an_otlp_http_receiver(
    receiver: Receiver, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    tracer_provider = TracerProvider(resource=Resource.create({"service.name": "xai-test"}))
    tracer_provider.add_span_processor(
        BatchSpanProcessor(OTLPSpanExporter(endpoint=receiver.endpoint, timeout=10))
    )
    telemetry = Telemetry(tracer_provider=tracer_provider)

    async def lookup(city: str) -> str:
        return f"cold in {city}"

    provider = ScriptedProvider(
        [
            Reply(tool_calls=(ScriptedCall(name="lookup", arguments={"city": "Tromsø"}),)),
            Reply(text="Cold."),
        ]
    )
    async with Session(provider, tools=[lookup], telemetry=telemetry) as session:
        await session.send("weather?")
    # The export runs in the processor's thread: flush it from a worker, not the event loop.
    flushed = await anyio.to_thread.run_sync(tracer_provider.force_flush)
    await anyio.to_thread.run_sync(tracer_provider.shutdown)
    assert flushed
    assert receiver.requests, "nothing reached the receiver"
    assert set(receiver.content_types) == {"application/x-protobuf"}
    names = [name for name, _ in receiver.spans()]
    assert sorted(names) == sorted(
        ["xai.session.turn", "chat scripted", "execute_tool lookup", "chat scripted"]
    )
    chat = next(values for name, values in receiver.spans() if name == "chat scripted")
    assert chat["gen_ai.operation.name"] == "chat"
    assert chat["gen_ai.request.model"] == "scripted"
    resource = receiver.requests[0].resource_spans[0].resource
    assert any(kv.key == "service.name" for kv in resource.attributes)


# -- zero cost when off ---------------------------------------------------------------------------

_QUERY_AND_SESSION = """
import sys
import anyio
import xai
from xai.session import Session
from xai.testing import Reply, ScriptedCall, ScriptedProvider

async def lookup(city: str) -> str:
    return city

async def main() -> None:
    call = Reply(tool_calls=(ScriptedCall(name="lookup", arguments={"city": "x"}),))
    provider = ScriptedProvider([call, Reply(text="a")])
    await xai.Query(provider, tools=[lookup]).run((), "hi")
    provider.push(call, Reply(text="b"))
    async with Session(provider, tools=[lookup]) as session:
        await session.send("hi")

anyio.run(main)
print(json.dumps(sorted(m for m in sys.modules if m.startswith(("opentelemetry", "xai.telemetry")))))
"""

_AGENT = """
import sys, json
import anyio
from xai.agent import Agent
from xai.testing import Reply, ScriptedProvider, hash_embedding

class Embedder:
    name = "hash-64"
    dimension = 64
    async def embed(self, texts):
        return [hash_embedding(t, 64) for t in texts]

async def main() -> None:
    provider = ScriptedProvider()
    async with Agent(sys.argv[1], provider, embedder=Embedder()) as agent:
        session = await agent.open_session("x")
        await session.send("hi")

anyio.run(main)
print(json.dumps(sorted(m for m in sys.modules if m.startswith(("opentelemetry", "xai.telemetry")))))
"""

_CHROMADB = """
import sys, json
import chromadb
chromadb.PersistentClient(sys.argv[1])
print(json.dumps(sorted(m for m in sys.modules if m.startswith("opentelemetry"))))
"""


def _modules(source: str, *args: str) -> list[str]:
    done = subprocess.run(
        [sys.executable, "-c", "import json\n" + textwrap.dedent(source), *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    loaded: list[str] = json.loads(done.stdout.strip().splitlines()[-1])
    return loaded


def test_without_telemetry_a_query_and_a_session_import_no_opentelemetry() -> None:
    assert _modules(_QUERY_AND_SESSION) == []


@pytest.mark.timeout(150)
def test_without_telemetry_an_agent_adds_no_opentelemetry_to_what_chromadb_loads(
    tmp_path: Path,
) -> None:
    # chromadb imports OpenTelemetry itself; xai must add nothing to that.
    agent = _modules(_AGENT, str(tmp_path / "agent"))
    assert "xai.telemetry" not in agent
    baseline = set(_modules(_CHROMADB, str(tmp_path / "chroma")))
    assert set(agent) <= baseline, sorted(set(agent) - baseline)
