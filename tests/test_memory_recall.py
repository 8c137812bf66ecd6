"""The library's retrieval: the fusion's cues over a candidate pool, and the episode corpus."""

from __future__ import annotations

import datetime as dt
from typing import Any

import msgspec
import numpy as np
import pytest

from xai.exceptions import ConfigurationError
from xai.memory import (
    Columns,
    EpisodeCorpus,
    PoolItem,
    RecallWeights,
    fuse,
    local_minilm,
    rank,
)
from xai.memory._dates import day_of, question_windows
from xai.memory._recall import _DATE_WEIGHT, _near_dates, _z, named_speaker

WEIGHTS = RecallWeights()
pytestmark = pytest.mark.anyio


def _at(day: str) -> float:
    return dt.datetime.fromisoformat(day).replace(tzinfo=dt.UTC).timestamp()


def _episode(
    id: str,
    session: str,
    seq: int,
    *,
    dense: float = 0.2,
    lexical: float = 0.0,
    speaker: str = "Ana",
    text: str = "something",
    at: float = 0.0,
    origin: str = "user",
) -> PoolItem:
    return PoolItem(
        id=id,
        kind="episode",
        dense=dense,
        lexical=lexical,
        session_id=session,
        seq=seq,
        speaker=speaker,
        text=text,
        at=at,
        origin=origin,
    )


def _filler(n: int = 12) -> list[PoolItem]:
    """Unrelated episodes in sessions of their own, so the pool has a spread."""
    return [_episode(f"x{i}", f"sx{i}", 0, dense=0.1 + 0.01 * i) for i in range(n)]


def _filler_facts(n: int = 12) -> list[PoolItem]:
    return [PoolItem(id=f"y{i}", kind="fact", dense=0.1 + 0.01 * i, lexical=0.0) for i in range(n)]


def _best(query: str, pool: list[PoolItem], weights: RecallWeights = WEIGHTS) -> str:
    return rank(query, pool, weights, 1)[0][0].id


def test_a_date_in_the_query_lifts_the_episodes_said_that_day() -> None:
    may = _episode("may", "s1", 0, dense=0.50, at=_at("2023-05-08T13:00:00"))
    june = _episode("june", "s2", 0, dense=0.52, at=_at("2023-06-20T13:00:00"))
    pool = [may, june, *_filler()]
    assert _best("What did Ana paint?", pool) == "june"
    assert _best("What did Ana paint on 8 May, 2023?", pool) == "may"
    assert _best("What did Ana paint in May 2023?", pool) == "may"
    # by the episode's time, not by any header text
    assert _best("What did Ana paint on 8 May, 2023?", [msgspec.structs.replace(may, at=_at("2023-07-30T00:00:00")), june, *_filler()]) == "june"  # fmt: skip


def test_the_one_speaker_the_query_names_is_favoured() -> None:
    ana = _episode("ana", "s1", 0, dense=0.50, speaker="Ana")
    ben = _episode("ben", "s2", 0, dense=0.52, speaker="Ben")
    pool = [ana, ben, *_filler()]
    assert _best("What does the dog eat?", pool) == "ben"
    assert _best("What does Ana's dog eat?", pool) == "ana"
    assert _best("What do Ana and Ben's dogs eat?", pool) == "ben"  # two named: no cue


def test_a_question_about_what_you_said_names_the_assistant() -> None:
    speakers = {"user", "assistant"}
    assert named_speaker("What did you recommend last time?", speakers) == "assistant"
    assert named_speaker("Can you tell me where I parked?", speakers) is None
    assert named_speaker("What did Ana say?", {"Ana", "assistant"}) == "Ana"


def test_an_episode_is_lifted_by_its_neighbours_in_the_session() -> None:
    alone = _episode("alone", "s1", 0, dense=0.50)
    answer = _episode("answer", "s2", 5, dense=0.49)
    question = _episode("question", "s2", 4, dense=0.45)
    pool = [alone, answer, question, *_filler()]
    assert _best("q", pool) == "answer"
    assert _best("q", pool, msgspec.structs.replace(WEIGHTS, neighbours=(), session=0)) == "alone"
    far = msgspec.structs.replace(question, seq=1)  # not a neighbour: no lift
    assert _best("q", [alone, answer, far, *_filler()], msgspec.structs.replace(WEIGHTS, session=0)) == "alone"  # fmt: skip


