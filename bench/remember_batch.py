"""Concurrent MCP ``remember`` calls: queued behind one adjudication pass, against each
deciding alone (issue 33, item 7: 30 concurrent calls took 218 s against ``xai serve``).

One fresh Agent per run (real chromadb, offline MiniLM, the ledger fsynced as a served
Agent's is; rules adjudication, ``use_judge=False``, so the figure is the memory's own
cost and not a model's). ``N`` distinct facts are sent at once:

- ``batched_s``: through the MCP server's ``remember`` tool (in-process client), which
  queues each request on the Agent's adjudication: the requests that arrive together are
  decided in one ``adjudicate`` call.
- ``alone_s`` (the baseline, what ``remember`` did before): the same facts, each in its
  own concurrent ``adjudicate`` call, as each request used to run.

    python bench/remember_batch.py [--n 30]

The last line is one JSON object; ``speedup_ratio`` is ``alone_s / batched_s``.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

import anyio
from mcp import Client

from xai.agent import Agent, AgentConfig
from xai.mcp import agent_mcp_server
from xai.memory import MemoryConfig, local_minilm
from xai.messages import MemoryCandidate, new_id
from xai.testing import ScriptedProvider

THINGS = [
    "cat is called Miso", "sister lives in Porto", "favourite colour is teal",
    "commute takes 30 minutes", "works as a nurse", "plays the cello on Sundays",
    "is allergic to peanuts", "drives a blue Fiat", "learns Japanese", "runs 10 km on Fridays",
    "grew up in Leeds", "has two daughters", "reads science fiction", "hates cilantro",
    "brews coffee with an Aeropress", "keeps bees", "supports Benfica", "sleeps at 23:00",
    "climbs on Wednesdays", "owns a 3D printer", "collects stamps", "studied chemistry",
    "is vegetarian", "dances salsa", "paints watercolours", "rides a road bike",
    "bakes sourdough", "watches Formula 1", "volunteers at a library", "speaks Greek",
]  # fmt: skip


def texts(n: int) -> list[str]:
    return [f"The user {THINGS[i % len(THINGS)]} ({i // len(THINGS)})." for i in range(n)]


def config() -> AgentConfig:
    return AgentConfig(memory=MemoryConfig(use_judge=False))


async def batched(root: Path, facts: list[str]) -> tuple[float, int]:
    embedder = local_minilm()
    async with Agent(root, ScriptedProvider([]), embedder=embedder, config=config()) as agent:
        await agent.memory.search("warm up", 1)  # the index and the query model are open
        async with Client(agent_mcp_server(agent)) as client:
            started = time.perf_counter()
            async with anyio.create_task_group() as group:
                for text in facts:
                    group.start_soon(client.call_tool, "remember", {"text": text})
            took = time.perf_counter() - started
        return took, len(agent.memory.facts())


async def alone(root: Path, facts: list[str]) -> tuple[float, int]:
    embedder = local_minilm()
    async with Agent(root, ScriptedProvider([]), embedder=embedder, config=config()) as agent:
        await agent.memory.search("warm up", 1)

        async def one(text: str) -> None:
            candidate = MemoryCandidate(
                text=text, kind="fact", confidence=0.9, evidence=(f"mcp:{new_id()}",),
                session_id="mcp", created_at=time.time(),
            )  # fmt: skip
            await agent.adjudication.decide((candidate,), "mcp")

        started = time.perf_counter()
        async with anyio.create_task_group() as group:
            for text in facts:
                group.start_soon(one, text)
        took = time.perf_counter() - started
        return took, len(agent.memory.facts())


async def main(n: int) -> None:
    facts = texts(n)
    with tempfile.TemporaryDirectory() as tmp:
        alone_s, alone_facts = await alone(Path(tmp) / "alone", facts)
        batched_s, batched_facts = await batched(Path(tmp) / "batched", facts)
    print(f"{n} concurrent remember calls (rules adjudication, fsynced ledger)")
    print(f"  each decided alone (before): {alone_s:7.2f} s  ({alone_facts} facts)")
    print(f"  queued, one pass (now):      {batched_s:7.2f} s  ({batched_facts} facts)")
    figures = {
        "calls": n,
        "alone_s": round(alone_s, 3),
        "batched_s": round(batched_s, 3),
        "alone_facts": alone_facts,
        "batched_facts": batched_facts,
        "speedup_ratio": round(alone_s / batched_s, 2) if batched_s else None,
    }
    print(json.dumps(figures))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=30)
    anyio.run(main, parser.parse_args().n)
