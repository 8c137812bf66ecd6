"""Search's rankings pinned on a fixed corpus: a rewrite for speed must change nothing.

The corpus (facts and episodes of 24 sessions) and its vectors are deterministic: a
bag-of-words embedder hashes each word to a few of 64 dimensions, so meaning is
word overlap and no model is involved. ``EXPECTED`` is what the retrieval
returned, hit for hit, when a fact began to stand where it was said (the same on
the branch that made that change and after the speed rewrite was merged with it);
a change of the weights or cues changes it on purpose, and then this file is
updated with the new rankings. (The episodes' vectors held in memory went from
float16 to 16-bit fixed point: the same order, scores within 5e-4. The length,
answer and session's-best cues, which replaced the top-sessions boost, changed
the rankings on purpose.)
"""

from __future__ import annotations

import datetime as dt
import hashlib
import random
import re
from collections.abc import Sequence
from pathlib import Path

import msgspec
import numpy as np
import pytest

from xai.memory import (
    EpisodeCorpus,
    LongTermMemory,
    MemoryConfig,
    RecallWeights,
    ScoredEpisode,
    ScoredFact,
    rank,
)
from xai.memory._search import SearchTier
from xai.messages import Episode, MemoryCandidate

pytestmark = pytest.mark.anyio

DIMENSION = 64
_WORD = re.compile(r"[a-z0-9]+")


class WordsEmbedder:
    """Deterministic vectors: each word adds +-1 on three hashed dimensions."""

    name = "test:words"
    dimension = DIMENSION

    def vector(self, text: str) -> list[float]:
        out = np.zeros(DIMENSION)
        for word in _WORD.findall(text.lower()):
            digest = hashlib.blake2b(word.encode(), digest_size=6).digest()
            for n in range(3):
                out[digest[2 * n] % DIMENSION] += 1.0 if digest[2 * n + 1] % 2 else -1.0
        norm = float(np.linalg.norm(out))
        if not norm:
            out[0], norm = 1.0, 1.0
        return [float(x) for x in out / norm]

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        return [self.vector(t) for t in texts]


_TOPICS = (
    "pottery class", "hiking trip", "new puppy", "job interview", "piano lessons",
    "trip to Paris", "marathon training", "garden tomatoes", "book club", "camping weekend",
    "birthday party", "cooking pasta", "painting a mural", "moving house", "yoga retreat",
)  # fmt: skip
_LINES = (
    "I {verb} the {topic} yesterday and it was great.",
    "Last week I talked about the {topic} with my sister.",
    "Do you think the {topic} is a good idea?",
    "You suggested I try the {topic} next month.",
    "The {topic} went better than I expected.",
    "I am nervous about the {topic} this weekend.",
    "My friend loved the {topic} too.",
    "We finally finished the {topic} in {month}.",
)
_REPLIES = (
    "That sounds wonderful, tell me more about the {topic}.",
    "I recommend planning the {topic} early.",
    "How did you feel after the {topic}?",
    "I remember you mentioned the {topic} before.",
)
_VERBS = ("enjoyed", "started", "missed", "planned", "loved")
_MONTHS = ("January", "March", "May", "July", "September", "November")
_START = dt.datetime(2023, 1, 2, 10, tzinfo=dt.UTC).timestamp()


