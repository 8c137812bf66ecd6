"""``xai chat``: a REPL holding one persistent Agent.

Line editing and history come from prompt_toolkit; output is printed above
the prompt (``patch_stdout``), so a wake-up that fires while a line is being
typed appears without breaking it. Ctrl-C cancels the running answer, not the
REPL; Ctrl-D or ``/quit`` closes the Session so its memory is adjudicated
before the program ends.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import shlex
import signal
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import assert_never

import anyio

from xai.agent import (
    Agent,
    At,
    Cron,
    Every,
    GetMood,
    ListSessions,
    Wakeup,
    WakeupState,
    call_agent,
)
from xai.cli._approve import COMMANDS as APPROVAL_COMMANDS
from xai.cli._approve import HELP as APPROVAL_HELP
from xai.cli._approve import approval_command, approval_policy, settled
from xai.cli._mood import mood_lines
from xai.cli._people import error_line, moment, trigger_line, usage_line
from xai.cli._render import Printer, Renderer, session_ended
from xai.config import LLMConfig
from xai.exceptions import (
    ConfigurationError,
    FactForgottenError,
    FactNotFoundError,
    WakeupNotFoundError,
)
from xai.memory import Fact, ForgetScope, MemoryHit, ScoredEpisode, ScoredFact
from xai.providers import OpenAIProvider
from xai.session import Session
from xai.tools import ToolSet

__all__ = ["HELP", "run_chat"]

_SCOPES: dict[str, ForgetScope] = {"fact": "fact", "evidence": "evidence", "erase": "erase"}

HELP = (
    """commands:
  /help                      this list
  /new                       close this conversation (it is remembered) and start another
  /sessions                  open Sessions
  /memory [query]            what the Agent remembers (tier, times seen, from which Sessions)
  /forget ID [SCOPE]         forget a fact; SCOPE evidence: and what was said; erase: its
                             text leaves every file (after /new), the ledger keeps a hash
  /persona                   who the Agent is
  /wake                      list wake-ups
  /wake add every SECONDS TEXT | in SECONDS TEXT | cron "EXPR" TEXT
  /wake remove ID            remove a wake-up
  /usage                     tokens used
  /mood                      the user's and the agent's mood, and what moved it
