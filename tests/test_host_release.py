"""A long-running host keeps nothing in memory per closed Session: its stream goes once its
last event is in its log (the log stays readable, for the last ``CLOSED_STREAMS_KEPT``),
with the inputs the host accepted for it (issue 33, item 6; ``bench/soak.py`` measures
the RSS)."""

from __future__ import annotations

import gc
from collections import Counter
from contextlib import aclosing
from pathlib import Path

import pytest

import xai.agent._host_streams as host_streams
from tests.session_helpers import extraction_responder
from tests.test_agent import echo, judge_adds
from xai.agent import AgentHost, OpenSession, SessionStream
from xai.events import SessionClosed, TurnDone
from xai.exceptions import SessionClosedError
from xai.providers import OpenAIProvider
from xai.testing import OpenAIWireServer

pytestmark = pytest.mark.anyio

KEPT = 4
"""``CLOSED_STREAMS_KEPT`` in these tests (a small cap, reached quickly)."""


@pytest.fixture
def scripted(openai_server: OpenAIWireServer) -> OpenAIWireServer:
    for responder in (extraction_responder, judge_adds, echo):
        openai_server.script.add_responder(responder)
    return openai_server


async def one_session(host: AgentHost, n: int) -> str:
    """A Session as ``xai serve`` runs one: opened, two keyed inputs, read to its close."""
    info = await host.open_session("ada", OpenSession(purpose="soak"))
    session_id = info.session_id
    async with aclosing(await host.events("ada", session_id)) as events:
        for turn in range(2):
            await host.submit("ada", session_id, f"I said {n}.{turn}", input_id=f"{n}-{turn}")
            async for event in events:
                if isinstance(event.event, TurnDone):
                    break
        await host.close_session("ada", session_id)
        kinds = [type(event.event) async for event in events]
    assert kinds[-1] is SessionClosed
    return session_id


def agent_objects() -> Counter[str]:
    """Live objects of the Agent and Session layers' own classes, by class."""
    gc.collect()
    found: Counter[str] = Counter()
    for o in gc.get_objects():
        module = type(o).__module__  # (a descriptor for some extension types)
        if isinstance(module, str) and module.startswith(("xai.agent.", "xai.session.")):
            found[type(o).__qualname__] += 1
    return found


async def test_a_host_keeps_no_object_per_closed_session(
    tmp_path: Path,
    scripted: OpenAIWireServer,
    provider: OpenAIProvider,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(host_streams, "CLOSED_STREAMS_KEPT", KEPT)
    async with AgentHost(tmp_path, lambda _: provider) as host:
        for n in range(2):  # (warm-up: the Agent, its memory, the first stream)
            await one_session(host, n)
        before = agent_objects()
        closed = [await one_session(host, n) for n in range(2, 2 + 3 * KEPT)]
        after = agent_objects()
        grown = {kind: after[kind] - before[kind] for kind in after if after[kind] > before[kind]}
        assert grown == {}  # nothing of these layers is kept per closed Session
        assert after[SessionStream.__qualname__] == 0  # every stream let go
        assert len(host.streams) == 0
        assert host.streams.closed_kept == KEPT  # the last ones, readable from their logs
        assert host.streams.give_back.closed == 2 + len(closed)  # each counted once
        logs = host.streams.log_path("ada", closed[-1]).parent
        assert sorted(p.stem for p in logs.glob("*.jsonl")) == sorted(closed[-KEPT:])

        # A closed Session still kept is read back from its log, every event, to its close;
        # one forgotten is closed for good.
        async with aclosing(await host.events("ada", closed[-1])) as events:
            read = [event async for event in events]
        seqs = [event.seq for event in read]
        assert seqs == list(range(seqs[0], seqs[0] + len(seqs)))
        assert sum(isinstance(event.event, TurnDone) for event in read) == 2
        assert isinstance(read[-1].event, SessionClosed)
        with pytest.raises(SessionClosedError):
            await host.events("ada", closed[0])
        assert len(host.streams) == 0
        assert host.streams.give_back.closed == 2 + len(closed)  # (a read back is not a close)
