"""One runtime input to artifacts, as a thin layer over the Session.

The Session's journal is the checkpoint (``OUTDIR/.checkpoint``): ``--resume``
reopens it and continues without repeating finished model or tool calls; a
run that finishes removes it. Its compaction is the history compression and
its memory is the Agent's long-term memory (``save_memory``).
"""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import msgspec

from xai._files import write_atomic
from xai.config import LLMConfig
from xai.events import Compacted, SessionEvent
from xai.memory import LongTermMemory, default_embedder
from xai.messages import (
    AssistantMessage,
    Message,
    SystemMessage,
    ToolMessage,
    TurnStatus,
    Usage,
    UserMessage,
)
from xai.providers import OpenAIProvider, Provider, to_wire_messages
from xai.query import QueryConfig
from xai.runner._fixture import load_fixture
from xai.runner._input import RunInput
from xai.runner._templates import choose_template
from xai.session import (
    FinalizingContext,
    InputRecord,
    MessageRecord,
    Session,
    SessionConfig,
    SystemPrompt,
    TurnEndRecord,
    read_journal,
    read_records,
)
from xai.tools import MCPServer, ToolSet

__all__ = ["RunReport", "run_input", "write_atomic"]

CHECKPOINT = ".checkpoint"


class RunReport(msgspec.Struct, kw_only=True):
    conversation_id: str
    status: str
    outdir: str
    answer: str = ""
    error: str | None = None
    llm_calls: int = 0
    duration_ms: float = 0.0
    resumed: bool = False


def _append_line(path: Path, record: Any) -> None:
    with path.open("ab") as f:
        f.write(msgspec.json.encode(record) + b"\n")
        f.flush()
        os.fsync(f.fileno())


def _turns(records: list[Any]) -> tuple[list[dict[str, Any]], list[Message]]:
    """Per-turn details and every message, from the journal's records: complete even when a
    compaction shortened the history, and across a resume."""
    turns: dict[int, dict[str, Any]] = {}
    messages: list[Message] = []

    def turn(number: int) -> dict[str, Any]:
        return turns.setdefault(
            number,
            {
                "turn": number,
                "input": "",
                "answer": "",
                "rounds": 0,
                "tool_calls": [],
                "status": "interrupted",
            },
        )

    for record in records:
        if isinstance(record, InputRecord):
            turn(record.turn)["input"] = record.message.content
            messages.append(record.message)
        elif isinstance(record, MessageRecord):
            messages.append(record.message)
            current = turn(record.turn)
            message = record.message
            if isinstance(message, AssistantMessage):
                current["rounds"] += 1
                current["answer"] = message.content
                for call in message.tool_calls:
                    current["tool_calls"].append(
                        {"id": call.id, "name": call.name, "arguments": call.arguments}
                    )
            elif isinstance(message, ToolMessage):
                for call in current["tool_calls"]:
                    if call["id"] == message.tool_call_id:
                        call["result"] = message.content[:2000]
                        call["success"] = not message.is_error
        elif isinstance(record, TurnEndRecord):
            current = turn(record.outcome.turn)
            current["status"] = record.outcome.status.value
            current["usage"] = msgspec.to_builtins(record.outcome.usage)
            if record.outcome.error is not None:
                current["error"] = record.outcome.error.message
            elif record.outcome.status is TurnStatus.BUDGET_EXHAUSTED:
                current["error"] = "the turn reached max_turns before the model finished"
    # A turn that only continued an interrupted one (no input of its own) folds into it.
    ordered = [t for _, t in sorted(turns.items())]
    merged: list[dict[str, Any]] = []
    for item in ordered:
        if not item["input"] and merged:
            last = merged[-1]
            last["rounds"] += item["rounds"]
            last["tool_calls"].extend(item["tool_calls"])
            last["answer"] = item["answer"] or last["answer"]
            last["status"] = item["status"]
            for key in ("usage", "error"):
                if key in item:
                    last[key] = item[key]
            continue
        merged.append(item)
    for number, item in enumerate(merged, start=1):
        item["turn"] = number
    return merged, messages


def _messages(system: SystemMessage | None, history: list[Message]) -> list[dict[str, Any]]:
    return to_wire_messages([system, *history] if system is not None else history)


