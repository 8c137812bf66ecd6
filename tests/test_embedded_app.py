"""The embedded-app example over real HTTP: an SSE client reads a streamed answer, and xai's
page and API mounted at ``/xai/`` serve the same Agent."""

from __future__ import annotations

import importlib.util
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import httpx
import msgspec
import pytest
import uvicorn
from httpx_sse import connect_sse

ROOT = Path(__file__).resolve().parent.parent


def load_example() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "embedded_app", ROOT / "examples" / "embedded_app.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def app_url(tmp_path: Path) -> Iterator[str]:
    app = load_example().create_app(tmp_path / "agent")
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, log_config=None, lifespan="on", http="h11"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 60
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline, "the app did not start"
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=30)
    # the lifespan closed the Agent: every Session ended and was remembered
    journals = list((tmp_path / "agent").glob("*/sessions/*/journal.jsonl"))
    assert journals and all(b'"kind":"closed"' in j.read_bytes() for j in journals)


def test_chat_streams_server_sent_events(app_url: str) -> None:
    with httpx.Client(base_url=app_url, timeout=30) as client:
        home = client.get("/", follow_redirects=True)  # xai's page, mounted at /xai/
        assert home.url.path == "/xai/" and '<base href="/xai/">' in home.text
        assert client.get("/xai/static/app.js").status_code == 200
        session = client.post("/sessions").json()["session"]
        texts: list[str] = []
        done: dict[str, Any] = {}
        with connect_sse(
            client, "GET", "/chat", params={"session": session, "message": "Hi, I'm Ada"}
        ) as source:
            for event in source.iter_sse():
                if event.event == "text":
                    texts.append(msgspec.json.decode(event.data)["text"])
                elif event.event == "done":
                    done = msgspec.json.decode(event.data)
        assert len(texts) > 1 and "".join(texts) == "Nice to meet you, Ada!"  # streamed in pieces
        assert done["status"] == "completed" and done["text"] == "Nice to meet you, Ada!"
        deadline = time.monotonic() + 60
        while not (memory := client.get("/memory").json()):
            assert time.monotonic() < deadline, "the fact was never remembered"
            time.sleep(0.05)
        assert memory[0]["text"] == "The user's name is Ada."
        # the mounted gateway (its lifespan entered by the app's) serves the same Agent
        facts = client.get("/xai/agents/main/facts").json()
        assert [f["text"] for f in facts] == ["The user's name is Ada."]
        usage = client.get("/xai/agents/main/usage").json()
        assert [s["session_id"] for s in usage["sessions"]] == [session]
        assert client.get("/chat", params={"session": "nope", "message": "x"}).status_code == 404
