"""One life of the kill -9 campaign's Agent (see ``test_kill_campaign.py``).

A life starts the Agent on the campaign's directory (which resumes what the
previous, killed life left), continues every turn that a kill interrupted,
and then does random work — opens Sessions, queues inputs (some asking for
slow tools, some for two at once), closes Sessions — until it is killed.
The last life (``final``) does no new work: it lets everything acknowledged
finish and closes the Agent, so every candidate gets decided.

What the parent checks afterwards is written here as it happens, each line
with one ``O_APPEND`` write (a kill never tears a line):

- ``acks``: ``<session id> <input id>`` once ``send()`` has returned, i.e. the
  Session acknowledged the input;
- ``tools``: ``start <call id>`` / ``done <call id>`` around each tool run;
- ``lives``: ``up <life>`` once the Agent runs, ``final-done`` at the very end;
- ``decisions``: ``<call id> approve|deny|edit`` once ``approvals.decide()`` has returned
  (the decision is journaled). Calls of the ``guarded`` tool wait for a person: a decider
  task of each life decides them after a random delay (so kills fall while they wait,
  while a decision is written and while the approved tool runs), each call always the
  same way (a life that redecides a call after a kill decides as the last one did).
"""

from __future__ import annotations

import hashlib
import json
import os
import random
from pathlib import Path

import anyio

from xai.agent import Agent, AgentConfig
from xai.config import EmbeddingConfig, LLMConfig
from xai.events import AgentEvent, ApprovalRequested, TurnDone
from xai.exceptions import SessionClosedError
from xai.memory import OpenAIEmbedder
from xai.providers import OpenAIProvider, RetryPolicy
from xai.session import Session, SessionConfig, SessionState, Subscription
from xai.tools import ToolContext, tool

MAX_SESSIONS = 3
FEELINGS = ("", "", " great, thanks so much!", " this is awful and I hate it.")
"""Said after some inputs: each moves the user's mood (a delta journaled with its turn)."""


def log(path: Path, line: str) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, f"{line}\n".encode())
    finally:
        os.close(fd)


def run_life(directory: str, base_url: str, life: int, seed: int, final: bool) -> None:
    """The entry point of a forked child."""
    anyio.run(_life, Path(directory), base_url, life, seed, final)


async def _life(root: Path, base_url: str, life: int, seed: int, final: bool) -> None:
    rng = random.Random(seed * 1_000 + life)

    async def work(ctx: ToolContext[object], tag: str) -> str:
        """Slow work the model asks for (``tag`` names it)."""
        call_id = ctx.call_id
        log(root / "tools", f"start {call_id}")
        await anyio.sleep(random.uniform(0.05, 0.3))
        log(root / "tools", f"done {call_id}")
        return f"worked on {tag}"

    @tool(needs_approval=True)
    async def guarded(ctx: ToolContext[object], tag: str) -> str:
        """Work that a person approves first."""
        log(root / "tools", f"start {ctx.call_id} guarded {tag}")
        await anyio.sleep(random.uniform(0.05, 0.3))
        log(root / "tools", f"done {ctx.call_id}")
        return f"guarded {tag}"

    llm = LLMConfig(model="m", base_url=base_url, api_key="k", max_retries=0)
    embedder = OpenAIEmbedder(EmbeddingConfig(model="e", base_url=base_url, api_key="k"))
    config = AgentConfig(
        session=SessionConfig(extract_memory=True, delegation=False, hook_timeout=10.0),
        sync_ledger=False,  # a kill -9 keeps the page cache: durability is not what is tested
    )
    retry = RetryPolicy(max_retries=3, initial_delay=0.01, max_delay=0.05)
    try:
        async with (
            OpenAIProvider(llm, retry=retry) as provider,
            Agent(
                root / "agent", provider, tools=[work, guarded], embedder=embedder, config=config
            ) as agent,
            anyio.create_task_group() as group,
        ):
            group.start_soon(_decider, agent, rng, root, final)
            events = agent.events(buffer=100_000)
            for session in agent.sessions.values():
                if session.interrupted_turn:
                    session.continue_turn()
            log(root / "lives", f"up {life}")
            if final:
                await _until_idle(agent, events)
                group.cancel_scope.cancel()
                return
            for step in range(1_000):
                await _step(agent, rng, root, step)
                await anyio.sleep(rng.uniform(0.0, 0.15))
            await anyio.sleep_forever()
    finally:
        await embedder.aclose()
        if final:
            log(root / "lives", "final-done")


async def _step(agent: Agent, rng: random.Random, root: Path, step: int) -> None:
    sessions = list(agent.sessions.values())
    roll = rng.random()
    if not sessions or (roll < 0.15 and len(sessions) < MAX_SESSIONS):
        await agent.open_session(f"campaign {step}")
        return
    session = rng.choice(sessions)
    if roll < 0.22 and len(sessions) > 1:
        idle = [
            s
            for s in sessions
            if not s.busy and not s.pending_inputs and s.state is not SessionState.WAITING
        ]
        if idle:  # closing drops queued inputs by design: only idle Sessions are closed
            await rng.choice(idle).close()
            return
    for _ in range(rng.randint(1, 3)):
        kind = rng.choice(["plain", "tool", "tool", "tools2", "approve", "mixed"])
        feeling = rng.choice(FEELINGS)
        _send(session, root, f"{kind}:{step}:{rng.randrange(10**6)}{feeling}")


def _send(session: Session, root: Path, text: str) -> None:
    handle = session.send(text)
    assert handle.input is not None
    log(root / "acks", f"{session.id} {handle.input.id}")


async def _until_idle(agent: Agent, events: Subscription[AgentEvent]) -> None:
    """Wait until no Session runs a turn or holds a queued input."""

    def idle() -> bool:
        return not any(
            s.busy or s.pending_inputs or s.state is SessionState.WAITING
            for s in agent.sessions.values()
        )

    with anyio.fail_after(60):
        while not idle():
            async for event in events:
                if isinstance(event.event, TurnDone) and idle():
                    break


def verdict(call_id: str) -> str:
    """How a call is decided: always the same for one call, whichever life decides it."""
    return ("approve", "deny", "edit")[hashlib.sha256(call_id.encode()).digest()[0] % 3]


async def _decider(agent: Agent, rng: random.Random, root: Path, final: bool) -> None:
    """A person: decides each held call after a while (the final life as each is asked)."""
    events = agent.events(buffer=100_000)
    while True:
        if not final:
            await anyio.sleep(rng.uniform(0.0, 0.3))
        _decide_all(agent, root)
        if final:
            async for event in events:
                if isinstance(event.event, ApprovalRequested):
                    break


def _decide_all(agent: Agent, root: Path) -> None:
    for session in list(agent.sessions.values()):
        for pending in session.approvals.pending():
            call = pending.call
            how = verdict(call.id)
            arguments = None
            if how == "edit":
                tag = json.loads(call.arguments)["tag"]
                arguments = {"tag": f"{tag}/edited"}
            try:
                session.approvals.decide(
                    call.id, approved=how != "deny", arguments=arguments, reason="campaign"
                )
            except SessionClosedError:
                continue
            log(root / "decisions", f"{call.id} {how}")
