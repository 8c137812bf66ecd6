"""One life of the streamed kill -9 campaign (see ``test_kill_campaign.py``).

Like ``campaign_child``, but through an ``AgentHost`` with a reader on every Session's
event stream, as an SSE client would read it: each reader resumes after the last event
id it recorded (``Last-Event-ID``) and records every event it is given. A life dies
from outside at a random moment, or from inside: in the fsync at the end of a turn
(``fsync``: the journal says the turn ended, nothing announced it yet), or, its journals
synced after every record, in the fsync of a committed message (``message``: the journal
has it, no reader was told).

Written as it happens, each line with one ``O_APPEND`` write:

- ``acks``: ``<session id> <input id>`` once ``submit`` returned (the input is on disk);
- ``sessions``: every Session id opened;
- ``reads/<session id>``: ``<seq> <type> <journal position>`` for each event a reader got
  (``-`` for an event no journal record backs; a reader resumes after the last seq);
- ``lives``: ``up <life>`` once the host runs, ``fsync <life>`` (``message <life>``) as it
  dies in the fsync,
  ``final-done`` at the very end.
"""

from __future__ import annotations

import os
import random
import signal
from contextlib import aclosing
from pathlib import Path
from typing import TYPE_CHECKING

import anyio

from tests.campaign_child import _until_idle, log
from tests.stream_crash_child import line
from xai.agent import AgentConfig, AgentHost, OpenSession, _streams
from xai.config import EmbeddingConfig, LLMConfig
from xai.events import SessionClosed
from xai.exceptions import SessionClosedError
from xai.memory import OpenAIEmbedder
from xai.providers import OpenAIProvider, RetryPolicy
from xai.session import JournalEvent, SessionConfig, journal_events
from xai.tools import ToolContext

if TYPE_CHECKING:
    from _typeshed import HasFileno

AGENT = "ada"
MAX_SESSIONS = 3
_fsync = os.fsync
_dying: list[str] = []  # the line the life writes to ``lives`` as it dies in the fsync
_dies_at = [b'"kind":"turn_end"']  # what the journal's last record holds then


def _dying_fsync(fd: int | HasFileno) -> None:
    """Die inside the fsync of a journal whose last record is what ``_dies_at`` says."""
    number = fd if isinstance(fd, int) else fd.fileno()
    path = os.readlink(f"/proc/self/fd/{number}")
    if path.endswith("journal.jsonl"):
        with open(path, "rb") as f:
            if _dies_at[0] in f.read().splitlines()[-1]:
                log(Path(_dying[0]), _dying[1])
                os.kill(os.getpid(), signal.SIGKILL)
    _fsync(fd)


def run_life(directory: str, base_url: str, life: int, seed: int, how: str) -> None:
    """The entry point of a forked child. ``how``: ``random`` (killed from outside),
    ``fsync`` (dies in an end-of-turn fsync), ``message`` (dies in a message's fsync),
    ``final`` (finishes and closes)."""
    anyio.run(_life, Path(directory), base_url, life, seed, how)


def _lines(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


async def _read(host: AgentHost, root: Path, session_id: str) -> None:
    """Follow one Session's stream from after the last event recorded, to its close."""
    record = root / "reads" / session_id
    seen = _lines(record)
    after = int(seen[-1].split()[0]) if seen else 0
    try:
        events = await host.events(AGENT, session_id, after)
    except SessionClosedError:
        return  # closed, and its stream no longer kept: nothing left to read
    async with aclosing(events):
        async for event in events:
            log(record, line(event))
            if isinstance(event.event, SessionClosed):
                return


def _count_retold(root: Path) -> None:
    """Record in ``retold`` (a line per stream taken up again) the events a stream reads
    back from the journal for its readers: those a kill left untold."""

    def counted(path: Path, after: int, upto: int) -> list[JournalEvent]:
        events = journal_events(path, after, upto)
        if events:
            log(root / "retold", " ".join(str(e.event.__struct_config__.tag) for e in events))
        return events

    _streams.journal_events = counted  # type: ignore[attr-defined]


async def _life(root: Path, base_url: str, life: int, seed: int, how: str) -> None:
    rng = random.Random(seed * 1_000 + life)
    (root / "reads").mkdir(exist_ok=True)
    _count_retold(root)

    async def work(ctx: ToolContext[object], tag: str) -> str:
        """Slow work the model asks for (``tag`` names it)."""
        await anyio.sleep(random.uniform(0.05, 0.3))
        return f"worked on {tag}"

    llm = LLMConfig(model="m", base_url=base_url, api_key="k", max_retries=0)
    embedder = OpenAIEmbedder(EmbeddingConfig(model="e", base_url=base_url, api_key="k"))
    config = AgentConfig(
        session=SessionConfig(
            extract_memory=True,
            delegation=False,
            hook_timeout=10.0,
            fsync="commit" if how == "message" else "turn",
        ),
        sync_ledger=False,
    )
    retry = RetryPolicy(max_retries=3, initial_delay=0.01, max_delay=0.05)
    try:
        async with (
            OpenAIProvider(llm, retry=retry) as provider,
            AgentHost(
                root / "agents", lambda _: provider, embedder=embedder, config=config, tools=[work]
            ) as host,
            anyio.create_task_group() as readers,
        ):
            agent = await host.agent(AGENT)  # (its start reopens what the last life left)
            events = agent.events(buffer=100_000)
            directories = (root / "agents" / AGENT / "sessions").glob("*/")
            known = [p.name for p in directories if p.is_dir()]
            for session_id in dict.fromkeys([*_lines(root / "sessions"), *known]):
                readers.start_soon(_read, host, root, session_id)
            for session in agent.sessions.values():
                if session.interrupted_turn:
                    session.continue_turn()
            if how in ("fsync", "message"):
                _dying[:] = [str(root / "lives"), f"{how} {life}"]
                if how == "message":
                    _dies_at[:] = [b'"kind":"message"']
                os.fsync = _dying_fsync
            log(root / "lives", f"up {life}")
            if how == "final":
                await _until_idle(agent, events)
                for session_id in list(agent.sessions):
                    await host.close_session(AGENT, session_id)
                return  # (the readers end at their Sessions' close)
            for step in range(1_000):
                await _step(host, readers, rng, root, step)
                await anyio.sleep(rng.uniform(0.0, 0.15))
            await anyio.sleep_forever()
    finally:
        await embedder.aclose()
        if how == "final":
            log(root / "lives", "final-done")


async def _step(
    host: AgentHost, readers: anyio.abc.TaskGroup, rng: random.Random, root: Path, step: int
) -> None:
    agent = await host.agent(AGENT)
    sessions = list(agent.sessions.values())
    roll = rng.random()
    if not sessions or (roll < 0.3 and len(sessions) < MAX_SESSIONS):
        info = await host.open_session(AGENT, OpenSession(purpose=f"campaign {step}"))
        log(root / "sessions", info.session_id)
        readers.start_soon(_read, host, root, info.session_id)
        return
    session = rng.choice(sessions)
    if roll < 0.4 and len(sessions) > 1:
        idle = [s for s in sessions if not s.busy and not s.pending_inputs]
        if idle:
            await host.close_session(AGENT, rng.choice(idle).id)
            return
    for _ in range(rng.randint(1, 3)):
        kind = rng.choice(["plain", "tool", "tools2"])
        input_id = await host.submit(AGENT, session.id, f"{kind}:{step}:{rng.randrange(10**6)}")
        log(root / "acks", f"{session.id} {input_id}")
