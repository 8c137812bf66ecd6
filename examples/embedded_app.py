"""An ASGI app whose event loop hosts an Agent, with xai's web page mounted at ``/xai/``.

The Agent (on an ``AgentHost``, with its wake-up scheduler) lives as long as the app: it
starts in the app's lifespan and closes with it, so every conversation is remembered on
shutdown. The app's own routes use the Agent directly; xai's page and API
(``xai.serve.create_app``) are mounted beside them over the same Agent. Offline by default
(xai's OpenAI-wire test server plays a scripted model); set LLM_API_KEY, LLM_BASE_URL and
LLM_MODEL for a real one.

    python examples/embedded_app.py            # then open http://127.0.0.1:8000
    XAI_AGENT_DIR=app-agents python examples/embedded_app.py   # keep the Agent in ./app-agents

Endpoints: ``GET /`` redirects to xai's page at ``/xai/``; ``POST /sessions`` opens a
Session; ``GET /chat?session=ID&message=TEXT`` streams the answer as Server-Sent Events
(``text``, ``tool``, ``done``); ``GET /memory`` lists what is remembered.
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
from starlette.responses import JSONResponse, RedirectResponse, Response, StreamingResponse
from starlette.routing import Mount, Route

from xai import LLMConfig, OpenAIProvider, serve
from xai.agent import AgentHost, OpenSession
from xai.events import TextDelta, ToolCallFinished, TurnDone, TurnStarted
from xai.exceptions import SessionClosedError

AGENT = "main"
"""The app's Agent: the one xai's page shows when the address names none."""


def sse(kind: str, data: Any) -> bytes:
    return f"event: {kind}\ndata: ".encode() + msgspec.json.encode(data) + b"\n\n"


def create_app(root: Path, config: LLMConfig | None = None) -> Starlette:
    """The app over Agents under ``root``; ``config`` None means: LLM_* if set, else the
    offline scripted model."""
    state: dict[str, AgentHost] = {}

    @asynccontextmanager
    async def hosting() -> AsyncIterator[serve.Backend]:
        async with AsyncExitStack() as stack:
            llm = config or LLMConfig.from_env()
            if not llm.is_configured:
                from xai.testing import OpenAIWireServer, demo_model

                server = await stack.enter_async_context(OpenAIWireServer())
                server.script.add_responder(demo_model)
                llm = server.llm_config()
            provider = await stack.enter_async_context(OpenAIProvider(llm))
            host = await stack.enter_async_context(AgentHost(root, lambda _: provider))
            state["host"] = host
            yield serve.LocalBackend(host)  # leaving closes every Session (memory adjudicated)

    gateway = serve.create_app(hosting)  # xai's page and API

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        async with serve.running(gateway):  # a mounted app's lifespan is the mounting app's to run
            yield

    async def open_session(request: Request) -> Response:
        info = await state["host"].open_session(AGENT, OpenSession(purpose="a browser chat"))
        return JSONResponse({"session": info.session_id})

    async def chat(request: Request) -> Response:
        message = request.query_params.get("message", "").strip()
        agent = await state["host"].agent(AGENT)
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
        facts = await state["host"].facts(AGENT)
        return JSONResponse(
            [{"id": f.id, "text": f.text, "tier": f.tier, "count": f.count} for f in facts]
        )

    async def home(request: Request) -> Response:
        return RedirectResponse(request.url_for("xai", path="/"))

    return Starlette(
        routes=[
            Route("/", home),
            Route("/sessions", open_session, methods=["POST"]),
            Route("/chat", chat),
            Route("/memory", memory),
            Mount("/xai", app=gateway, name="xai"),  # the page at /xai/, its API under it
        ],
        lifespan=lifespan,
    )


def main() -> None:
    import uvicorn

    port = int(os.environ.get("PORT", "8000"))
    with tempfile.TemporaryDirectory(prefix="xai-app-") as tmp:
        kept = os.environ.get("XAI_AGENT_DIR")
        root = Path(kept or tmp)
        print(f"Agents under: {root}; open http://127.0.0.1:{port}")
        if not kept:
            print("(temporary, removed when the app stops; set XAI_AGENT_DIR to keep the Agent)")
        uvicorn.run(create_app(root), host="127.0.0.1", port=port)


if __name__ == "__main__":
    main()
