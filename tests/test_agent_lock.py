"""One process owns an Agent directory: a second process is refused, a killed one lets go."""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path

import anyio
import anyio.abc
import pytest
from anyio.streams.buffered import BufferedByteReceiveStream

from tests.crash_helpers import ROOT
from xai.agent import Agent
from xai.exceptions import AgentLockedError
from xai.testing import ScriptedProvider

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # one backend: the subject is two processes, not the event loop


def files(root: Path) -> dict[str, int]:
    return {str(p): p.stat().st_mtime_ns for p in root.rglob("*") if p.is_file()}


async def test_a_second_process_is_refused_until_the_first_dies(tmp_path: Path) -> None:
    command = [sys.executable, "-m", "tests.agent_lock_child", str(tmp_path)]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    async with await anyio.open_process(command, cwd=ROOT, env=env) as child:
        try:
            assert child.stdout is not None
            out = BufferedByteReceiveStream(child.stdout)
            try:
                line = await out.receive_until(b"\n", 1_000)  # once the child's Agent runs
            except anyio.EndOfStream:
                assert child.stderr is not None
                error = await drain(child.stderr)
                raise AssertionError(f"the child did not start: {error}") from None
            assert line == b"ready"
            before = files(tmp_path)
            with pytest.raises(AgentLockedError) as caught:
                async with Agent(tmp_path, ScriptedProvider()):
                    pass
            assert caught.value.pid == child.pid
            assert f"{tmp_path} is in use by process {child.pid}" in str(caught.value)
            assert files(tmp_path) == before  # the refused one wrote nothing
            child.send_signal(signal.SIGKILL)
            assert await child.wait() == -signal.SIGKILL
            async with Agent(tmp_path, ScriptedProvider()) as agent:  # the kernel let go
                await agent.open_session("mine now")
        finally:
            if child.returncode is None:
                child.kill()


async def drain(stream: anyio.abc.ByteReceiveStream) -> str:
    chunks = [chunk async for chunk in stream]
    return b"".join(chunks).decode(errors="replace")[-2000:]
