"""Changes of value caught by the rules alone (issue 29), on the labelled pairs of
``tests/data/value_changes.jsonl``: each is an old statement, a new one said 60 days
later, and whether the new one changes the old one's value. The rules were chosen on the
``choose`` and ``choose2`` halves; ``report`` was written after them and measured once
(``bench/value_changes.py`` prints every figure)."""

from __future__ import annotations

from pathlib import Path

import msgspec
import pytest

from xai.memory import (
    LongTermMemory,
    MemoryConfig,
    MemoryHit,
    ScoredEpisode,
    ScoredFact,
    local_minilm,
)
from xai.memory._policy import relation
from xai.messages import Episode, MemoryCandidate

DATA = Path(__file__).parent / "data" / "value_changes.jsonl"
DAY = 86_400.0
T0 = 1_780_000_000.0


class Pair(msgspec.Struct, frozen=True):
    old: str
    new: str
    change: bool
    half: str


PAIRS = [msgspec.json.decode(line, type=Pair) for line in DATA.read_text().splitlines()]


def test_the_labelled_set_is_big_enough_and_split() -> None:
    changes = [p for p in PAIRS if p.change]
    assert len(changes) >= 50
    assert {p.half for p in PAIRS} == {"choose", "choose2", "report"}
    assert sum(p.change for p in PAIRS if p.half == "report") >= 25
    assert sum(not p.change for p in PAIRS if p.half == "report") >= 10


def test_the_rules_tell_a_change_from_another_fact() -> None:
    """The policy alone (no embeddings), every pair: a change contradicts, the rest not."""
    right = [(relation(p.new, p.old) == "contradicts") == p.change for p in PAIRS]
    assert sum(right) / len(right) >= 0.9, [p for p, ok in zip(PAIRS, right, strict=True) if not ok]


def _text(hit: MemoryHit) -> str:
    return hit.fact.text if isinstance(hit, ScoredFact) else hit.episode.text


async def _outcome(pair: Pair, root: Path) -> bool:
    now = [T0]
    config = MemoryConfig(use_judge=False)
    async with LongTermMemory(
        root, embedder=local_minilm(), config=config, clock=lambda: now[0]
    ) as memory:
        for n, text in enumerate((pair.old, pair.new)):
            said = Episode(
                id=f"e{n}", session_id=f"s{n}", turn=0, seq=0, origin="user", speaker="user",
                text=text, at=now[0],
            )  # fmt: skip
            await memory.record_episodes([said])
            candidate = MemoryCandidate(
                id=f"c{n}", text=text, kind="fact", confidence=0.8, evidence=(said.id,),
                session_id=f"s{n}", created_at=now[0],
            )  # fmt: skip
            await memory.adjudicate([candidate], session_id=f"s{n}")
            now[0] += 60 * DAY
        old = memory.get("fc0")
        assert old is not None
        if not pair.change:
            return old.status == "active"
        if old.status != "superseded" or old.valid_to is None:
            return False
        # The query most in the old value's favour: the old statement itself.
        hits = await memory.search(pair.old, 10)
        texts = [_text(h) for h in hits]
        new_at = texts.index(pair.new) if pair.new in texts else len(texts)
        old_at = next(
            (
                i
                for i, h in enumerate(hits)
                if isinstance(h, ScoredEpisode) and h.episode.id == "e0"
            ),
            len(hits) + 1,
        )
        return new_at < old_at


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
@pytest.mark.timeout(300)
async def test_held_out_changes_supersede_and_rank_the_new_value_first(
    tmp_path: Path, anyio_backend: str
) -> None:
    """Through a real memory (rules only): in >= 90 % of the held-out changes the old fact
    is superseded with ``valid_to`` and the new value ranks above the old episode; >= 90 %
    of the held-out non-changes leave the old fact active."""
    held_out = [p for p in PAIRS if p.half == "report"]
    outcomes = [(p, await _outcome(p, tmp_path / str(n))) for n, p in enumerate(held_out)]
    changes = [ok for p, ok in outcomes if p.change]
    others = [ok for p, ok in outcomes if not p.change]
    missed = [p for p, ok in outcomes if not ok]
    assert sum(changes) / len(changes) >= 0.9, missed
    assert sum(others) / len(others) >= 0.9, missed
