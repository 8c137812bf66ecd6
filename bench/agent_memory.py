"""The Agent's memory write path on LoCoMo: Sessions closing through a real Agent.

Each LoCoMo conversation gets a fresh Agent (a ``ScriptedProvider`` playing the
offline eval model, ``xai/eval/_scripted.py``: each user turn of three words or
more becomes a candidate, verbatim, its message id as evidence; offline MiniLM;
real chromadb; the Agent's default durability: journals synced per turn, every
decision synced before its candidates are acknowledged). Each dataset session is
played as one Agent Session (every turn sent with its speaker's name) and closed:
the closing records its episodes and waits until its candidates are decided. At
the end ``memory.index_episodes()`` embeds the episodes, and the Agent closes (the
time includes its close: every queued job decided). One run plays every
conversation twice, interleaved:

- ``memory``: as above (extraction on: the Agent adjudicates what it learns);
- ``turns``: the same Sessions with memory extraction off and no episode
  indexing (the Session and Agent machinery alone: turns, journals, closing).

``memory_s - turns_s`` is what the memory adds: its extraction requests, the
adjudication, the ledger and the index writes, the episodes recorded and indexed.

Reported against ``embedded_per_s``: every text the memory has to embed (the
candidates' texts and the episodes' ``speaker: text``) embedded in one call by the
same model right after each conversation's memory run (its default batches; no
cache anywhere, so nothing is reused by luck), as candidates per second:

- ``adjudicated_per_s`` = candidates / (``memory_s`` - ``turns_s``), and
  ``adjudication_ratio`` = that / ``embedded_per_s`` (the goal: >= 0.8);
- ``end_to_end_per_s`` = candidates / ``memory_s`` and ``end_to_end_ratio``.

    python bench/agent_memory.py                       # conversations 0 and 1
    python bench/agent_memory.py --conversations 0 1 2
    python bench/agent_memory.py --sessions 3      # the first 3 sessions of each
    python bench/agent_memory.py --profile             # cProfile of the memory runs

The last line of output is one JSON object with the figures.
"""

from __future__ import annotations

import argparse
import cProfile
import datetime as dt
import io
import json
import os
import pstats
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Literal

import anyio
import msgspec

from xai.agent import Agent, AgentConfig
from xai.eval import EvalModel, EvalSample, load_locomo
from xai.memory import LocalMiniLM, MemoryConfig, session_date
from xai.messages import UserMessage
from xai.session import SessionConfig
from xai.testing import ScriptedProvider

DATA = Path(os.environ.get("LOCOMO", "/work/shared/data/locomo10.json"))

Mode = Literal["memory", "turns"]


class _Clock:
    """The Agent's clock: the dataset time of the turn being played."""

    def __init__(self) -> None:
        self.at = time.time()

    def now(self) -> float:
        return self.at

    async def sleep_until(self, deadline: float) -> None:
        await anyio.sleep(max(0.0, deadline - time.time()))


def _start_of(date: str) -> float | None:
    day = session_date(date)
    if day is None:
        return None
    return dt.datetime.combine(day, dt.time(12), dt.UTC).timestamp()


