"""A host actor sends a Session's events in batches: all the events there are when an item
is sent, never waiting for more (a Ray stream item costs far more than an event)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

pytest.importorskip("ray", reason="Ray is not installed (the xai[ray] extra)")

from xai.cluster._actor import _BATCH, _batches
from xai.events import SessionEvent, TurnStarted
from xai.exceptions import EventsExpiredError

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # the host actor's loop


def event(seq: int) -> SessionEvent:
    return SessionEvent(session_id="s", seq=seq, event=TurnStarted(turn=seq, input=None))


async def test_the_events_there_are_go_together_and_a_later_one_is_not_held() -> None:
    later, taken = asyncio.Event(), asyncio.Event()

    async def stream() -> AsyncIterator[SessionEvent]:
        for seq in (1, 2, 3):  # there at once
            yield event(seq)
        await later.wait()
        yield event(4)
        await taken.wait()
        yield event(5)

    batches = _batches(stream())
    assert [e.seq for e in await anext(batches)] == [1, 2, 3]
    later.set()
    assert [e.seq for e in await anext(batches)] == [4]  # alone: nothing waited for more
    taken.set()
    assert [[e.seq for e in b] async for b in batches] == [[5]]


async def test_a_batch_has_at_most_its_limit() -> None:
    async def stream() -> AsyncIterator[SessionEvent]:
        for seq in range(1, _BATCH + 3):
            yield event(seq)

    sizes = [len(b) async for b in _batches(stream())]
    assert sizes == [_BATCH, 2]


async def test_a_failing_stream_gives_its_events_then_its_error() -> None:
    async def stream() -> AsyncIterator[SessionEvent]:
        yield event(1)
        raise EventsExpiredError("s", 1, first=5, last=9)

    batches = _batches(stream())
    assert [e.seq for e in await anext(batches)] == [1]
    with pytest.raises(EventsExpiredError):
        await anext(batches)