def test_a_question_passes_a_share_of_its_score_to_its_answer() -> None:
    # The query shares words with Ben's question; the fact is in Ana's reply.
    asked = _episode("asked", "s1", 3, dense=0.60, speaker="Ben", text="Why the colours?")
    reply = _episode("reply", "s1", 4, dense=0.30, text="I love them, they cheer people up.")
    seen = _episode("seen", "s2", 0, dense=0.40, text="The bowl turned out well.")
    pool = [asked, reply, seen, *_filler()]
    cue = msgspec.structs.replace(WEIGHTS, neighbours=(), session_best=0.0, length=0.0)  # it alone
    assert cue.answer > 0  # on by default
    scores = dict(zip((p.id for p in pool), fuse("q", pool, cue), strict=True))
    off = msgspec.structs.replace(cue, answer=0.0)
    before = dict(zip((p.id for p in pool), fuse("q", pool, off), strict=True))
    assert before["reply"] < before["seen"] < before["asked"]
    assert scores["reply"] > scores["seen"]  # lifted past a better-matching turn
    assert scores["asked"] < before["asked"]  # and the question gave it up
    # only a question, and only to another speaker's next turn, when a person said it:
    # never to the assistant's reply, another agent's (named or not), a tool's or the
    # system's input, whatever the speaker is called
    for changed_asked, changed_reply in (
        (msgspec.structs.replace(asked, text="Nice colours."), reply),
        (msgspec.structs.replace(asked, speaker="Ana"), reply),
        (msgspec.structs.replace(asked, seq=1), reply),
        (asked, msgspec.structs.replace(reply, speaker="assistant", origin="assistant")),
        (asked, msgspec.structs.replace(reply, origin="assistant")),
        (asked, msgspec.structs.replace(reply, speaker="Planner", origin="agent")),
        (asked, msgspec.structs.replace(reply, speaker="agent", origin="agent")),
        (asked, msgspec.structs.replace(reply, speaker="tool", origin="tool")),
        (asked, msgspec.structs.replace(reply, speaker="system", origin="system")),
    ):
        pool = [changed_asked, changed_reply, seen, *_filler()]
        scores = dict(zip((p.id for p in pool), fuse("q", pool, cue), strict=True))
        assert scores["reply"] < scores["seen"], changed_reply
    # a user answering the assistant's question does take it
    assistant = msgspec.structs.replace(asked, speaker="assistant", origin="assistant")
    pool = [assistant, reply, seen, *_filler()]
    scores = dict(zip((p.id for p in pool), fuse("q", pool, cue), strict=True))
    assert scores["reply"] > scores["seen"]
    # and a person is a person whatever the name: a user called "Assistant" answers
    named = msgspec.structs.replace(reply, speaker="Assistant")
    pool = [asked, named, seen, *_filler()]
    scores = dict(zip((p.id for p in pool), fuse("q", pool, cue), strict=True))
    assert scores["reply"] > scores["seen"]
    # two turns at the answer's place (the corpus keeps equal seqs): one takes the share,
    # and it is what the question gave up
    twin = msgspec.structs.replace(reply, id="twin")
    pool = [asked, reply, twin, seen, *_filler()]
    moved = fuse("q", pool, cue) - fuse("q", pool, off)
    assert moved[1] > 0 and moved[2] == 0 and moved[0] == pytest.approx(-moved[1])
    # a note after the question mark (an attachment) still leaves it a question
    noted = msgspec.structs.replace(asked, text="Why the colours? [shares a photo: a bowl]")
    pool = [noted, reply, seen, *_filler()]
    scores = dict(zip((p.id for p in pool), fuse("q", pool, cue), strict=True))
    assert scores["reply"] > scores["seen"]