async def _memory_prefix(inp: RunInput, home: Path, fixture_memory: list[str]) -> str:
    lines = [f"- {fact}" for fact in fixture_memory]
    if inp.selected_memory_ids or inp.use_global_memory:
        directory = home / "runner" / "memory"
        async with (
            _memory_lock(directory),
            LongTermMemory(directory, embedder=default_embedder()) as memory,
        ):
            for fact_id in inp.selected_memory_ids:
                fact = memory.get(fact_id)
                if fact is not None and fact.status == "active":
                    lines.append(f"- {fact.text}")
            if inp.use_global_memory:
                prefix = await memory.prefix(inp.user_inputs[0])
                if prefix:
                    lines.append(prefix)
    own = home / "runner" / "conversations" / inp.conversation_id / "memory"
    if inp.save_memory == "conversation" and await anyio.Path(own / "ledger.jsonl").exists():
        # What this conversation learned in its earlier runs.
        async with _memory_lock(own), _open_memory(own) as memory:
            prefix = await memory.prefix(inp.user_inputs[0])
            if prefix:
                lines.append(prefix)
    return "\n".join(lines)


@asynccontextmanager
async def _open_memory(directory: Path) -> AsyncIterator[LongTermMemory]:
    """A memory with the configured embedder, whose endpoint client is closed afterwards."""
    embedder = default_embedder()
    try:
        async with LongTermMemory(directory, embedder=embedder) as memory:
            yield memory
    finally:
        aclose = getattr(embedder, "aclose", None)
        if aclose is not None:
            await aclose()


_memory_locks: dict[str, anyio.Lock] = {}


def _memory_lock(directory: Path) -> anyio.Lock:
    """One writer per memory directory in this process (batch tasks share the global one)."""
    return _memory_locks.setdefault(str(directory), anyio.Lock())


def _memory_dir(inp: RunInput, home: Path) -> Path | None:
    if inp.save_memory == "global":
        return home / "runner" / "memory"
    if inp.save_memory == "conversation":
        return home / "runner" / "conversations" / inp.conversation_id / "memory"
    return None


