"""The observer hub: exact gaps under both overflow policies, honest gap envelopes, and a
subscriber list that may shrink while it is being walked."""

from __future__ import annotations

import gc
import random
import weakref
from typing import Any

import pytest

from xai.events import EventsDropped, SessionEvent, TextDelta
from xai.session import Hub, OverflowPolicy, Subscription
from xai.session._observers import GAP_SEQ


def new_hub() -> Hub[SessionEvent]:
    return Hub(lambda seq, body: SessionEvent("s", seq, body))


def delta(n: int) -> TextDelta:
    return TextDelta(query_id="q", round=1, text=str(n))


def received_and_gaps(events: list[SessionEvent]) -> tuple[list[int], list[tuple[int, int]]]:
    seqs: list[int] = []
    gaps: list[tuple[int, int]] = []
    for event in events:
        if isinstance(event.event, EventsDropped):
            gap = event.event
            assert event.seq == GAP_SEQ
            assert gap.count == gap.last_seq - gap.first_seq + 1
            gaps.append((gap.first_seq, gap.last_seq))
        else:
            seqs.append(event.seq)
    return seqs, gaps


@pytest.mark.parametrize("policy", ["drop_oldest", "drop_newest"])
@pytest.mark.parametrize("seed", range(20))
def test_every_published_event_is_received_once_or_reported_lost_once(
    policy: OverflowPolicy, seed: int
) -> None:
    """A reader that reads now and then: what it receives and the gaps it is told of are
    exactly the published events, in order, with no overlap (old: a ``drop_newest`` gap
    also named events the reader then received)."""
    rng = random.Random(seed)
    hub = new_hub()
    capacity = rng.randint(1, 6)
    subscription = hub.subscribe(capacity, policy)
    got: list[SessionEvent] = []
    published = 0
    for _ in range(300):
        if rng.random() < 0.6:
            published += 1
            hub.publish(delta(published))
        else:
            for _ in range(rng.randint(1, 3)):
                event = subscription.get_nowait()
                if event is not None:
                    got.append(event)
        buffered = sum(1 for item in subscription._buffer if not hasattr(item, "count"))
        assert buffered <= capacity
    while (event := subscription.get_nowait()) is not None:
        got.append(event)
    assert subscription.missed == 0
    # In arrival order, each gap or event continues exactly where the previous one ended.
    expected = 1
    for event in got:
        body = event.event
        if isinstance(body, EventsDropped):
            assert body.first_seq == expected, (policy, seed, got)
            expected = body.last_seq + 1
        else:
            assert event.seq == expected, (policy, seed, got)
            expected += 1
    assert expected == published + 1
    seqs, gaps = received_and_gaps(got)
    lost = {seq for first, last in gaps for seq in range(first, last + 1)}
    assert not lost & set(seqs)


def test_drop_newest_reports_two_gaps_around_what_arrived_in_between() -> None:
    hub = new_hub()
    subscription = hub.subscribe(2, "drop_newest")
    for n in range(1, 4):  # 3 is lost
        hub.publish(delta(n))
    assert subscription.get_nowait() is not None  # 1: room for one more
    hub.publish(delta(4))  # kept
    hub.publish(delta(5))  # lost
    got = [subscription.get_nowait() for _ in range(4)]
    shape = [
        (e.event.first_seq, e.event.last_seq) if isinstance(e.event, EventsDropped) else e.seq
        for e in got
        if e is not None
    ]
    assert shape == [2, (3, 3), 4, (5, 5)]
    assert subscription.get_nowait() is None


def test_the_gap_envelope_takes_no_seq_of_a_published_event() -> None:
    hub = new_hub()
    subscription = hub.subscribe(1, "drop_oldest")
    for n in range(1, 4):
        hub.publish(delta(n))
    gap, last = subscription.get_nowait(), subscription.get_nowait()
    assert gap is not None and last is not None
    assert isinstance(gap.event, EventsDropped) and (gap.event.first_seq, gap.event.last_seq) == (
        1,
        2,
    )
    assert gap.seq == GAP_SEQ == 0 and last.seq == 3


def test_publish_survives_a_subscription_collected_while_the_list_is_walked() -> None:
    """A subscription that dies during ``publish`` (its weakref callback edits the list) must
    not make publish skip a live subscriber (old: the live list was iterated)."""
    hub = new_hub()
    victims: list[Any] = [hub.subscribe(10, "drop_oldest")]

    class Releasing(Subscription[SessionEvent]):
        def push(self, event: SessionEvent) -> None:
            super().push(event)
            victims.clear()  # the last reference to the first subscription
            gc.collect()

    releasing = Releasing(hub, 10, "drop_oldest")
    hub._refs.append(weakref.ref(releasing, hub._forget))
    last = hub.subscribe(10, "drop_oldest")
    hub.publish(delta(1))
    assert [e.seq for e in (releasing.get_nowait(), last.get_nowait()) if e is not None] == [1, 1]
    assert hub.count == 2