"""
    + APPROVAL_HELP
    + """
  /quit                      leave (Ctrl-D too); Ctrl-C cancels a running answer"""
)


class Repl:
    def __init__(self, agent: Agent, printer: Printer) -> None:
        self.agent = agent
        self.printer = printer
        self.render = printer.render
        self.session: Session | None = None

    async def start(self) -> None:
        self.session = await self.agent.open_session("a conversation with the user")

    async def ask(self, text: str) -> None:
        assert self.session is not None
        session = self.session
        handle = session.send(text)
        assert handle.input is not None
        with _cancel_on_sigint(session):
            # The answer is on screen (a cancelled turn is reported by the printer), or a
            # call waits for a decision: the prompt comes back for /approve or /deny.
            await self.printer.shown(settled(session, input_id=handle.input.id))

    async def command(self, line: str) -> bool:
        """Run a /command; False means quit."""
        try:
            words = shlex.split(line)
        except ValueError as exc:
            self.render.line(f"error: {exc}")
            return True
        name, args = words[0], words[1:]
        agent = self.agent
        if name in ("/quit", "/exit"):
            return False
        if name == "/help":
            self.render.line(HELP)
        elif name == "/new":
            await self.finish_session()
            await self.start()
            self.render.line("[new conversation]")
        elif name == "/sessions":  # the host API's request, as the web page lists them
            for s in await call_agent(agent, ListSessions(agent_id=agent.id)):
                mark = "*" if self.session is not None and s.session_id == self.session.id else " "
                helper = f" helper of {s.parent_id}" if s.parent_id else ""
                about = f"  {s.label}" if s.label else ""
                self.render.line(
                    f"{mark} {s.session_id}  turns={s.turns} state={s.state}{helper}{about}"
                )
        elif name in APPROVAL_COMMANDS and self.session is not None:
            with _cancel_on_sigint(self.session):
                await approval_command(agent, self.session, self.render, self.printer, line)
        elif name == "/memory":
            await self._memory(" ".join(args))
        elif name == "/forget" and args:
            scope = _SCOPES.get(args[1] if len(args) > 1 else "fact")
            if scope is None:
                self.render.line(f"error: a scope is one of {', '.join(_SCOPES)}")
                return True
            try:
                await agent.forget(args[0], scope=scope)
                self.render.line(f"{'erased' if scope == 'erase' else 'forgotten'}: {args[0]}")
            except FactForgottenError:
                self.render.line(f"already forgotten: {args[0]}")
            except FactNotFoundError as exc:
                self.render.line(f"error: {error_line(exc)}")
        elif name == "/persona":
            self.render.line(agent.persona.render())
        elif name == "/wake":
            self._wake(args)
        elif name == "/usage":
            session_usage = self.session.usage if self.session is not None else None
            self.render.line(f"this conversation: {usage_line(session_usage)}")
        elif name == "/mood":  # the host API's request, as the web page shows it
            view = await call_agent(agent, GetMood(agent_id=agent.id, limit=5))
            for text in mood_lines(view, self.session.mood if self.session else None):
                self.render.line(text)
        else:
            self.render.line(f"unknown command {name}; /help lists them")
        return True

    async def _memory(self, query: str) -> None:
        hits: list[MemoryHit | Fact] = []
        if query:
            hits.extend(await self.agent.memory.search(query, 10))
        else:
            hits.extend(self.agent.memory.facts())
        for rank, hit in enumerate(hits, 1):
            self.render.line(_memory_line(hit, rank))
        if self.session is not None and self.session.undecided:
            # Extraction and adjudication run after the answer, in the background: what
            # this conversation said may not be decided yet.
            self.render.line(
                "(a memory decision on this conversation is pending: /memory again soon)"
            )
        elif not hits:
            self.render.line("(nothing remembered yet)")

    def _wake(self, args: list[str]) -> None:
        scheduler = self.agent.scheduler
        if not args or args[0] == "list":
            states = scheduler.list()
            if not states:
                self.render.line("(no wake-ups)")
            now = self.agent.clock.now()
            for state in states:
                self.render.line(_wake_line(state, now))
            return
        try:
            if args[0] == "remove" and len(args) == 2:
                scheduler.remove(args[1])
                self.render.line(f"removed {args[1]}")
                return
            if args[0] == "add" and len(args) >= 4:
                kind, when, text = args[1], args[2], " ".join(args[3:])
                taken = {s.wakeup.id for s in scheduler.list()}
                number = 1
                while f"w{number}" in taken:  # ids persist across runs: never reuse one
                    number += 1
                wake_id = f"w{number}"
                now = self.agent.clock.now()
                trigger = (
                    Every(seconds=float(when))
                    if kind == "every"
                    else At(time=now + float(when))
                    if kind == "in"
                    else Cron(expression=when)
                    if kind == "cron"
                    else None
                )
                if trigger is None:
                    raise ConfigurationError(f"unknown kind {kind!r}: every, in or cron")
                scheduler.add(Wakeup(id=wake_id, trigger=trigger, text=text))
                self.render.line(f"added {wake_id}: {trigger_line(trigger, now)}")
                return
        except (ValueError, WakeupNotFoundError, ConfigurationError) as exc:
            self.render.line(f"error: {error_line(exc)}")
            return
        self.render.line("usage: /wake [list] | add every|in|cron WHEN TEXT | remove ID")

    async def finish_session(self) -> None:
        """Close the conversation; its memory candidates are adjudicated first."""
        if self.session is None:
            return
        session, self.session = self.session, None
        await session.close()  # waits until its candidates are decided
        await self.printer.shown(session_ended(session.id))
        decided = [
            d
            for d in self.agent.memory.ledger()
            if d.session_id == session.id and d.kind != "drop" and d.facts
        ]
        for decision in decided:
            texts = ", ".join(f'"{f.text}"' for f in decision.facts if f.status == "active")
            if texts:
                self.render.line(f"[remembered from this conversation: {texts}]")


def _wake_line(state: WakeupState, now: float) -> str:
    """``w1  once, today 08:05 (in 5 min)  hello`` and what happened to it so far."""
    w = state.wakeup
    said = w.text if w.text is not None else f"(from the builder {w.builder})"
    notes = []
    if state.runs:
        notes.append("ran once" if state.runs == 1 else f"ran {state.runs} times")
    if state.finished:
        notes.append("done")
    elif state.paused:
        notes.append("paused")
    elif state.next_at is not None and not isinstance(w.trigger, At):
        notes.append(f"next {moment(state.next_at, now)}")
    shown = f"  [{', '.join(notes)}]" if notes else ""
    return f"{w.id}  {trigger_line(w.trigger, now)}  {said}{shown}"


def _memory_line(hit: MemoryHit | Fact, rank: int) -> str:
    """A fact (with its tier, recurrences and Sessions) or something said (who, when). A
    search hit shows its rank: the search fuses several cues, so one part's score (a cosine,
    a z-score below zero) would contradict the order shown."""
    if isinstance(hit, ScoredEpisode):
        episode = hit.episode
        when = dt.datetime.fromtimestamp(episode.at).astimezone().strftime("%Y-%m-%d %H:%M")
        return (
            f"#{rank} {episode.id}  [said {when} by {episode.speaker}] "
            f"{episode.text}  (in {episode.session_id[:6]})"
        )
    if isinstance(hit, ScoredFact):
        fact, ranked = hit.fact, f"#{rank} "
    elif isinstance(hit, Fact):
        fact, ranked = hit, ""
    else:
        assert_never(hit)
    sessions = ",".join(s[:6] for s in fact.sessions)
    return f"{ranked}{fact.id}  [{fact.tier} x{fact.count}] {fact.text}  (from {sessions})"


@contextlib.contextmanager
def _cancel_on_sigint(session: Session) -> Iterator[None]:
    """While an answer streams the terminal is not in raw mode: Ctrl-C arrives as SIGINT."""
    import asyncio

    try:
        loop = asyncio.get_running_loop()
        loop.add_signal_handler(signal.SIGINT, session.cancel)
    except (RuntimeError, NotImplementedError):  # not the main thread, or no signals here
        yield
        return
    try:
        yield
    finally:
        loop.remove_signal_handler(signal.SIGINT)


async def run_chat(agent_dir: Path, approve: str | None = None) -> int:
    config = LLMConfig.from_env().validated()  # no model: main says so, as every command does
    from prompt_toolkit import PromptSession
    from prompt_toolkit.history import FileHistory
    from prompt_toolkit.patch_stdout import patch_stdout

    tools = ToolSet(needs_approval=approval_policy(approve))  # (--approve: calls wait for you)
    async with (
        OpenAIProvider(config) as provider,
        Agent(agent_dir, provider, tools=tools) as agent,
    ):
        prompt: PromptSession[str] = PromptSession(history=FileHistory(str(agent_dir / "history")))
        with patch_stdout(raw=True):
            endpoint = config.base_url or "the OpenAI API"
            render = Renderer(sys.stdout, color=sys.stdout.isatty(), endpoint=endpoint)
            printer = Printer(render, agent.events(buffer=10_000))
            repl = Repl(agent, printer)
            await repl.start()
            render.line(f"xai chat — {agent.persona.name} ({config.model}). /help for commands.")
            async with anyio.create_task_group() as group:
                group.start_soon(printer.run)
                while True:
                    try:
                        line = await prompt.prompt_async("you> ")
                    except KeyboardInterrupt:
                        continue  # Ctrl-C at the prompt clears the line
                    except EOFError:
                        break
                    if line.startswith("/"):
                        if not await repl.command(line.strip()):
                            break
                    elif line.strip():
                        await repl.ask(line)
                await repl.finish_session()
                render.line("bye.")
                group.cancel_scope.cancel()
    return 0