def test_an_episode_gains_a_share_of_the_best_score_in_its_session() -> None:
    top = _episode("top", "s1", 0, dense=0.9)
    same_session = _episode("same", "s1", 10, dense=0.3)  # far from top: no neighbour
    other = _episode("other", "s9", 0, dense=0.32)
    pool = [top, same_session, other, *_filler()]
    scores = dict(zip((p.id for p in pool), fuse("q", pool, WEIGHTS), strict=True))
    assert scores["same"] > scores["other"]
    plain = fuse("q", pool, msgspec.structs.replace(WEIGHTS, session_best=0))
    assert plain[1] < plain[2]


def test_the_sessions_holding_the_best_episodes_are_boosted_when_asked() -> None:
    top = _episode("top", "s1", 0, dense=0.9)
    same_session = _episode("same", "s1", 10, dense=0.3)
    second = _episode("second", "s2", 0, dense=0.6)
    other = _episode("other", "s9", 0, dense=0.32)
    pool = [top, same_session, other, second, *_filler()]
    apart = msgspec.structs.replace(WEIGHTS, session_best=0)
    boosted = fuse("q", pool, msgspec.structs.replace(apart, session=0.25))
    assert boosted[1] > boosted[2]
    plain = fuse("q", pool, apart)  # the default: no boost
    assert plain[1] < plain[2]


def test_a_long_turn_outranks_a_short_one_that_matches_as_well() -> None:
    short = _episode("short", "s1", 0, dense=0.4, text="Sure, sounds good!")
    long = _episode(
        "long", "s2", 0, dense=0.4, text="We drove to the coast on Sunday and hiked the cliffs."
    )
    pool = [short, long, *_filler()]
    scores = fuse("q", pool, WEIGHTS)
    assert scores[1] > scores[0]
    flat = fuse("q", pool, msgspec.structs.replace(WEIGHTS, length=0))
    assert flat[1] == pytest.approx(flat[0])


def test_facts_and_episodes_share_one_ranking_and_facts_take_no_episode_cues() -> None:
    fact = PoolItem(id="f", kind="fact", dense=0.6, lexical=2.0, text="Ana paints")
    episode = _episode("e", "s1", 0, dense=0.4, at=_at("2023-05-08T00:00:00"))
    pool = [fact, episode, *_filler()]
    assert _best("What does she paint?", [*pool, *_filler_facts()]) == "f"
    dated = fuse("What did Ana paint on 8 May 2023?", pool, WEIGHTS)
    undated = fuse("What did Ana paint?", pool, WEIGHTS)
    assert dated[1] > undated[1]  # the date lifts the episode
    assert dated[0] == undated[0]  # and not the fact
    # nor does any other episode cue, though the fact has all an episode would need to
    # take it: a session and a place in it, right after another speaker's question, the
    # speaker the query names (among turns of theirs of other lengths), the assistant's
    # name, a time word, a date the query names
    question = _episode("ask", "s1", 0, dense=0.5, speaker="Ben", text="And what do you paint?")
    said = [_episode(f"a{i}", "s2", i, dense=0.3, text="x" * 9**i) for i in range(3)]
    said += [  # a question an episode answers
        _episode("why", "s3", 0, dense=0.5, speaker="Ben", text="Why so?"),
        _episode(
            "so", "s3", 1, dense=0.2, text="It rained yesterday.", at=_at("2023-05-08T09:00:00")
        ),
        _episode("me", "s4", 0, dense=0.2, speaker="assistant", text="Try watercolours."),
    ]
    for speaker in ("Ana", "assistant"):
        told = PoolItem(
            id="f", kind="fact", dense=0.6, lexical=2.0, session_id="s1", seq=1, speaker=speaker,
            text="Ana paints every weekend since last May, and what do you paint?",
            at=_at("2023-05-08T00:00:00"),
        )  # fmt: skip
        pool = [told, question, *said, *_filler()]
        plain = msgspec.structs.replace(
            WEIGHTS, neighbours=(), length=0.0, answer=0.0, session_best=0.0, speaker=0.0,
            you=0.0, time_words=0.0, date=0.0,
        )  # fmt: skip
        cues: dict[str, dict[str, Any]] = {
            "length": {"length": WEIGHTS.length},
            "answer": {"answer": WEIGHTS.answer},
            "session_best": {"session_best": WEIGHTS.session_best},
            "neighbours": {"neighbours": WEIGHTS.neighbours},
            "session": {"session": 0.25},
            "speaker": {"speaker": WEIGHTS.speaker},
            "you": {"you": WEIGHTS.you},
            "time_words": {"time_words": WEIGHTS.time_words},
            "date": {"date": WEIGHTS.date},
        }
        for cue, setting in cues.items():
            # a query that names Ana, or none (then its "you" is the assistant)
            named = "Ana" if cue != "you" else "one"
            query = f"When did {named} say what you paint, on 8 May 2023?"
            alone = msgspec.structs.replace(plain, **setting)
            moved = fuse(query, pool, alone) - fuse(query, pool, plain)
            assert moved[0] == 0, (speaker, cue)  # the fact: not moved
            assert moved[1:].any(), (speaker, cue)  # the cue does act on the episodes


