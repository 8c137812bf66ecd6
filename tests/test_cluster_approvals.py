"""Approval on Ray: a tool call held for a person survives its host actor killed (-9) and
restarted by Ray, then the Agent moved to a new owner on the other node; there it is still
listed, its approval (sent twice) is applied once, the tool runs once and the turn ends.
All through ``RayHosts``, the cluster's client of the one host API (tests/ray_cluster.py's
two-node cluster, shared with the other cluster tests)."""

from __future__ import annotations

import functools
import os
import signal
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager, suppress
from pathlib import Path

import pytest

from tests.ray_cluster import Cluster, node_pin, psutil, ray
from tests.session_helpers import extraction_responder
from tests.test_agent import echo, judge_adds
from tests.test_approvals_host import asks
from xai.agent import DecideApproval, ListApprovals, OpenSession
from xai.cluster import HostParts, HostSpec, RayHosts
from xai.config import LLMConfig
from xai.events import ApprovalDecided, ApprovalRequested, SessionEvent, TurnDone
from xai.messages import ToolMessage, TurnStatus
from xai.providers import OpenAIProvider, RetryPolicy
from xai.session import read_journal
from xai.testing import OpenAIWireServer

pytestmark = [
    pytest.mark.timeout(180),  # (as tests/test_cluster_ray.py: Ray starved of CPU is slow)
    pytest.mark.anyio,
]

AGENT = "ada"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # Ray's object refs are awaited on asyncio


@asynccontextmanager
async def vault_setup(base_url: str, model: str, marks: str) -> AsyncIterator[HostParts]:
    """In the host actor: a provider for the test's wire server and ``open_vault``, a tool
    that needs approval and writes a line to ``marks/vault`` each time it runs."""
    from xai.tools import tool

    @tool(needs_approval=True)
    def open_vault(door: str) -> str:
        """Open a vault door.

        Args:
            door: Which door.
        """
        with (Path(marks) / "vault").open("a") as out:
            out.write(f"{door}\n")
        return f"door {door} open"

    config = LLMConfig(
        model=model, base_url=base_url, api_key="test-key", timeout=10.0, max_retries=2
    )
    provider = OpenAIProvider(config, retry=RetryPolicy(max_retries=2, initial_delay=0.01))
    try:
        yield HostParts(provider_for=lambda _: provider, tools=(open_vault,))
    finally:
        await provider.aclose()


@pytest.fixture
def owners(
    cluster: Cluster,
    openai_server: OpenAIWireServer,
    tmp_path: Path,
    request: pytest.FixtureRequest,
) -> Iterator[Callable[[int], RayHosts]]:
    """``owner(node)``: a one-actor ``RayHosts`` pinned to ``node`` (a new actor each call),
    all on the same shared root; every one ended after the test."""
    for responder in (asks, extraction_responder, judge_adds, echo):
        openai_server.script.add_responder(responder)
    (tmp_path / "marks").mkdir()
    setup = functools.partial(
        vault_setup, openai_server.base_url, openai_server.model, str(tmp_path / "marks")
    )
    spec = HostSpec(root=str(tmp_path / "agents"))
    made: list[RayHosts] = []

    def owner(node: int) -> RayHosts:
        prefix = f"{request.node.name[:40]}-{os.getpid()}-{len(made)}-"
        hosts = RayHosts(1, spec, setup, prefix=prefix, options_for=lambda _: node_pin(node))
        made.append(hosts)
        return hosts

    yield owner
    for hosts in made:
        for actor in hosts.actors:
            ray.kill(actor, no_restart=True)


async def _until(stream: AsyncIterator[SessionEvent], kind: type) -> list[SessionEvent]:
    """The stream's events up to the first ``kind``, that one last."""
    seen = []
    async for event in stream:
        seen.append(event)
        if isinstance(event.event, kind):
            return seen
    raise AssertionError(f"the stream ended before a {kind.__name__}")


def _gone(pid: int) -> None:
    """Until process ``pid`` has ended (it is not our child: psutil polls it)."""
    with suppress(psutil.NoSuchProcess):
        psutil.Process(pid).wait(timeout=30)


async def test_a_held_call_survives_a_host_restart_and_a_move_and_runs_once_when_approved(
    owners: Callable[[int], RayHosts], tmp_path: Path
) -> None:
    import anyio

    first = owners(0)
    second = owners(1)  # (its process starts meanwhile; it opens no Agent until called)
    info = await first.open_session(AGENT, OpenSession())
    session = info.session_id
    await first.submit(AGENT, session, "open the vault")
    asked = (await _until(await first.events(AGENT, session, 0), ApprovalRequested))[-1]
    listing = ListApprovals(agent_id=AGENT)
    [held] = await first.call(listing)
    assert held.call.id == "v1" and held.call.name == "open_vault"
    assert held.session_id == session
    assert (await first.session_info(AGENT, session)).state == "waiting"

    # The host actor is killed (-9); Ray restarts it (on the same node: it is pinned) and
    # the next call, a read, waits for it: the Agent reopens waiting on the same call.
    old, node = await first.pid(AGENT), await first.node_id(AGENT)
    os.kill(old, signal.SIGKILL)
    assert await first.call(listing) == [held]
    assert await first.pid(AGENT) != old
    assert (await first.session_info(AGENT, session)).state == "waiting"

    # The Agent moves: its owner ends, a new one on the other node takes it over.
    restarted = await first.pid(AGENT)
    ray.kill(first.actors[0], no_restart=True)
    await anyio.to_thread.run_sync(_gone, restarted)  # (its lock on the Agent's directory too)
    assert await second.node_id(AGENT) != node
    assert await second.call(listing) == [held]
    assert not (tmp_path / "marks" / "vault").exists()  # nothing ran without approval

    done = await second.events(AGENT, session, asked.seq)  # (seqs go on through it all)
    decide = DecideApproval(agent_id=AGENT, session_id=session, call_id="v1", approved=True)
    decision = await second.call(decide)
    assert decision.approved and decision.call_id == "v1"
    assert await second.call(decide) == decision  # a retry changes nothing
    after = [event.event for event in await _until(done, TurnDone)]
    # Each reopen announced the wait again (a reminder); one decision, applied once.
    again = [e for e in after if isinstance(e, ApprovalRequested)]
    assert again and all(e.reminder > 0 and e.pending.call == held.call for e in again)
    assert [e.decision for e in after if isinstance(e, ApprovalDecided)] == [decision]
    finished = after[-1]
    assert isinstance(finished, TurnDone)
    assert finished.outcome.status is TurnStatus.COMPLETED
    assert finished.outcome.text == "echo: door A open"
    assert await second.call(listing) == []
    assert await second.call(decide) == decision  # after the call ran: the one recorded

    assert (tmp_path / "marks" / "vault").read_text().splitlines() == ["A"]  # ran once
    journal = tmp_path / "agents" / AGENT / "sessions" / session / "journal.jsonl"
    results = [m for m in read_journal(journal).history if isinstance(m, ToolMessage)]
    assert [(m.tool_call_id, m.content, m.synthetic) for m in results] == [
        ("v1", "door A open", False)
    ]
    await second.close_session(AGENT, session)
