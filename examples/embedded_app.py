"""An ASGI app whose event loop hosts an Agent: chat answers stream to the browser as SSE.

The Agent (and its wake-up scheduler) lives as long as the app: it starts in
the lifespan and closes with it, so every conversation is remembered on
shutdown. Offline by default (xai's OpenAI-wire test server plays a scripted
model); set LLM_API_KEY, LLM_BASE_URL and LLM_MODEL for a real one.

    python examples/embedded_app.py            # then open http://127.0.0.1:8000
    XAI_AGENT_DIR=app-agent python examples/embedded_app.py   # keep the Agent in ./app-agent

Endpoints: ``GET /`` a minimal page; ``POST /sessions`` opens a Session;
``GET /chat?session=ID&message=TEXT`` streams the answer as Server-Sent
Events (``text``, ``tool``, ``done``); ``GET /memory`` lists what is remembered.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any

import msgspec
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from xai import LLMConfig, OpenAIProvider
from xai.agent import Agent
from xai.events import TextDelta, ToolCallFinished, TurnDone, TurnStarted
from xai.exceptions import SessionClosedError

PAGE = """<!doctype html>
<meta charset="utf-8"><title>xai chat</title>
<style>body{font:16px system-ui;max-width:40em;margin:2em auto}#log p{white-space:pre-wrap}</style>
<h1>xai chat</h1><div id="log"></div>
<form id="f"><input id="m" size="50" autofocus placeholder="Say something"><button>Send</button></form>
<script>
let session = null;
const log = document.getElementById("log");
document.getElementById("f").onsubmit = async (e) => {
  e.preventDefault();
  const input = document.getElementById("m"), text = input.value; input.value = "";
  if (!session) session = (await (await fetch("/sessions", {method: "POST"})).json()).session;
  log.insertAdjacentHTML("beforeend", "<p><b>you:</b> </p>");
  log.lastChild.append(text);
  const answer = document.createElement("p"); answer.innerHTML = "<b>assistant:</b> "; log.append(answer);
  const url = `/chat?session=${session}&message=${encodeURIComponent(text)}`;
  const source = new EventSource(url);
  source.addEventListener("text", (ev) => answer.append(JSON.parse(ev.data).text));
  source.addEventListener("done", () => source.close());
};
</script>"""


def sse(kind: str, data: Any) -> bytes:
    return f"event: {kind}\ndata: ".encode() + msgspec.json.encode(data) + b"\n\n"


def create_app(agent_dir: Path, config: LLMConfig | None = None) -> Starlette:
    """The app; ``config`` None means: LLM_* if set, else the offline scripted model."""
    state: dict[str, Agent] = {}

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        async with AsyncExitStack() as stack:
            llm = config or LLMConfig.from_env()
            if not llm.is_configured:
                from xai.testing import OpenAIWireServer, demo_model

                server = await stack.enter_async_context(OpenAIWireServer())
                server.script.add_responder(demo_model)
                llm = server.llm_config()
            provider = await stack.enter_async_context(OpenAIProvider(llm))
            state["agent"] = await stack.enter_async_context(Agent(agent_dir, provider))
            yield  # the app serves; leaving closes every Session (memory adjudicated)

    async def page(request: Request) -> Response:
        return HTMLResponse(PAGE)

    async def open_session(request: Request) -> Response:
        session = await state["agent"].open_session("a chat in the browser")
        return JSONResponse({"session": session.id})

    async def chat(request: Request) -> Response:
        agent = state["agent"]
        message = request.query_params.get("message", "").strip()
        try:
            session = agent.session(request.query_params.get("session", ""))
        except SessionClosedError:
            return JSONResponse({"error": "no such session"}, status_code=404)
        if not message:
            return JSONResponse({"error": "message is empty"}, status_code=400)
        events = session.events()  # subscribe before sending: nothing is missed
        input_id = session.send(message).input.id  # type: ignore[union-attr]

        async def stream() -> AsyncIterator[bytes]:
            ours = False  # only this request's turn (another request may share the Session)
            async for event in events:
                body = event.event
                if isinstance(body, TurnStarted):
                    ours = body.input is not None and body.input.id == input_id
                if not ours:
                    continue
                if isinstance(body, TextDelta):
                    yield sse("text", {"text": body.text})
                elif isinstance(body, ToolCallFinished):
                    yield sse("tool", {"name": body.result.tool_name, "ok": body.result.success})
                elif isinstance(body, TurnDone) and body.outcome.input_id == input_id:
                    yield sse("done", msgspec.to_builtins(body.outcome))
                    return

        return StreamingResponse(stream(), media_type="text/event-stream")

    async def memory(request: Request) -> Response:
        facts = state["agent"].memory.facts()
        return JSONResponse(
            [{"id": f.id, "text": f.text, "tier": f.tier, "count": f.count} for f in facts]
        )

    return Starlette(
        routes=[
            Route("/", page),
            Route("/sessions", open_session, methods=["POST"]),
            Route("/chat", chat),
            Route("/memory", memory),
        ],
        lifespan=lifespan,
    )


def main() -> None:
    import uvicorn

    port = int(os.environ.get("PORT", "8000"))
    with tempfile.TemporaryDirectory(prefix="xai-app-") as tmp:
        kept = os.environ.get("XAI_AGENT_DIR")
        directory = Path(kept or tmp)
        print(f"Agent directory: {directory}; open http://127.0.0.1:{port}")
        if not kept:
            print("(temporary, removed when the app stops; set XAI_AGENT_DIR to keep the Agent)")
        uvicorn.run(create_app(directory), host="127.0.0.1", port=port)


if __name__ == "__main__":
    main()