def _corpus() -> tuple[list[Episode], list[MemoryCandidate]]:
    rng = random.Random(14)
    episodes: list[Episode] = []
    for s in range(24):
        session = f"s{s:02d}"
        speaker = ("Ana", "Ben", "user")[s % 3]
        topics = rng.sample(_TOPICS, 2)
        for seq in range(10):
            topic = topics[seq // 5]
            values = {"topic": topic, "verb": rng.choice(_VERBS), "month": rng.choice(_MONTHS)}
            assistant = seq % 2 == 1
            said = rng.choice(_REPLIES if assistant else _LINES).format(**values)
            text = f"{said} Note {session}x{seq}."  # no two alike: no exact ties
            episodes.append(
                Episode(
                    id=f"{session}:{seq}",
                    session_id=session,
                    turn=seq // 2 + 1,
                    seq=seq,
                    origin="assistant" if assistant else "user",
                    speaker="assistant" if assistant else speaker,
                    text=text,
                    at=_START + s * 13 * 86_400 + 60 * seq,
                )
            )
    candidates = [
        MemoryCandidate(
            id=f"c{n}",
            text=f"{('Ana', 'Ben', 'The user')[n % 3]} {rng.choice(_VERBS)} the "
            f"{rng.choice(_TOPICS)} in {rng.choice(_MONTHS)} {2020 + n % 5} (c{n}).",
            kind="fact",
            confidence=0.8,
            evidence=(episodes[(7 * n) % len(episodes)].id,),
        )
        for n in range(60)
    ]
    return episodes, candidates


QUERIES: tuple[tuple[str, tuple[SearchTier, ...] | None], ...] = (
    ("pottery class", None),
    ("What did Ana say about the hiking trip?", None),
    ("When did Ben start piano lessons?", None),
    ("What did you recommend about the marathon training?", None),
    ("What happened at the book club on 15 May 2023?", None),
    ("the trip to Paris in July 2023", None),
    ("garden tomatoes", ("episodes",)),
    ("Ben loved the camping weekend", ("L1", "L2")),
    ("moving house yoga retreat", ("L1", "episodes")),
    ("When was the birthday party?", ("episodes",)),
)

EXPECTED: dict[str, list[str]] = {
    "pottery class None": [
        "s06:7",
        "s07:3",
        "s01:2",
        "s07:2",
        "s06:6",
        "s02:1",
        "s04:7",
        "s01:1",
        "s08:2",
        "s02:0",
    ],
    "What did Ana say about the hiking trip? None": [
        "fact:Ana loved the hiking trip in May 2020 (c45).",
        "s00:4",
        "fact:The user missed the hiking trip in November 2023 (c53).",
        "s21:6",
        "s00:2",
        "s21:8",
        "s00:3",
        "fact:The user loved the hiking trip in January 2021 (c26).",
        "s00:1",
        "fact:Ana started the garden tomatoes in July 2020 (c0).",
    ],
    "When did Ben start piano lessons? None": [
        "s19:2",
        "s19:0",
        "s10:8",
        "s19:4",
        "s11:2",
        "s10:7",
        "s10:6",
        "s22:8",
        "s22:6",
        "fact:Ben started the piano lessons in January 2023 (c43).",
    ],
    "What did you recommend about the marathon training? None": [
        "s13:7",
        "s09:9",
        "s16:7",
        "s13:9",
        "s09:5",
        "s09:7",
        "s16:5",
        "s16:9",
        "s13:5",
        "fact:Ben missed the marathon training in September 2024 (c34).",
    ],
    "What happened at the book club on 15 May 2023? None": [
        "s20:8",
        "s14:2",
        "s20:7",
        "fact:The user started the new puppy in May 2020 (c20).",
        "fact:The user enjoyed the book club in March 2020 (c5).",
        "s22:2",
        "s14:1",
        "s22:0",
        "fact:The user planned the moving house in May 2023 (c23).",
        "s14:4",
    ],
    "the trip to Paris in July 2023 None": [
        "s12:8",
        "s12:7",
        "s12:6",
        "s12:9",
        "s12:5",
        "s21:8",
        "fact:Ana planned the moving house in July 2023 (c48).",
        "s02:2",
        "s21:7",
        "fact:The user missed the hiking trip in November 2023 (c53).",
    ],
    "garden tomatoes ('episodes',)": [
        "s15:2",
        "s07:7",
        "s07:6",
        "s15:1",
        "s15:3",
        "s07:9",
        "s07:8",
        "s15:0",
        "s07:5",
        "s15:4",
    ],
    "Ben loved the camping weekend ('L1', 'L2')": [
        "fact:Ben enjoyed the camping weekend in September 2022 (c52).",
        "fact:Ben started the camping weekend in January 2022 (c7).",
        "fact:Ben loved the painting a mural in March 2022 (c22).",
        "fact:Ben loved the book club in November 2020 (c25).",
        "fact:Ben loved the painting a mural in July 2024 (c49).",
        "fact:Ben planned the cooking pasta in March 2020 (c10).",
        "fact:The user loved the garden tomatoes in May 2022 (c2).",
        "fact:Ben loved the piano lessons in January 2023 (c28).",
        "fact:The user loved the new puppy in November 2021 (c11).",
        "fact:The user loved the yoga retreat in March 2023 (c8).",
    ],
    "moving house yoga retreat ('L1', 'episodes')": [
        "s18:1",
        "s18:3",
        "s18:2",
        "s18:0",
        "s11:9",
        "s11:8",
        "s11:5",
        "s18:4",
        "s11:7",
        "fact:Ana started the yoga retreat in January 2023 (c3).",
    ],
    "When was the birthday party? ('episodes',)": [
        "s08:8",
        "s17:0",
        "s17:2",
        "s10:2",
        "s14:8",
        "s23:8",
        "s05:8",
        "s05:6",
        "s08:7",
        "s21:2",
    ],
    "corpus: pottery class": [
        "s06:7 1.3148",
        "s07:3 1.2900",
        "s01:2 1.2369",
        "s07:2 1.2327",
        "s06:6 1.1681",
        "s02:1 1.1427",
        "s04:7 1.1381",
        "s01:1 1.1228",
    ],
    "corpus: What did Ana say about the hiking trip?": [
        "s00:4 2.1715",
        "s21:6 1.7018",
        "s00:2 1.6732",
        "s21:8 1.4870",
        "s00:3 1.4786",
        "s00:1 1.3257",
        "s00:0 1.3139",
        "s21:7 1.2737",
    ],
    "corpus: When did Ben start piano lessons?": [
        "s19:2 4.0185",
        "s19:0 3.3312",
        "s10:8 3.1226",
        "s19:4 2.7978",
        "s11:2 2.2332",
        "s10:7 2.1570",
        "s10:6 2.1550",
        "s22:8 2.0527",
    ],
    "corpus: What did you recommend about the marathon training?": [
        "s13:7 3.7051",
        "s09:9 3.6367",
        "s16:7 3.5655",
        "s13:9 3.4389",
        "s09:5 3.1222",
        "s09:7 3.0654",
        "s16:5 2.8677",
        "s16:9 2.8199",
    ],
    "corpus: What happened at the book club on 15 May 2023?": [
        "s20:8 1.9219",
        "s14:2 1.8002",
        "s20:7 1.5712",
        "s14:0 1.5446",
        "s22:2 1.3762",
        "s14:1 1.3288",
        "s22:0 1.2952",
        "s14:4 1.2838",
    ],
    "corpus: the trip to Paris in July 2023": [
        "s12:8 4.0838",
        "s12:7 3.9852",
        "s12:6 3.6477",
        "s12:9 3.1375",
        "s12:5 2.2685",
        "s21:8 2.0967",
        "s02:2 1.2485",
        "s21:7 1.2355",
    ],
    "corpus: garden tomatoes": [
        "s15:2 1.9390",
        "s07:7 1.7958",
        "s07:6 1.7483",
        "s15:1 1.7241",
        "s15:3 1.7190",
        "s07:9 1.6283",
        "s07:8 1.6272",
        "s15:0 1.4657",
    ],
    "corpus: Ben loved the camping weekend": [
        "s00:7 3.0066",
        "s00:6 2.8180",
        "s00:8 2.3439",
        "s00:5 2.1258",
        "s00:9 1.9639",
        "s07:6 1.3621",
        "s22:0 1.3047",
        "s13:6 1.2434",
    ],
    "corpus: moving house yoga retreat": [
        "s18:1 2.4712",
        "s18:3 2.3759",
        "s18:2 2.0786",
        "s18:0 1.7181",
        "s11:9 1.6186",
        "s11:8 1.5353",
        "s11:5 1.5297",
        "s18:4 1.5049",
    ],
    "corpus: When was the birthday party?": [
        "s08:8 2.3390",
        "s17:0 1.8810",
        "s17:2 1.8734",
        "s10:2 1.7897",
        "s14:8 1.5934",
        "s23:8 1.5376",
        "s05:8 1.5041",
        "s05:6 1.4884",
    ],
}


async def _rankings(tmp_path: Path) -> dict[str, list[str]]:
    episodes, candidates = _corpus()
    weights = msgspec.structs.replace(RecallWeights(), depth=12)
    config = MemoryConfig(use_judge=False, recall=weights, check_support=False)
    out: dict[str, list[str]] = {}
    async with LongTermMemory(tmp_path, embedder=WordsEmbedder(), config=config) as memory:
        await memory.record_episodes(episodes)
        await memory.adjudicate(candidates, session_id="facts")
        for query, tiers in QUERIES:
            hits = await memory.search(query, k=10, tiers=tiers)
            out[f"{query} {tiers}"] = [
                h.episode.id if isinstance(h, ScoredEpisode) else f"fact:{h.fact.text}"
                for h in hits
                if isinstance(h, ScoredEpisode | ScoredFact)
            ]
    corpus = EpisodeCorpus()
    embedder = WordsEmbedder()
    corpus.add(episodes, await embedder.embed([f"{e.speaker}: {e.text}" for e in episodes]))
    for query, _ in QUERIES:
        vector = np.asarray(embedder.vector(query))
        pool = corpus.pool(query, vector, weights)
        out[f"corpus: {query}"] = [
            f"{item.id} {score:.4f}" for item, score in rank(query, pool, weights, 8)
        ]
    return out


async def test_search_returns_the_pinned_rankings(tmp_path: Path) -> None:
    got = await _rankings(tmp_path)
    assert got == EXPECTED
