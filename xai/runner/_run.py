"""One runtime input to artifacts, as a thin layer over the Session.

The Session's journal is the checkpoint (``OUTDIR/.checkpoint``): ``--resume``
reopens it, lets the Session repair what the crash left (every unanswered tool
call gets a result), continues the turn the crash interrupted, and sends the
inputs that follow — finished model and tool calls are not repeated. A run that
finishes removes the checkpoint. Its compaction is the history compression; its
memory goes through an Agent (``RunnerMemory``).
"""

from __future__ import annotations

import shutil
import time
from collections.abc import AsyncIterator, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any, NamedTuple

import anyio
import msgspec

from xai._files import write_atomic
from xai.agent import Agent
from xai.config import LLMConfig
from xai.events import Compacted, SessionEvent
from xai.messages import CloseReason, Message, SystemMessage, TurnStatus, Usage
from xai.providers import OpenAIProvider, Provider, to_wire_messages
from xai.query import QueryConfig
from xai.runner._fixture import fixture_decider, load_fixture
from xai.runner._input import RunInput
from xai.runner._memory import RunnerMemory, memory_agent_dir
from xai.runner._report import RunReport, append_line
from xai.runner._templates import choose_template
from xai.runner._trace import TurnTrace, turns_of
from xai.session import (
    JOURNAL_FILE,
    JournalView,
    Session,
    SessionConfig,
    SystemPrompt,
)
from xai.tools import MCPServer, ToolSet

__all__ = ["RunReport", "run_input", "write_atomic"]

CHECKPOINT = ".checkpoint"


class _SessionRun(msgspec.Struct, kw_only=True):
    """What one Session (one template) of a run produced."""

    history: list[Message]
    system: SystemMessage | None
    turns: list[TurnTrace]
    compressions: list[dict[str, Any]]
    usage: Usage
    resumed_from: int
    memory: list[dict[str, Any]]
    unsent: list[int] = msgspec.field(default_factory=list)
    """Inputs (by number) never sent: the resumed Session was closing and takes none."""

    @property
    def ok(self) -> bool:
        return not self.unsent and all(t.status is TurnStatus.COMPLETED for t in self.turns)

    @property
    def status(self) -> str:
        return "success" if self.ok else "failed"

    @property
    def error(self) -> str | None:
        failed = [t for t in self.turns if t.status is not TurnStatus.COMPLETED]
        if failed:
            return failed[0].error
        if self.unsent:
            numbers = ", ".join(map(str, self.unsent))
            return f"input(s) {numbers} not sent: the Session was closing when the run stopped"
        return None

    @property
    def answer(self) -> str:
        return self.turns[-1].answer if self.turns else ""

    @property
    def interrupted_turns(self) -> list[int]:
        return [t.turn for t in self.turns if t.interruptions]


def _messages(system: SystemMessage | None, history: list[Message]) -> list[dict[str, Any]]:
    return to_wire_messages([system, *history] if system is not None else history)


class _Reopened(NamedTuple):
    session: Session
    accepted: int
    """Inputs the journal holds: begun, or accepted and requeued (the Session runs those)."""
    interrupted: bool
    """A turn was running when the process died (the Session ends it as it starts)."""
    closing: CloseReason | None
    """The Session was closing, its candidates not all taken: it only closes again."""


def _reopen(
    directory: Path, provider: Provider, tools: ToolSet, config: SessionConfig
) -> _Reopened:
    """The Session of a checkpoint, and what its journal says (read in a worker thread)."""
    journal = directory / JOURNAL_FILE
    state = JournalView.read(journal)
    session = Session.reopen(directory, provider, tools=tools, config=config, state=state)
    return _Reopened(
        session,
        state.begun_inputs + len(state.pending),
        state.open_turn is not None,
        state.closing,
    )


@asynccontextmanager
async def _owned(
    session: Session,
    agent: Agent | None,
    *,
    purpose: str,
    resumed: bool,
    reason: CloseReason = "closed",
) -> AsyncIterator[list[dict[str, Any]]]:
    """Run ``session``: by itself, or owned by the memory's Agent (which decides its
    candidates); close it for ``reason``. Yields the list that gets this Session's memory
    decisions."""
    decisions: list[dict[str, Any]] = []
    if agent is None:
        async with session:
            yield decisions
            await session.close(reason)
        return
    before = len(agent.memory.ledger())
    await agent.adopt(session, purpose=purpose, resumed=resumed)
    try:
        yield decisions
    except BaseException as exc:
        failed: CloseReason = (
            "cancelled" if isinstance(exc, anyio.get_cancelled_exc_class()) else "error"
        )
        with anyio.CancelScope(shield=True):
            await session.close(failed)
        raise
    await session.close(reason)  # returns once the Agent has decided its candidates
    decisions.extend(
        {
            "decision": d.kind,
            "reason": d.reason,
            "fact_ids": [f.id for f in d.facts],
        }
        for d in agent.memory.ledger()[before:]
        if d.session_id == session.id
    )


