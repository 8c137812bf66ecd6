"""Grounded candidates (issue 29): a candidate its cited message does not support is dropped
and the rejection logged like the others (a ``drop`` decision with the reason). The case
that prompted it: a small model made the assistant's "You're a wizard, don't forget to
remember it!" the user fact "I'm a wizard, ...", citing a user message that said nothing
of it. Real MiniLM and chromadb; rules adjudication."""

from __future__ import annotations

from pathlib import Path

import pytest

from xai.memory import LongTermMemory, MemoryConfig
from xai.messages import Episode, MemoryCandidate

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(120)]


def said(n: int, text: str) -> Episode:
    return Episode(
        id=f"e{n}", session_id="s1", turn=n, seq=n, origin="user", speaker="user", text=text,
        at=1_780_000_000.0 + n,
    )  # fmt: skip


def proposed(n: int, text: str, evidence: str) -> MemoryCandidate:
    return MemoryCandidate(
        id=f"c{n}", text=text, kind="fact", confidence=0.8, evidence=(evidence,),
        session_id="s1", created_at=1_780_000_000.0,
    )  # fmt: skip


async def test_a_candidate_its_evidence_does_not_support_is_dropped(tmp_path: Path) -> None:
    async with LongTermMemory(tmp_path, config=MemoryConfig(use_judge=False)) as memory:
        await memory.record_episodes(
            [said(1, "Can you help me plan my week?"), said(2, "I moved to Lisbon last month.")]
        )
        wizard = proposed(1, "I'm a wizard, don't forget to remember it!", "e1")
        lisbon = proposed(2, "The user moved to Lisbon.", "e2")
        dropped, added = await memory.adjudicate([wizard, lisbon], session_id="s1")
        assert dropped.kind == "drop" and dropped.candidate == wizard
        assert dropped.reason.startswith("not supported by its evidence (overlap 0.00")
        assert added.kind == "add" and added.facts[0].text == "The user moved to Lisbon."
        assert [f.text for f in memory.facts()] == ["The user moved to Lisbon."]
        assert next(d.reason for d in memory.ledger()) == dropped.reason  # in the ledger

    loose = MemoryConfig(use_judge=False, check_support=False)
    async with LongTermMemory(tmp_path / "off", config=loose) as memory:
        await memory.record_episodes([said(1, "Can you help me plan my week?")])
        (decision,) = await memory.adjudicate([proposed(3, "I'm a wizard.", "e1")])
        assert decision.kind == "add"  # the check can be turned off
