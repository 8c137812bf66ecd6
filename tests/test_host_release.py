"""A long-running host keeps nothing in memory per closed Session: its stream goes once its
last event is in its log (the log stays readable, for the last ``CLOSED_STREAMS_KEPT``),
with the inputs the host accepted for it (issue 33, item 6; ``bench/soak.py`` measures
the RSS)."""

from __future__ import annotations

import gc
import types
from collections import Counter, deque
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


async def one_session(host: AgentHost, n: int, said: str = "I said") -> str:
    """A Session as ``xai serve`` runs one: opened, two keyed inputs, read to its close."""
    info = await host.open_session("ada", OpenSession(purpose="soak"))
    session_id = info.session_id
    async with aclosing(await host.events("ada", session_id)) as events:
        for turn in range(2):
            await host.submit("ada", session_id, f"{said} {n}.{turn}", input_id=f"{n}-{turn}")
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


def holders_of(session_id: str) -> list[str]:
    """The live dicts, sets, lists and deques that hold ``session_id`` (as a key or an item),
    each named by the class of what holds it (``?``: a container held by none)."""
    gc.collect()
    found: list[str] = []
    for o in gc.get_objects():
        if isinstance(o, (dict, set, frozenset)):
            hit = session_id in o
        elif isinstance(o, (list, deque)):
            hit = any(isinstance(item, str) and item == session_id for item in o)
        else:
            continue
        if hit:
            found.append(_owner(o))
    return found


def _owner(container: object) -> str:
    """The class of the ``xai`` object holding ``container`` (in a slot, or in its
    ``__dict__``; a module's name for a module's), ``?`` if none does."""
    for r in gc.get_referrers(container):
        if isinstance(r, dict):
            for owner in gc.get_referrers(r):
                if getattr(owner, "__dict__", None) is r:
                    r = owner
                    break
        if isinstance(r, types.ModuleType):
            name = r.__name__  # (a module's own registry)
        else:
            name = f"{type(r).__module__}.{type(r).__qualname__}"
        if name.startswith("xai."):
            return name
    return "?"


async def test_no_registry_keeps_a_closed_session(
    tmp_path: Path,
    scripted: OpenAIWireServer,
    provider: OpenAIProvider,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Once a Session has closed (and its stream is forgotten), nothing of the host, its
    Agent or the Session layer holds its id in a registry; only the long-term memory does
    (what was said in it: its episodes). The inputs move the mood (lexicon deltas)."""
    monkeypatch.setattr(host_streams, "CLOSED_STREAMS_KEPT", 1)
    async with AgentHost(tmp_path, lambda _: provider) as host:
        said = "I am so happy, this is wonderful!"
        closed = tuple([await one_session(host, n, said) for n in range(3)])  # (not a list:
        # a list of them would be found holding them)
        agent = await host.agent("ada")
        assert agent.mood.user.valence > 0  # (the digests ran)
        for session_id in closed[:-1]:  # (the last one's stream is still kept)
            held = holders_of(session_id)
            assert held, "the memory keeps its episodes"
            assert all(owner.startswith("xai.memory.") for owner in held), held
