"""Changes of value caught by the rules (no model): the labelled pairs of
``tests/data/value_changes.jsonl`` through a real memory (chromadb, offline MiniLM,
``use_judge=False``).

Each pair is said 60 days apart in two Sessions (an episode each, the statement proposed
as a candidate citing it) into a fresh memory. A change (``"change": true``) is caught
when the old fact is ``superseded`` with ``valid_to`` set AND a search with the old
statement itself as the query (the query most in the old value's favour) ranks the new
value (its fact or its episode) above the old episode. A non-change (``false``: another
subject or another attribute) must leave both facts active. The rules were chosen on the
``choose`` half; the ``report`` half is the held-out figure.

    python bench/value_changes.py [--half choose|report|all]

The last line is one JSON object (``*_ratio``: caught / changes, kept / non-changes).
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

import anyio
import msgspec

from xai.memory import (
    Embedder,
    LongTermMemory,
    MemoryConfig,
    MemoryHit,
    ScoredEpisode,
    ScoredFact,
    local_minilm,
)
from xai.messages import Episode, MemoryCandidate

DATA = Path(__file__).resolve().parents[1] / "tests" / "data" / "value_changes.jsonl"
DAY = 86_400.0
T0 = 1_780_000_000.0


class Pair(msgspec.Struct, frozen=True):
    old: str
    new: str
    change: bool
    half: str


def load(half: str) -> list[Pair]:
    rows = [msgspec.json.decode(line, type=Pair) for line in DATA.read_text().splitlines()]
    return [r for r in rows if half == "all" or r.half == half]


def _text(hit: MemoryHit) -> str:
    return hit.fact.text if isinstance(hit, ScoredFact) else hit.episode.text


async def judge_pair(pair: Pair, embedder: Embedder, root: Path) -> tuple[bool, str]:
    """(the outcome the label asks for, the decision kind of the second statement)."""
    now = [T0]
    config = MemoryConfig(use_judge=False)
    async with LongTermMemory(root, embedder=embedder, config=config, clock=lambda: now[0]) as m:
        kinds: list[str] = []
        for n, text in enumerate((pair.old, pair.new)):
            episode = Episode(
                id=f"e{n}", session_id=f"s{n}", turn=0, seq=0, origin="user", speaker="user",
                text=text, at=now[0],
            )  # fmt: skip
            await m.record_episodes([episode])
            candidate = MemoryCandidate(
                id=f"c{n}", text=text, kind="fact", confidence=0.8, evidence=(episode.id,),
                session_id=f"s{n}", created_at=now[0],
            )  # fmt: skip
            kinds = [d.kind for d in await m.adjudicate([candidate], session_id=f"s{n}")]
            now[0] += 60 * DAY
        old = m.get("fc0")
        assert old is not None
        superseded = old.status == "superseded" and old.valid_to is not None
        if not pair.change:
            return not superseded and old.status == "active", ",".join(kinds)
        hits = await m.search(pair.old, 10)
        texts = [_text(h) for h in hits]
        new_at = next((i for i, t in enumerate(texts) if t == pair.new), len(texts))
        old_at = next(
            (
                i
                for i, h in enumerate(hits)
                if isinstance(h, ScoredEpisode) and h.episode.id == "e0"
            ),
            len(texts) + 1,
        )
        return superseded and new_at < old_at, ",".join(kinds)


async def main(half: str, verbose: bool) -> None:
    embedder = local_minilm()
    pairs = load(half)
    caught = kept = changes = others = 0
    with tempfile.TemporaryDirectory() as tmp:
        for n, pair in enumerate(pairs):
            ok, kinds = await judge_pair(pair, embedder, Path(tmp) / str(n))
            if pair.change:
                changes += 1
                caught += ok
            else:
                others += 1
                kept += ok
            if verbose and not ok:
                label = "change" if pair.change else "keep"
                print(f"  MISS [{label}] {pair.old!r} -> {pair.new!r}: {kinds}")
    print(f"{half}: {caught}/{changes} changes caught, {kept}/{others} non-changes kept")
    print(
        json.dumps(
            {
                "half": half,
                "changes": changes,
                "caught": caught,
                "caught_ratio": round(caught / changes, 3) if changes else None,
                "non_changes": others,
                "kept": kept,
                "kept_ratio": round(kept / others, 3) if others else None,
            }
        )
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--half", choices=("choose", "choose2", "report", "all"), default="choose")
    parser.add_argument("-v", "--verbose", action="store_true")
    args = parser.parse_args()
    anyio.run(main, args.half, args.verbose)
