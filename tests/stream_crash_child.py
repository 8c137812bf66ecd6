"""A host streaming a Session in a child process that dies by SIGKILL between a journal
record and the event that announces it, with a reader attached to the Session's stream.

``python -m tests.stream_crash_child ROOT URL [MODE]``; Agent ``ada``, Session id in
``ROOT/session``. The journal syncs at each turn's end (``turn_end``) or after every
record (the modes that die at a message). MODE says where the process dies, from inside, in an fsync of the journal
(a kill -9 from outside lands there by luck; here it lands there every time):

- ``turn_end`` (default): open the Session, submit ``first`` and ``second`` (accepted,
  waits), die in the fsync at the end of turn 1: the journal has the turn's end, the
  Session never published its ``turn_done``.
- ``message``: submit ``first``, die in the fsync of the turn's assistant message: the
  journal has it, no ``message_committed`` was published.
- ``late_reader``: the Session is opened on the Agent itself (no stream yet) and given
  ``first``; in the fsync at the end of its turn (the Query is over, ``session.busy`` is
  False, the ``turn_done`` not yet published) a reader comes, which makes the Session's
  stream; then the process dies.
- ``close``: submit ``first``, wait for the turn, close the Session, and die in the
  fsync after its ``closed`` record: the journal says closed, no ``session_closed`` was
  published.
- ``unlogged``: open the Session through the host, its stream's log never taken up (the
  worker thread that would read or make it never runs, as on a loaded machine), submit
  ``first``, and die in the fsync of the turn's ``input`` record (the journal syncs every
  record): the journal has the turn's start, nothing told it, and the log is all the
  next life has to know that the Session was streamed from its first event.
- ``requeue``: a later life on the same ``ROOT``: the Agent reopens the Session, the
  input accepted before the last kill runs again (turn 2), and the process dies in the
  fsync of that turn's assistant message.

The reader (``host.events``, what the SSE gateway serves) resumes after the last event
it recorded in ``ROOT/reads`` (one ``O_APPEND`` line per event: ``<seq> <type>
<journal position or ->``), as a browser's ``EventSource`` resumes with ``Last-Event-ID``.
"""

from __future__ import annotations

import functools
import os
import signal
import sys
import threading
import time
from collections.abc import Callable
from contextlib import aclosing
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

import anyio

from tests.campaign_child import log
from xai.agent import AgentConfig, AgentHost, OpenSession, _streams
from xai.config import LLMConfig
from xai.events import SessionEvent
from xai.providers import OpenAIProvider
from xai.session import SessionConfig

if TYPE_CHECKING:
    from _typeshed import HasFileno

_fsync = os.fsync
_dies_at = [b'"kind":"turn_end"']  # what the journal's last record holds when it dies
_before_dying: list[Callable[[], None]] = []  # run (in the fsync's thread) before it dies


def _dying_fsync(fd: int | HasFileno) -> None:
    number = fd if isinstance(fd, int) else fd.fileno()
    path = os.readlink(f"/proc/self/fd/{number}")
    if path.endswith("journal.jsonl"):
        with open(path, "rb") as f:
            last = f.read().splitlines()[-1]
        if all(part in last for part in _dies_at):
            for call in _before_dying:
                call()
            os.kill(os.getpid(), signal.SIGKILL)
    _fsync(fd)


def line(event: SessionEvent) -> str:
    """How a reader records an event: its number, its type, its journal position."""
    kind = event.event.__struct_config__.tag
    return f"{event.seq} {kind} {'-' if event.journal is None else event.journal}"


async def _read(host: AgentHost, root: Path, session_id: str) -> None:
    reads = root / "reads"
    seen = reads.read_text().splitlines() if reads.exists() else []
    after = int(seen[-1].split()[0]) if seen else 0
    async with aclosing(await host.events("ada", session_id, after)) as events:
        async for event in events:
            log(reads, line(event))


def _logged_start(root: Path, session_id: str) -> None:
    """Wait (bounded) until the stream's log holds the turn's start."""
    log = root / "agents" / "ada" / "streams" / f"{session_id}.jsonl"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if log.exists() and b"turn_started" in log.read_bytes():
            return
        time.sleep(0.05)


def _never(path: Path, journal: int | None = None) -> NoReturn:
    """The stream's log reading (``open_log``), stuck in its worker thread until the kill."""
    threading.Event().wait()
    raise AssertionError("unreachable")


def main(root: Path, base_url: str, mode: str) -> None:
    at_message = mode in ("message", "requeue", "unlogged")

    async def run() -> None:
        config = LLMConfig(model="m", base_url=base_url, api_key="k", max_retries=0)
        agent_config = AgentConfig(session=SessionConfig(fsync="commit" if at_message else "turn"))
        if mode == "close":
            _dies_at[:] = [b'"kind":"closed"']
        if at_message:
            _dies_at[:] = [b'"kind":"message"', b'"role":"assistant"']
        if mode == "unlogged":
            _dies_at[:] = [b'"kind":"input"']
            _streams.open_log = _never  # type: ignore[attr-defined]
        os.fsync = _dying_fsync  # from here on (a reopen's requeued turn dies too)
        async with (
            OpenAIProvider(config) as provider,
            AgentHost(root / "agents", lambda _: provider, config=agent_config) as host,
            anyio.create_task_group() as group,
        ):
            if mode == "requeue":
                session_id = (root / "session").read_text()
            elif mode == "late_reader":
                session = await (await host.agent("ada")).open_session("chat")
                session_id = session.id
                (root / "session").write_text(session_id)

                async def connect() -> None:  # the stream is made (its log begun) here
                    await host.events("ada", session_id, 0)

                _before_dying.append(lambda: anyio.from_thread.run(connect))
                session.send("first")
                await anyio.sleep(3600)
            else:
                info = await host.open_session("ada", OpenSession(purpose="chat"))
                session_id = info.session_id
                (root / "session").write_text(session_id)
            if mode == "turn_end":  # the stream has logged the turn's start (on a loaded
                # machine its log's worker thread may not have written it yet): then die
                _before_dying.append(functools.partial(_logged_start, root, session_id))
            group.start_soon(_read, host, root, session_id)
            if mode == "close":
                await host.send("ada", session_id, "first")
                await host.close_session("ada", session_id)
            elif mode == "unlogged":
                await host.submit("ada", session_id, "first")
            elif mode != "requeue":
                await host.submit("ada", session_id, "first")
                await host.submit("ada", session_id, "second")  # accepted, waits
            await anyio.sleep(3600)

    anyio.run(run)


if __name__ == "__main__":
    main(Path(sys.argv[1]), sys.argv[2], sys.argv[3] if len(sys.argv) > 3 else "turn_end")
