"""Which facts a prefix showed (their recall is recorded): looked up, not tested one by one."""

from __future__ import annotations

import random

from xai.memory import Fact
from xai.memory._prefix import PrefixOrder, compose_prefix


def _fact(i: int, text: str, tier: str = "L1") -> Fact:
    return Fact(id=f"f{i}", text=text, tier=tier, first_seen=1e9, last_seen=1e9 + i)  # type: ignore[arg-type]


def _naive(order: PrefixOrder, text: str) -> set[str]:
    """What the prefix recorded before: each fact's line tested against the text."""
    return {f.id for t in order.tiers.values() for f in t if f"- {f.text}" in text}


def test_shown_is_every_fact_whose_line_occurs_in_the_text() -> None:
    texts = [
        "likes tea",
        "likes tea and coffee",  # the first is inside its line
        "tea",
        "",  # in every text that holds "- "
        "a - b",  # a "- " inside a fact's text
        "b",
        "two\nlines",
        "lives in Oslo",
        "lives in Oslo (2001-09-09)",
        "never shown",
    ]
    facts = [_fact(i, t, "L2" if i % 3 == 0 else "L1") for i, t in enumerate(texts)]
    facts.append(_fact(99, "likes tea"))  # the same text twice
    order = PrefixOrder(facts, 30.0)
    samples = [
        "",
        "no dash here",
        "- likes tea and coffee (2001-09-09)",
        "Stable facts:\n- a - b (2001)\n- two\nlines\n- - lives in Oslo (2001-09-09)",
        "-",
        "- ",
        "x- tea",
    ]
    rng = random.Random(7)
    for _ in range(200):
        pieces = [rng.choice([*texts, "- ", "-", " ", "\n", "(2001-09-09)"]) for _ in range(6)]
        samples.append("".join(pieces))
    for sample in samples:
        assert set(order.shown(sample)) == _naive(order, sample), sample


def test_shown_by_a_real_prefix() -> None:
    facts = [_fact(i, f"fact number {i} about topic {i % 7}") for i in range(300)]
    order = PrefixOrder(facts, 30.0)
    text, _, _ = compose_prefix(
        order, {f.id: f for f in facts}, {}, lambda f: (0.0, 1.0, 1.0), 0.0, 120
    )
    assert text
    assert set(order.shown(text)) == _naive(order, text)
