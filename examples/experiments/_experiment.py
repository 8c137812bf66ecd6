"""What the three runner experiments share: the model (yours when ``LLM_*`` is set, else
the experiment's scripted one over xai's OpenAI-wire server), artifact reading and
Markdown table cells. The experiments run as ``python examples/experiments/NAME.py``,
so ``from _experiment import ...`` finds this file."""

from __future__ import annotations

import json
import os
import sys
import tempfile
from collections.abc import Awaitable, Callable, Mapping
from contextlib import AsyncExitStack, ExitStack
from pathlib import Path
from typing import Any

import anyio

from xai import LLMConfig, OpenAIProvider
from xai.testing import OpenAIWireServer, Reply

__all__ = ["cell", "model", "read_json", "run_experiment"]


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


def run_experiment(main: Callable[[Path, Path], Awaitable[str]], name: str) -> None:
    """Run ``main(outdir, home)`` with a throwaway ``XAI_HOME`` and print its table.

    With a folder argument the table (``NAME.md``) and every run's artifacts stay there;
    without one they go to a temporary folder that is removed at the end.
    """
    with ExitStack() as stack:
        home = stack.enter_context(tempfile.TemporaryDirectory(prefix="xai-home-"))
        os.environ["XAI_HOME"] = home  # nothing below may reach the user's own home
        keep = len(sys.argv) > 1
        out = Path(sys.argv[1] if keep else stack.enter_context(tempfile.TemporaryDirectory()))
        out.mkdir(parents=True, exist_ok=True)
        table = anyio.run(main, out, Path(home))
        (out / f"{name}.md").write_text(table, encoding="utf-8")
        print(table)
        if keep:
            print(f"written to {out / name}.md")
        else:
            print("(give a folder, e.g. out/exp, to keep the table and every run's artifacts)")