async def _one_session(
    inp: RunInput,
    provider: Provider,
    tools: ToolSet,
    instructions: str,
    prefix: str,
    directory: Path,
    resume: bool,
    home: Path,
    progress: Callable[[str], None],
) -> dict[str, Any]:
    config = SessionConfig(
        query=QueryConfig(max_rounds=inp.max_turns),
        compaction=inp.compression_enabled,
        context_window=inp.max_context_tokens,
        keep_recent_tokens=max(200, inp.max_context_tokens // 4),
        extract_memory=inp.save_memory != "none",
        fsync="commit",
    )
    journal = directory / "journal.jsonl"
    resumed_from = 0
    if resume and await anyio.Path(journal).exists():
        state = await anyio.to_thread.run_sync(read_journal, journal)
        resumed_from = sum(
            1 for m in state.history if isinstance(m, UserMessage) and m.origin == "user"
        )
        session = Session.reopen(directory, provider, tools=tools, config=config)
    else:
        if await anyio.Path(directory).exists():
            await anyio.to_thread.run_sync(shutil.rmtree, directory)
        session = Session(
            provider,
            tools=tools,
            config=config,
            system=SystemPrompt(instructions=instructions, memory_prefix=prefix),
            directory=directory,
            session_id=inp.conversation_id,
        )
    memory_dir = _memory_dir(inp, home)

    async def remember(context: FinalizingContext) -> None:
        if memory_dir is not None and context.candidates:
            async with (
                _memory_lock(memory_dir),
                LongTermMemory(memory_dir, embedder=default_embedder()) as memory,
            ):
                await memory.adjudicate(context.candidates, session_id=context.session_id)

    session.on_session_finalizing.append(remember)
    compressions: list[dict[str, Any]] = []  # the only thing the journal does not keep

    def observe(event: SessionEvent) -> None:
        if isinstance(event.event, Compacted):
            compressions.append(msgspec.to_builtins(event.event))

    async with session:
        session.on(observe)
        if session.interrupted_turn:
            progress("continuing the interrupted turn")
            await session.continue_turn()
        for number, text in enumerate(inp.user_inputs, start=1):
            if number <= resumed_from:
                continue
            progress(f"turn {number}/{len(inp.user_inputs)}")
            await session.send(text)
    records = await anyio.to_thread.run_sync(read_records, journal)
    turns, history = _turns(records)
    failed = [t for t in turns if t["status"] not in (TurnStatus.COMPLETED.value,)]
    usage: Usage = session.usage
    return {
        "history": history,
        "system": session.system_message(),
        "turns": turns,
        "compression_events": compressions,
        "usage": usage,
        "resumed_from_turn": resumed_from,
        "status": "success" if not failed else "failed",
        "error": failed[0].get("error") if failed else None,
        "answer": turns[-1]["answer"] if turns else "",
    }


async def run_input(
    inp: RunInput,
    outdir: Path,
    *,
    resume: bool = False,
    home: Path,
    provider: Provider | None = None,
    progress: Callable[[str], None] = lambda _: None,
) -> RunReport:
    """Run one input into ``outdir``. Business failures land in the artifacts (status
    ``failed``); a ``UsageError`` (e.g. no model configured) is raised for the caller."""
    started = time.time()
    await anyio.Path(outdir).mkdir(parents=True, exist_ok=True)
    checkpoint = outdir / CHECKPOINT
    resumed = resume and await anyio.Path(checkpoint).exists()
    fixture_memory: list[str] = []
    owned: OpenAIProvider | None = None
    if inp.execution_mode == "fixture":
        assert inp.fixture_dir is not None
        fixture = load_fixture(inp.fixture_dir)
        fixture_memory = fixture.memory
        tool_names = [t.name for t in _tools(inp)]
        make_provider: Callable[[], Provider] = fixture.provider
        make_tools: Callable[[], ToolSet] = lambda: fixture.tools(tool_names)  # noqa: E731
    else:
        if provider is None:
            owned = OpenAIProvider(LLMConfig.from_env())
        shared: Provider = provider or owned  # type: ignore[assignment]
        make_provider = lambda: shared  # noqa: E731
        make_tools = lambda: ToolSet(  # noqa: E731
            _tools(inp), mcp=[MCPServer(config) for config in inp.mcp_servers]
        )
    try:
        prefix = await _memory_prefix(inp, home, fixture_memory)
        extra = f"\n\n{inp.system_prompt.strip()}" if inp.system_prompt else ""
        if inp.prompt_mode == "compare":
            names = list(inp.prompt_templates)
        elif inp.prompt_mode == "auto":
            names = [
                choose_template(" ".join(inp.user_inputs), inp.auto_prompt_map, inp.prompt_template)
            ]
        else:
            names = [inp.prompt_template]
        runs: dict[str, dict[str, Any]] = {}
        for name in names:
            directory = checkpoint / ("session" if len(names) == 1 else f"session-{name}")
            progress(f"template {name}")
            runs[name] = await _one_session(
                inp,
                make_provider(),
                make_tools(),
                inp.prompt_templates[name] + extra,
                prefix,
                directory,
                resume,
                home,
                progress,
            )
    finally:
        if owned is not None:
            await owned.aclose()
    main = runs[names[0]]
    llm_calls = sum(r["usage"].requests for r in runs.values())
    trace = {
        "conversation_id": inp.conversation_id,
        "status": main["status"]
        if len(runs) == 1
        else ("success" if all(r["status"] == "success" for r in runs.values()) else "failed"),
        "error": main["error"],
        "execution_mode": inp.execution_mode,
        "prompt_mode": inp.prompt_mode,
        "template_used": names[0] if len(names) == 1 else None,
        "tool_rounds_used": sum(t["rounds"] for t in main["turns"]),
        "llm_calls": llm_calls,
        "usage": msgspec.to_builtins(main["usage"]),
        "turns": main["turns"],
        "multi_turn": {"inputs": len(inp.user_inputs), "processed": len(main["turns"])},
        "compression_events": main["compression_events"],
        "checkpoint": {
            "resumed": resumed,
            "resumed_from_turn": main["resumed_from_turn"],
            "journal": str(checkpoint / "session" / "journal.jsonl"),
        },
        "started_at": started,
        "duration_ms": round((time.time() - started) * 1000, 1),
    }
    if len(runs) > 1:
        trace["compare"] = {
            name: {"status": r["status"], "answer": r["answer"], "llm_calls": r["usage"].requests}
            for name, r in runs.items()
        }
    messages = _messages(main["system"], main["history"])
    answer = main["answer"]
    if len(runs) > 1:
        answer = "\n\n".join(f"## {name}\n\n{r['answer']}" for name, r in runs.items())
        for name, r in runs.items():
            await anyio.to_thread.run_sync(
                write_atomic,
                outdir / "compare" / name / "messages.json",
                msgspec.json.encode(_messages(r["system"], r["history"])),
            )
    await anyio.to_thread.run_sync(
        write_atomic,
        outdir / "messages.json",
        msgspec.json.format(msgspec.json.encode(messages), indent=2),
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
        error=main["error"],
        llm_calls=llm_calls,
        duration_ms=float(trace["duration_ms"]),
        resumed=resumed,
    )
    await anyio.to_thread.run_sync(
        _append_line,
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
