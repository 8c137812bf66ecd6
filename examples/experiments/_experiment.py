"""What the three runner experiments share: the model (yours when ``LLM_*`` is set, else
the experiment's scripted one over xai's OpenAI-wire server), artifact reading and
Markdown table cells. The experiments run as ``python examples/experiments/NAME.py``,
so ``from _experiment import ...`` finds this file."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import anyio

from xai import LLMConfig, OpenAIProvider
from xai.testing import OpenAIWireServer, Reply

__all__ = ["cell", "model", "read_json"]


async def model(
    stack: AsyncExitStack, scripted: Callable[[Mapping[str, Any]], Reply | None]
) -> OpenAIProvider:
    """The provider the experiment runs against, closed with ``stack``."""
    config = LLMConfig.from_env()
    if not config.is_configured:
        server = stack.enter_context(OpenAIWireServer())
        server.script.add_responder(scripted)
        config = server.llm_config()
    return await stack.enter_async_context(OpenAIProvider(config))


async def read_json(path: Path) -> Any:
    """An artifact, read without blocking the event loop."""
    return json.loads(await anyio.Path(path).read_text(encoding="utf-8"))


def cell(text: str, limit: int = 90) -> str:
    """``text`` on one line, its pipes escaped, cut to ``limit`` characters."""
    text = " ".join(text.split()).replace("|", "\\|")
    return text if len(text) <= limit else text[: limit - 1] + "…"