def test_a_fact_stands_where_it_was_said_and_shares_its_turn_s_slot() -> None:
    """A fact drawn from an episode in the pool takes that episode's fused score, cues
    and all (here the date the query names), and the two take one slot of k."""
    said = _episode("e", "s1", 0, dense=0.3, at=_at("2023-05-08T00:00:00"))
    fact = PoolItem(id="f", kind="fact", dense=0.15, lexical=0.0, evidence=("e",))
    rival = PoolItem(id="g", kind="fact", dense=0.35, lexical=0.0)  # alone, better than f
    pool = [fact, rival, said, *_filler(), *_filler_facts()]
    ranked = [item.id for item, _ in rank("What did Ana paint on 8 May 2023?", pool, WEIGHTS, 3)]
    assert ranked[0] == "f"  # lifted by the date its episode was said on
    assert "e" not in ranked  # its own turn: no second slot
    assert "g" in ranked
    twin = PoolItem(id="f2", kind="fact", dense=0.15, lexical=0.0, evidence=("e",))
    ranked = [
        item.id for item, _ in rank("What did Ana paint on 8 May 2023?", [twin, *pool], WEIGHTS, 3)
    ]
    assert {"f", "f2"} <= set(ranked) and "e" not in ranked  # two facts of one turn: two slots


async def test_the_corpus_pool_holds_candidates_and_their_session_neighbours() -> None:
    class Turn(msgspec.Struct, frozen=True):
        id: str
        session_id: str
        seq: int
        speaker: str
        text: str
        at: float
        origin: str = "user"

    turns = [
        Turn("a0", "a", 0, "Ana", "Good morning!", 0.0),
        Turn("a1", "a", 1, "Ben", "How was the weekend?", 1.0),
        Turn("a2", "a", 2, "Ana", "I adopted a beagle called Toby.", 2.0),
        Turn("a3", "a", 3, "assistant", "Lovely!", 3.0, "assistant"),
        Turn("a4", "a", 4, "Ana", "Bye.", 4.0),
        Turn("b0", "b", 0, "Ben", "Work is busy.", 5.0),
    ]
    embedder = local_minilm()
    corpus = EpisodeCorpus()
    corpus.add(turns, await embedder.embed([f"{t.speaker}: {t.text}" for t in turns]))
    (vector,) = await embedder.embed(["What is the name of Ana's dog?"])
    weights = msgspec.structs.replace(WEIGHTS, depth=1, span=1)
    pool = corpus.pool("beagle", np.asarray(vector), weights)
    assert {"a1", "a2", "a3"} <= {p.id for p in pool} and len(pool) <= 6
    # what the corpus keeps of each text for the fusion is what the texts themselves say
    columns = corpus.columns("beagle", np.asarray(vector), weights)
    from_items = Columns.of([columns.item(i) for i in range(len(columns))])
    assert columns.lengths().tolist() == from_items.lengths().tolist()
    assert columns.asks().tolist() == from_items.asks().tolist()
    assert columns.people().tolist() == from_items.people().tolist()
    assert any(columns.asks())  # "How was the weekend?"
    assert not columns.people()[columns.ids.index("a3")]  # the assistant's
    assert columns.people()[columns.ids.index("a2")]
    corpus.discard("a2")
    assert "a2" not in corpus and [t.id for t in corpus.sessions["a"]] == ["a0", "a1", "a3", "a4"]
    corpus.add([Turn("a5", "a", 5, "Ben", "Why?", 6.0, "tool")], [vector])  # reuses a2's row
    columns = corpus.columns("why", np.asarray(vector), weights)
    row = columns.ids.index("a5")
    assert columns.lengths()[row] == 4 and columns.asks()[row] and not columns.people()[row]