async def play(
    sample: EvalSample, directory: Path, embedder: LocalMiniLM, mode: Mode
) -> tuple[float, Counter[str], list[str]]:
    """Every dataset session of ``sample`` through one Agent; (seconds, decision counts,
    the texts the memory embedded)."""
    model = EvalModel()
    provider = ScriptedProvider()
    provider.script.add_responder(model)
    clock = _Clock()
    # A closing Session waits for its candidates however long a loaded machine takes.
    base = SessionConfig(extract_memory=mode == "memory", hook_timeout=3600.0)
    config = AgentConfig(session=base, memory=MemoryConfig(use_judge=False), memory_tool=False)
    agent = Agent(directory, provider, embedder=embedder, clock=clock, config=config)
    async with agent:
        start = time.perf_counter()
        for session in sample.sessions:
            began = _start_of(session.date) or time.time()
            live = await agent.open_session(f"conversation of {session.date or session.id}")
            try:
                for i, message in enumerate(session.messages):
                    clock.at = began + i
                    name = None if message.speaker.lower() == "user" else message.speaker
                    await live.send(UserMessage(id=message.id, content=message.text, name=name))
            finally:
                await live.close()  # finalising: episodes recorded, candidates decided
        if mode == "memory":
            await agent.memory.index_episodes()
    seconds = time.perf_counter() - start  # the Agent's close waits for every queued job
    decisions = agent.memory.ledger()
    counts: Counter[str] = Counter(d.kind for d in decisions)
    texts = [d.candidate.text for d in decisions if d.candidate is not None]
    texts += [f"{e.speaker}: {e.text}" for e in agent.memory.episodes]  # as indexed
    return seconds, counts, texts


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--conversations", type=int, nargs="*", default=[0, 1])
    parser.add_argument("--sessions", type=int, default=None, help="the first N of each")
    parser.add_argument("--profile", action="store_true")
    args = parser.parse_args()
    samples = load_locomo(args.data)
    samples = [
        msgspec.structs.replace(samples[i], sessions=samples[i].sessions[: args.sessions])
        for i in args.conversations
    ]

    embedder = LocalMiniLM(cache_size=0)
    embedder.embed_sync(["warm up the model"] * 8)
    baseline = LocalMiniLM(cache_size=0)
    baseline.embed_sync(["warm up the model"] * 8)
    seconds: dict[Mode, float] = {"memory": 0.0, "turns": 0.0}
    embedded_s = 0.0
    counts: Counter[str] = Counter()
    texts = 0
    profile = cProfile.Profile() if args.profile else None
    with tempfile.TemporaryDirectory(prefix="xai-agent-memory-") as tmp:
        for n, sample in enumerate(samples):
            for mode in ("turns", "memory"):
                if profile is not None and mode == "memory":
                    profile.enable()
                took, got, said = await play(sample, Path(tmp) / f"{n}-{mode}", embedder, mode)
                if profile is not None and mode == "memory":
                    profile.disable()
                seconds[mode] += took
                print(f"{sample.id} {mode}: {took:.1f} s, {dict(got)}", flush=True)
                if mode == "memory":
                    counts.update(got)
                    texts += len(said)
                    # The baseline right after, on the same texts: the load of a shared
                    # machine drifts, and both figures meet the same drift.
                    start = time.perf_counter()
                    baseline.embed_sync(said)
                    embedded_s += time.perf_counter() - start
    if profile is not None:
        out = io.StringIO()
        pstats.Stats(profile, stream=out).sort_stats("tottime").print_stats(40)
        print(out.getvalue())

    candidates = sum(v for k, v in counts.items() if k != "promote")
    embedded_per_s = candidates / embedded_s
    memory_s = max(seconds["memory"] - seconds["turns"], 1e-9)
    adjudicated_per_s = candidates / memory_s
    end_to_end_per_s = candidates / seconds["memory"]
    print(
        json.dumps(
            {
                "conversations": args.conversations,
                "candidates": candidates,
                "texts_embedded": texts,
                "decisions": dict(sorted(counts.items())),
                "memory_s": round(seconds["memory"], 2),
                "turns_s": round(seconds["turns"], 2),
                "adjudicated_per_s": round(adjudicated_per_s, 1),
                "end_to_end_per_s": round(end_to_end_per_s, 1),
                "embedded_per_s": round(embedded_per_s, 1),
                "adjudication_ratio": round(adjudicated_per_s / embedded_per_s, 3),
                "end_to_end_ratio": round(end_to_end_per_s / embedded_per_s, 3),
                "load_average": os.getloadavg()[0],
            }
        )
    )


if __name__ == "__main__":
    anyio.run(main)
