"""The retrieval's cues are a list of named functions: taking one out of the list scores
exactly as setting its weight to 0 does, and the names are checked."""

from __future__ import annotations

import random
from typing import Any

import msgspec
import numpy as np
import pytest

from xai.exceptions import ConfigurationError
from xai.memory._cues import DEFAULT_CUES, fuse
from xai.memory._recall import PoolItem, RecallWeights, rank

_TEXTS = (
    "What did you do yesterday?",
    "I went hiking last week with Caroline.",
    "Thanks!",
    "When is the party?",
    "Melanie painted a sunrise in May 2023",
    "Do you remember my dog?",
)
_QUERIES = (
    "When did Caroline go hiking?",
    "what did you say about my dog",
    "Melanie painting in May 2023",
    "what happened on 8 May 2023?",
)

_WEIGHT_OFF: dict[str, dict[str, Any]] = {
    "length": {"length": 0.0},
    "neighbours": {"neighbours": ()},
    "answers": {"answer": 0.0},
    "session_best": {"session_best": 0.0},
    "speaker": {"speaker": 0.0, "you": 0.0},
    "time_words": {"time_words": 0.0},
    "dates": {"date": 0.0},
    "leading_sessions": {"session": 0.0},
}
"""Each cue and the weights that turn it off."""


def pools(seed: int, count: int) -> list[list[PoolItem]]:
    rng = random.Random(seed)
    out = []
    for _ in range(count):
        n = rng.randint(2, 30)
        out.append(
            [
                PoolItem(
                    id=f"e{i}",
                    kind="episode",
                    dense=rng.random(),
                    lexical=rng.random() * 5,
                    session_id=f"s{rng.randint(0, 3)}",
                    seq=rng.randint(0, 8),
                    speaker=rng.choice(["Caroline", "Melanie", "assistant"]),
                    text=rng.choice(_TEXTS),
                    at=1_683_500_000.0 + rng.randint(-30, 30) * 86_400,
                    origin=rng.choice(["user", "assistant"]),
                )
                for i in range(n)
            ]
        )
    return out


def test_every_cue_has_a_weight_that_turns_it_off() -> None:
    names = [c.__name__ for c in (*DEFAULT_CUES.base, *DEFAULT_CUES.scores)]
    assert sorted(names) == sorted(_WEIGHT_OFF)


@pytest.mark.parametrize("cue", sorted(_WEIGHT_OFF))
def test_taking_a_cue_out_of_the_list_is_its_weight_at_zero(cue: str) -> None:
    weights = RecallWeights(session=0.5)  # the leading sessions' cue on, to be taken out
    off = msgspec.structs.replace(weights, **_WEIGHT_OFF[cue])
    ablated = DEFAULT_CUES.without(cue)
    differs = 0
    for n, pool in enumerate(pools(7, 60)):
        query = _QUERIES[n % len(_QUERIES)]
        expected = fuse(query, pool, off)
        assert np.allclose(fuse(query, pool, weights, cues=ablated), expected), (cue, n)
        differs += not np.allclose(fuse(query, pool, weights), expected)
        top = [item.id for item, _ in rank(query, pool, off, 5)]
        assert [item.id for item, _ in rank(query, pool, weights, 5, cues=ablated)] == top
    assert differs, f"the cue {cue} never changed a score: the pools do not exercise it"


def test_an_unknown_cue_is_refused() -> None:
    with pytest.raises(ConfigurationError, match="no cue named"):
        DEFAULT_CUES.without("recency")