def test_the_date_cue_weighs_each_moment_by_its_own_day() -> None:
    """The date weights, computed once per day of the pool, are those of every moment's
    own day, up to the microsecond ``day_of`` rounds to at midnight."""
    windows = question_windows("What happened on 8 May 2023?")
    midnight = dt.datetime(2023, 5, 24, tzinfo=dt.UTC).timestamp()  # a fortnight after
    moments: list[float | None] = [
        midnight - 4e-7,  # rounds up to 24 May: out of the window
        midnight - 0.5,
        midnight + 0.5,
        midnight - 16 * 86_400 + 60,  # 8 May
        midnight - 16 * 86_400 + 120,
        midnight - 10 * 86_400,
        None,
    ]
    expected = [
        0.0 if m is None else max(_DATE_WEIGHT[w.precision] * w.weight(day_of(m)) for w in windows)
        for m in moments
    ]
    assert _near_dates(moments, windows).tolist() == expected
    assert expected[0] != expected[1]  # the edge case is one


@pytest.mark.parametrize(
    "bad",
    [
        {"depth": 0},
        {"span": -1},
        {"sessions": 0},
        {"lexical": 1.5},
        {"length": -0.1},
        {"answer": float("nan")},
        {"session_best": float("inf")},
        {"neighbours": (0.3, -0.1)},
        {"depth": 2.5},
        {"sessions": 1.5},
        {"span": True},
        {"span": 10**9},
        {"lexical": True},
        {"speaker": "0.5"},
        {"neighbours": [0.3]},
    ],
)
def test_recall_weights_refuse_what_would_rank_nonsense(bad: dict[str, object]) -> None:
    with pytest.raises(ConfigurationError):
        RecallWeights(**bad)  # type: ignore[arg-type]


def test_a_speaker_who_always_says_more_is_not_lifted_by_the_length_cue() -> None:
    """Length counts against the speaker's own turns: an assistant's long answers are
    not lifted over a user's short questions (the user's facts are in those)."""
    said = [("u1", "user", 10), ("u2", "user", 40), ("a1", "assistant", 400), ("a2", "assistant", 1600)]  # fmt: skip
    pool = [
        _episode(i, f"s{i}", 0, dense=0.3, speaker=who, text="x" * size) for i, who, size in said
    ]
    scores = dict(zip((p.id for p in pool), fuse("q", [*pool, *_filler()], WEIGHTS), strict=False))
    assert scores["u2"] > scores["u1"] and scores["a2"] > scores["a1"]  # longer than one's own
    assert scores["u2"] == pytest.approx(scores["a2"])  # but not for being the assistant
    assert scores["u1"] == pytest.approx(scores["a1"])


def test_a_text_of_one_length_everywhere_gives_the_length_cue_nothing() -> None:
    pool = [_episode(f"e{i}", f"s{i}", 0, dense=0.1 * i, text="same") for i in range(8)]
    off = msgspec.structs.replace(WEIGHTS, length=0.0)
    assert np.allclose(fuse("q", pool, WEIGHTS), fuse("q", pool, off))


def test_a_z_score_within_groups_is_each_group_s_own() -> None:
    """Grouped moments give what each group z-scored alone gives: a group of equal values
    (up to rounding) or of one value scores 0, and NaN counts as 0."""
    rng = np.random.default_rng(7)
    values = np.concatenate([rng.normal(5, 2, 9), np.full(4, 0.1 + 0.2), [3.0], [np.nan, 1.0]])
    groups = np.array([0] * 9 + [1] * 4 + [2] + [3, 3])
    grouped = _z(values, groups)
    for g in range(4):
        alone = _z(values[groups == g])
        assert np.allclose(grouped[groups == g], alone, atol=1e-12), g
    assert not grouped[9:14].any()  # equal values, and a group of one
    assert grouped[14:].tolist() == [-1.0, 1.0]
