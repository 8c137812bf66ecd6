"""A full disk fails the one write that needed it, never the gateway (issue 33, item 4).

One Agent's directory is a small tmpfs (``mount -t tmpfs -o size=4m``; skipped where
mounting is not allowed), the other Agent's is on the test's ordinary disk. The disk is
filled while a turn of the first runs: the process stays up, the second Agent keeps
serving, the first answers 507 naming its disk, and once space is freed it works again
with every input it acknowledged before.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import anyio
import pytest
from httpx_sse import ServerSentEvent

from tests.test_serve import anyio_backend, gateway, open_session, read, scripted, turns_done

__all__ = ["anyio_backend", "scripted"]  # fixtures
from xai.exceptions import DiskFullError, RunError
from xai.messages import UserMessage
from xai.providers import OpenAIProvider
from xai.testing import OpenAIWireServer

pytestmark = pytest.mark.anyio


class BigGate:
    """A tool that waits until released, then returns more than the disk has left."""

    def __init__(self) -> None:
        self.entered = anyio.Event()
        self.release = anyio.Event()

    async def gate(self) -> str:
        """Wait until released."""
        self.entered.set()
        await self.release.wait()
        return "y" * 200_000


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """``tmp_path/root/ada``: a 4 MiB tmpfs (the Agent ``ada``'s directory)."""
    where = tmp_path / "root" / "ada"
    where.mkdir(parents=True)
    try:
        done = subprocess.run(
            ["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(where)],
            capture_output=True,
            text=True,
            check=False,
        )
    except FileNotFoundError:
        pytest.skip("no `mount` command here: cannot make a small disk")
    if done.returncode != 0:
        pytest.skip(f"mounting a tmpfs is not allowed here: {done.stderr.strip()}")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)


def stopped_by_a_full_disk(events: list[ServerSentEvent]) -> bool:
    return any(e.event == "session_failed" and "DiskFullError" in e.data for e in events)


def answered(text: str) -> Callable[[list[ServerSentEvent]], bool]:
    return lambda got: any(e.event == "turn_done" and f"echo: {text}" in e.data for e in got)


def fill(directory: Path) -> Path:
    """Write ``directory/filler`` until the disk is full (unbuffered: every byte counted)."""
    path = directory / "filler"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    errors: list[int | None] = []
    try:
        while not errors:
            try:
                os.write(fd, b"x" * 4096)
            except OSError as exc:
                errors.append(exc.errno)
    finally:
        os.close(fd)
    assert errors == [28]  # ENOSPC
    return path


def test_a_full_disk_is_a_typed_retryable_error_naming_the_path() -> None:
    error = DiskFullError("/data/agents/ada/ledger.jsonl")
    assert isinstance(error, RunError) and error.retryable
    assert "/data/agents/ada/ledger.jsonl" in str(error) and "free space" in str(error)


async def test_a_full_disk_fails_that_agents_writes_with_507_and_nothing_else(
    small_disk: Path, scripted: OpenAIWireServer, provider: OpenAIProvider
) -> None:
    root = small_disk.parent
    gate = BigGate()
    async with gateway(root, provider, tools=[gate.gate]) as (client, host):
        a = await open_session(client, "ada")
        path = f"/agents/ada/sessions/{a}"
        first = await client.post(path + "/messages", json={"text": "hello one"})
        assert first.status_code == 202, first.text
        await read(client, path + "/events", turns_done(1))
        running = await client.post(path + "/messages", json={"text": "use the gate"})
        assert running.status_code == 202, running.text
        await gate.entered.wait()
        filler = fill(small_disk)
        gate.release.set()  # the turn goes on and meets the full disk
        with anyio.fail_after(60):  # a guard against a hang, not a wait
            seen = await read(client, path + "/events", stopped_by_a_full_disk)
        assert stopped_by_a_full_disk(seen)  # the Session says why it stopped
        fill(small_disk)  # (the failed writes were cut back off, freeing their pages)

        # The gateway is up; that Agent's writes answer 507, naming its disk.
        for response in (
            await client.post(path + "/messages", json={"text": "z" * 100_000}),
            await client.post("/agents/ada/sessions", json={}),
        ):
            assert response.status_code == 507, response.text
            body = response.json()
            assert body["type"] == "disk_full"
            assert str(small_disk) in body["message"] and "free space" in body["message"]

        # Another Agent, on another disk, serves as before.
        b = await open_session(client, "bob")
        sent = await client.post(f"/agents/bob/sessions/{b}/messages", json={"text": "hi bob"})
        assert sent.status_code == 202, sent.text
        with anyio.fail_after(60):
            await read(client, f"/agents/bob/sessions/{b}/events", turns_done(1))

        # Space freed: the same Session takes input again, its earlier inputs all there.
        filler.unlink()
        again = await client.post(path + "/messages", json={"text": "hello three"})
        assert again.status_code == 202, again.text
        with anyio.fail_after(60):
            await read(client, path + "/events", answered("hello three"))
        async with host.using("ada") as agent:
            history = agent.session(a).history
        said = [m.content for m in history if isinstance(m, UserMessage)]
        assert said == ["hello one", "use the gate", "hello three"]
        fresh = await open_session(client, "ada")
        assert fresh != a