async def _one_session(
    inp: RunInput,
    provider: Provider,
    tools: ToolSet,
    system: SystemPrompt,
    directory: Path,
    *,
    resume: bool,
    agent: Agent | None,
    progress: Callable[[str], None],
) -> _SessionRun:
    config = SessionConfig(
        query=QueryConfig(max_rounds=inp.max_turns),
        compaction=inp.compression_enabled,
        context_window=inp.max_context_tokens,
        keep_recent_tokens=max(200, inp.max_context_tokens // 4),
        extract_memory=inp.save_memory != "none",
        fsync="commit",
    )
    journal = directory / JOURNAL_FILE
    resumed_from, interrupted, closing = 0, False, None
    reopened = resume and await anyio.Path(journal).exists()
    if reopened:
        session, resumed_from, interrupted, closing = await anyio.to_thread.run_sync(
            _reopen, directory, provider, tools, config
        )
    else:
        if await anyio.Path(directory).exists():
            await anyio.to_thread.run_sync(shutil.rmtree, directory)
        session = Session(
            provider,
            tools=tools,
            config=config,
            system=system,
            directory=directory,
            session_id=inp.conversation_id,
        )
    compressions: list[dict[str, Any]] = []  # the only thing the journal does not keep

    decide = fixture_decider(tools)  # a fixture's scripted approvals

    def observe(event: SessionEvent) -> None:
        if isinstance(event.event, Compacted):
            compressions.append(msgspec.to_builtins(event.event))
        if decide is not None:
            decide(event, session.approvals)

    purpose = inp.user_inputs[0]
    owned = _owned(session, agent, purpose=purpose, resumed=reopened, reason=closing or "closed")
    to_send = list(enumerate(inp.user_inputs, start=1))[resumed_from:]
    unsent: list[int] = []
    async with owned as decisions:
        session.on(observe)
        if closing is not None:  # it only finishes closing: its candidates go to the Agent
            unsent = [number for number, _ in to_send]
        else:
            if interrupted:
                progress("continuing the interrupted turn")
                await session.continue_turn()
            for number, text in to_send:
                progress(f"turn {number}/{len(inp.user_inputs)}")
                await session.send(text)
    view = await JournalView.aread(journal, repair=False)
    turns, history = turns_of(view.turn_log), list(view.record)
    return _SessionRun(
        history=history,
        system=session.system_message(),
        turns=turns,
        compressions=compressions,
        usage=session.usage,
        resumed_from=resumed_from,
        memory=decisions,
        unsent=unsent,
    )


async def _memory_agent(inp: RunInput, memory: RunnerMemory, stack: AsyncExitStack) -> Agent | None:
    """The Agent that owns the memory this run saves to (``None``: it saves nothing)."""
    if inp.save_memory == "none":
        return None
    directory = memory_agent_dir(memory.home, inp.save_memory, inp.conversation_id)
    if inp.save_memory == "global":
        return await memory.shared(directory)
    return await stack.enter_async_context(memory.private(directory))


async def _memory_prefix(
    inp: RunInput, memory: RunnerMemory, own: Agent | None, fixture_memory: list[str]
) -> str:
    """The remembered facts for the system prompt, read through the memories' Agents."""
    lines = [f"- {fact}" for fact in fixture_memory]
    if inp.selected_memory_ids or inp.use_global_memory:
        shared = await memory.shared(memory_agent_dir(memory.home, "global", inp.conversation_id))
        for fact_id in inp.selected_memory_ids:
            fact = shared.memory.get(fact_id)
            if fact is not None and fact.status == "active":
                lines.append(f"- {fact.text}")
        if inp.use_global_memory:
            prefix = await shared.memory.prefix(inp.user_inputs[0])
            if prefix:
                lines.append(prefix)
    if inp.save_memory == "conversation" and own is not None:
        prefix = await own.memory.prefix(inp.user_inputs[0])  # what its earlier runs learned
        if prefix:
            lines.append(prefix)
    return "\n".join(lines)


def _template_names(inp: RunInput) -> list[str]:
    if inp.prompt_mode == "compare":
        return list(inp.prompt_templates)
    if inp.prompt_mode == "auto":
        text = " ".join(inp.user_inputs)
        return [choose_template(text, inp.auto_prompt_map, inp.prompt_template)]
    return [inp.prompt_template]


async def run_input(
    inp: RunInput,
    outdir: Path,
    *,
    resume: bool = False,
    home: Path,
    provider: Provider | None = None,
    progress: Callable[[str], None] = lambda _: None,
    memory: RunnerMemory | None = None,
) -> RunReport:
    """Run one input into ``outdir``. Business failures land in the artifacts (status
    ``failed``); a ``UsageError`` (e.g. no model configured) is raised for the caller.

    ``memory`` holds the Agents of the memories (``run_batch`` shares one across its
    runs); without it the run opens and closes its own."""
    if inp.orchestrator != "lightweight":
        from xai.runner._peer import run_with_peer

        return await run_with_peer(inp, outdir, progress=progress)
    if memory is None:
        async with RunnerMemory(home) as own_memory:
            return await run_input(
                inp,
                outdir,
                resume=resume,
                home=home,
                provider=provider,
                progress=progress,
                memory=own_memory,
            )
    started = time.time()
    await anyio.Path(outdir).mkdir(parents=True, exist_ok=True)
    checkpoint = outdir / CHECKPOINT
    resumed = resume and await anyio.Path(checkpoint).exists()
    fixture_memory: list[str] = []
    async with AsyncExitStack() as stack:
        if inp.execution_mode == "fixture":
            assert inp.fixture_dir is not None
            fixture = await anyio.to_thread.run_sync(load_fixture, inp.fixture_dir)
            fixture_memory = fixture.memory
            tool_names = [t.name for t in _tools(inp)]
            make_provider: Callable[[], Provider] = fixture.provider
            make_tools: Callable[[], ToolSet] = lambda: fixture.tools(tool_names)  # noqa: E731
        else:
            shared = provider
            if shared is None:  # ours to close; a provider passed in is the caller's
                shared = await stack.enter_async_context(OpenAIProvider(LLMConfig.from_env()))
            make_provider = lambda: shared  # noqa: E731
            make_tools = lambda: ToolSet(  # noqa: E731
                _tools(inp), mcp=[MCPServer(config) for config in inp.mcp_servers]
            )
        agent = await _memory_agent(inp, memory, stack)
        prefix = await _memory_prefix(inp, memory, agent, fixture_memory)
        extra = f"\n\n{inp.system_prompt.strip()}" if inp.system_prompt else ""
        names = _template_names(inp)
        runs: dict[str, _SessionRun] = {}
        for name in names:
            directory = checkpoint / ("session" if len(names) == 1 else f"session-{name}")
            progress(f"template {name}")
            system = SystemPrompt(
                instructions=inp.prompt_templates[name] + extra, memory_prefix=prefix
            )
            runs[name] = await _one_session(
                inp,
                make_provider(),
                make_tools(),
                system,
                directory,
                resume=resume,
                agent=agent,
                progress=progress,
            )
    main = runs[names[0]]
    llm_calls = sum(r.usage.requests for r in runs.values())
    trace: dict[str, Any] = {
        "conversation_id": inp.conversation_id,
        "status": "success" if all(r.ok for r in runs.values()) else "failed",
        "error": main.error,
        "execution_mode": inp.execution_mode,
        "orchestrator": inp.orchestrator,
        "prompt_mode": inp.prompt_mode,
        "template_used": names[0] if len(names) == 1 else None,
        "tool_rounds_used": sum(t.rounds for t in main.turns),
        "llm_calls": llm_calls,
        "usage": main.usage,
        "turns": main.turns,
        "multi_turn": {"inputs": len(inp.user_inputs), "processed": len(main.turns)},
        "compression_events": main.compressions,
        "memory": {"saved_to": inp.save_memory, "decisions": main.memory},
        "checkpoint": {
            "resumed": resumed,
            "resumed_from_turn": main.resumed_from,
            "interrupted_turns": main.interrupted_turns,
            "journal": str(checkpoint / "session" / JOURNAL_FILE),
        },
        "started_at": started,
        "duration_ms": round((time.time() - started) * 1000, 1),
    }
    if len(runs) > 1:
        trace["compare"] = {
            name: {"status": r.status, "answer": r.answer, "llm_calls": r.usage.requests}
            for name, r in runs.items()
        }
    answer = main.answer
    if len(runs) > 1:
        answer = "\n\n".join(f"## {name}\n\n{r.answer}" for name, r in runs.items())
        for name, r in runs.items():
            await anyio.to_thread.run_sync(
                write_atomic,
                outdir / "compare" / name / "messages.json",
                msgspec.json.encode(_messages(r.system, r.history)),
            )
    await anyio.to_thread.run_sync(
        write_atomic,
        outdir / "messages.json",
        msgspec.json.format(msgspec.json.encode(_messages(main.system, main.history)), indent=2),
    )
    await anyio.to_thread.run_sync(
        write_atomic,
        outdir / "trace.json",
        msgspec.json.format(msgspec.json.encode(trace), indent=2),
    )
    await anyio.to_thread.run_sync(
        write_atomic, outdir / "final_answer.md", (answer.strip() + "\n").encode()
    )
    report = RunReport(
        conversation_id=inp.conversation_id,
        status=str(trace["status"]),
        outdir=str(outdir),
        answer=answer,
        error=main.error,
        llm_calls=llm_calls,
        duration_ms=float(trace["duration_ms"]),
        resumed=resumed,
    )
    await anyio.to_thread.run_sync(
        append_line,
        outdir / "runtime_log.jsonl",
        {**msgspec.to_builtins(report), "at": time.time()},
    )
    await anyio.to_thread.run_sync(shutil.rmtree, checkpoint, True)  # finished: no checkpoint
    return report


def _tools(inp: RunInput) -> list[Any]:
    if inp.toolset == "none":
        return []
    from xai.runner._basic_tools import basic_tools

    return basic_tools(inp.tool_root)
