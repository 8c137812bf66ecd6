"""Long-term memory on a real chromadb store with the real offline embedding model."""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import anyio
import msgspec
import pytest
from structlog.testing import capture_logs

from tests.memory_helpers import fact_of
from tests.session_helpers import last_content
from xai.exceptions import FactNotFoundError
from xai.memory import JUDGE_MARKER, LongTermMemory, MemoryConfig, local_minilm
from xai.memory._ledger import Ledger
from xai.messages import CandidateKind, MemoryCandidate
from xai.providers import OpenAIProvider
from xai.testing import OpenAIWireServer, Reply

pytestmark = pytest.mark.anyio

DAY = 86_400.0


class Clock:
    def __init__(self) -> None:
        self.now = 1_800_000_000.0

    def __call__(self) -> float:
        return self.now


def candidate(
    text: str, session: str = "s1", *, confidence: float = 0.8, kind: CandidateKind = "fact"
) -> MemoryCandidate:
    return MemoryCandidate(
        text=text,
        kind=kind,
        confidence=confidence,
        evidence=("m1",),
        session_id=session,
    )


def judge_says(verdict: Mapping[str, Any]) -> Any:
    def respond(body: Mapping[str, Any]) -> Reply | None:
        if last_content(body).startswith(JUDGE_MARKER):
            return Reply(text=msgspec.json.encode(verdict).decode())
        return None

    return respond


def test_the_offline_model_embeds_meaning() -> None:
    model = local_minilm()
    tea, also_tea, stocks = model.embed_sync(
        ["I love tea", "Tea is my favourite drink", "Stock prices fell"]
    )
    assert len(tea) == model.dimension == 384

    def dot(a: list[float], b: list[float]) -> float:
        return sum(x * y for x, y in zip(a, b, strict=True))

    assert abs(dot(tea, tea) - 1) < 1e-5
    assert dot(tea, also_tea) > dot(tea, stocks) + 0.4


def test_batches_sorted_by_length_keep_each_text_in_its_place() -> None:
    """Texts are batched by length; every vector still comes back in the caller's order."""
    from xai.memory import LocalMiniLM

    model = LocalMiniLM(batch_size=2, cache_size=0)
    texts = ["a much longer sentence about the weather in Porto today", "tea", "", "stock prices"]
    together = model.embed_sync(texts)
    alone = [model.embed_sync([t])[0] for t in texts]
    for got, expected in zip(together, alone, strict=True):
        assert max(abs(x - y) for x, y in zip(got, expected, strict=True)) < 1e-5


def test_one_text_runs_on_one_thread_and_gets_the_same_bits() -> None:
    """A query (one text) runs on a one-thread session: the same vector, bit for bit,
    as the multi-threaded session gives, for half the CPU."""
    from xai.memory import LocalMiniLM

    threaded = LocalMiniLM(cache_size=0, threads=2)
    default = local_minilm()  # loaded already: one model load less
    texts = ("When is Zoltan's birthday, one-thread test?", "tea, one-thread test", "Q?")
    for text in texts:
        assert default.embed_sync([text]) == threaded.embed_sync([text])
    assert default._single is not None and threaded._single is None


def test_a_small_call_of_mixed_lengths_is_not_padded_to_its_longest_text() -> None:
    """A closing Session's ~20 candidates of 3 to 100 words: run as one batch padded to the
    longest, the model did about twice the work of the texts themselves."""
    from xai.memory import LocalMiniLM

    model = LocalMiniLM(cache_size=0)
    model.embed_sync(["load the model"])
    real = model._session
    shapes: list[tuple[int, int]] = []

    class Counting:  # the real session, its inputs' shapes noted
        def run(self, names: Any, feeds: dict[str, Any]) -> Any:
            shapes.append(feeds["input_ids"].shape)
            return real.run(names, feeds)

    model._session = Counting()
    texts = [" ".join(["word"] * n) + "." for n in (3, 90, 5, 40, 8, 60, 4, 20, 100, 6)]
    together = model.embed_sync(texts)
    ran = sum(rows * width for rows, width in shapes)
    tokens = sum(n + 3 for n in (3, 90, 5, 40, 8, 60, 4, 20, 100, 6))  # [CLS] words . [SEP]
    assert ran <= 1.1 * tokens, (shapes, ran, tokens)
    model._session = real
    alone = [model.embed_sync([t])[0] for t in texts]
    for got, expected in zip(together, alone, strict=True):  # padding changes no vector
        assert max(abs(x - y) for x, y in zip(got, expected, strict=True)) < 1e-5


async def test_add_reinforce_and_promote_across_sessions(tmp_path: Path) -> None:
    clock = Clock()
    async with LongTermMemory(
        tmp_path, config=MemoryConfig(promote_after_sessions=3), clock=clock
    ) as memory:
        (added,) = await memory.adjudicate([candidate("The user likes green tea.", "s1")])
        assert added.kind == "add" and added.facts[0].tier == "L1"
        clock.now += 10
        (same_session,) = await memory.adjudicate([candidate("The user likes green tea.", "s1")])
        assert (
            same_session.kind == "reinforce" and same_session.facts[0].count == 1
        )  # not a new session
        (second,) = await memory.adjudicate([candidate("The user likes green tea!", "s2")])
        assert second.facts[0].count == 2 and second.facts[0].last_seen == clock.now
        third, promoted = await memory.adjudicate([candidate("The user enjoys green tea.", "s3")])
        assert third.kind == "reinforce" and promoted.kind == "promote"
        (fact,) = memory.facts()
        assert fact.tier == "L2" and fact.count == 3 and fact.sessions == ("s1", "s2", "s3")
        assert len(fact.sources) == 4 and fact.version == 4


async def test_rules_only_supersedes_a_contradiction(tmp_path: Path) -> None:
    async with LongTermMemory(tmp_path) as memory:
        await memory.adjudicate([candidate("The user drinks coffee every morning.")])
        (decision,) = await memory.adjudicate(
            [candidate("The user no longer drinks coffee every morning.", "s2")]
        )
    assert decision.kind == "supersede" and not decision.judge
    old, new = decision.facts
    assert old.status == "superseded" and old.superseded_by == new.id
    assert new.supersedes == (old.id,)
    assert [f.text for f in memory.facts()] == ["The user no longer drinks coffee every morning."]
    assert [f.text for f in memory.facts(status="superseded")] == [
        "The user drinks coffee every morning."
    ]


async def test_unrelated_facts_are_added(tmp_path: Path) -> None:
    async with LongTermMemory(tmp_path) as memory:
        await memory.adjudicate(
            [
                candidate("The user lives in Lisbon."),
                candidate("The user has a cat called Tom."),
                candidate("The user is learning the cello."),
            ]
        )
        assert len(memory.facts()) == 3
        (hit,) = await memory.search("pets at home", k=1)
        assert fact_of(hit).text == "The user has a cat called Tom." and 0 < hit.score <= 1


async def test_the_judge_decides_the_ambiguous_band(
    tmp_path: Path, openai_server: OpenAIWireServer, provider: OpenAIProvider
) -> None:
    openai_server.script.add_responder(
        judge_says(
            {
                "decision": "update",
                "fact": 1,
                "text": "The user plays tennis on Saturdays with Ana.",
                "important": True,
                "reason": "more detail",
            }
        )
    )
    config = MemoryConfig(duplicate_similarity=0.99, novel_similarity=0.3)
    async with LongTermMemory(tmp_path, judge=provider, config=config) as memory:
        await memory.adjudicate([candidate("The user plays tennis on Saturdays.")])
        decision, promoted = await memory.adjudicate(
            [candidate("The user plays tennis with Ana.", "s2")]
        )
        assert decision.kind == "merge" and decision.judge and decision.reason == "more detail"
        assert promoted.kind == "promote" and promoted.reason == "judged important"
        assert promoted.facts[0].tier == "L2"
        (fact,) = memory.facts()
        assert fact.text == "The user plays tennis on Saturdays with Ana." and fact.tier == "L2"
        (hit,) = await memory.search("tennis partner Ana", k=1)  # the merged text was re-embedded
        assert fact_of(hit).id == fact.id
    judged = [
        r for r in openai_server.chat_requests() if last_content(r.body).startswith(JUDGE_MARKER)
    ]
    assert len(judged) == 1
    shown = last_content(judged[0].body)
    assert (
        "[1] The user plays tennis on Saturdays." in shown and "f" + "m1" not in shown
    )  # small ids only


@pytest.mark.parametrize(
    ("verdict", "expected"),
    [
        ({"decision": "drop", "reason": "trivial"}, "drop"),
        ({"decision": "supersede", "fact": 1, "reason": "moved"}, "supersede"),
        ({"decision": "add", "reason": "different"}, "add"),
        (
            {"decision": "reinforce", "fact": 7, "reason": "bad id"},
            "rules",
        ),  # unusable: rules decide
    ],
)
async def test_judge_verdicts(
    tmp_path: Path,
    openai_server: OpenAIWireServer,
    provider: OpenAIProvider,
    verdict: dict[str, Any],
    expected: str,
) -> None:
    openai_server.script.add_responder(judge_says(verdict))
    config = MemoryConfig(duplicate_similarity=0.99, novel_similarity=0.2)
    async with LongTermMemory(tmp_path, judge=provider, config=config) as memory:
        await memory.adjudicate([candidate("The user lives in Porto.")])
        (decision,) = await memory.adjudicate([candidate("The user lives in Braga.", "s2")])
    if expected == "rules":
        assert not decision.judge
    else:
        assert decision.kind == expected and decision.judge


async def test_decay_and_l2_compaction_with_a_clock(tmp_path: Path) -> None:
    clock = Clock()
    config = MemoryConfig(l1_half_life_days=10, decay_floor=0.2, l2_merge_similarity=0.9)
    async with LongTermMemory(tmp_path, config=config, clock=clock) as memory:
        await memory.adjudicate([candidate("The user collects vinyl records.", confidence=0.8)])
        await memory.adjudicate(
            [candidate("The user's sister is called Maria.", confidence=0.9, kind="fact")]
        )
        clock.now += 5 * DAY
        await memory.adjudicate(
            [candidate("The user's sister is called Maria.", "s2", confidence=0.9)]
        )
        assert await memory.maintain() == []  # nothing weak enough yet
        clock.now += 20 * DAY  # vinyl: 25 days unseen -> 0.8 * 0.5**2.5 = 0.14 < 0.2
        (decay,) = await memory.maintain()
        assert decay.kind == "decay" and decay.facts[0].text == "The user collects vinyl records."
        assert [f.text for f in memory.facts()] == ["The user's sister is called Maria."]
        assert memory.facts(status="decayed")[0].status == "decayed"


async def test_l2_near_duplicates_are_merged(
    tmp_path: Path, openai_server: OpenAIWireServer, provider: OpenAIProvider
) -> None:
    openai_server.script.add_responder(
        judge_says({"decision": "add", "important": True, "reason": "stable"})
    )
    config = MemoryConfig(
        duplicate_similarity=0.999, novel_similarity=0.0001, l2_merge_similarity=0.9
    )
    async with LongTermMemory(tmp_path, judge=provider, config=config) as memory:
        await memory.adjudicate(
            [candidate("The user likes cooking with nuts.", "s0")]
        )  # first: added, L1
        await memory.adjudicate([candidate("The user is allergic to peanuts.", "s1")])
        await memory.adjudicate(
            [
                msgspec.structs.replace(
                    candidate("The user is very allergic to peanuts.", "s2"), evidence=("m2",)
                )
            ]
        )  # a restatement (only a filler word more): folded in, its evidence kept
        assert len(memory.facts(tier="L2")) == 2
        (merge,) = await memory.maintain()
    assert merge.kind == "compact"
    keeper, retired = merge.facts
    assert keeper.text == "The user is allergic to peanuts." and keeper.count == 2
    assert keeper.evidence == ("m1", "m2")
    assert retired.status == "superseded" and retired.superseded_by == keeper.id


async def test_prefix_by_purpose_and_budget(tmp_path: Path) -> None:
    stable = ["The user's name is Ada.", "The user is a vegetarian."]
    tentative = [
        "The user is planning a trip to Japan.",
        "The user likes spicy ramen.",
        "The user's car is blue.",
    ]
    async with LongTermMemory(tmp_path, config=MemoryConfig(promote_after_sessions=2)) as memory:
        for text in stable:  # reported by two sessions: promoted to L2
            await memory.adjudicate([candidate(text, "s1")])
            await memory.adjudicate([candidate(text, "s2")])
        for text in tentative:
            await memory.adjudicate([candidate(text, "s3")])
        assert {f.text for f in memory.facts(tier="L2")} == set(stable)
        prefix = await memory.prefix("recommend a dinner recipe", budget_tokens=200)
        lines = prefix.splitlines()
        assert lines[0] == "Stable facts:" and lines.index("Tentative (may be outdated):") == 3
        ramen = next(f for f in memory.facts() if "ramen" in f.text)
        day = dt.datetime.fromtimestamp(ramen.first_seen, dt.UTC).date().isoformat()
        assert f"- The user likes spicy ramen. ({day})" in lines  # dated
        assert not any("car is blue" in line for line in lines)  # not relevant to dinner
        small = await memory.prefix("recommend a dinner recipe", budget_tokens=16)
        assert small.count("- ") == 1 and small.startswith(
            "Stable facts:"
        )  # L2 first, within budget
        assert await memory.prefix(None, budget_tokens=0) == ""
        everything = await memory.prefix(None, budget_tokens=1000)
        assert everything.count("- ") == 5  # no purpose: everything that fits


async def test_the_prefix_is_dated_grouped_by_topic_and_follows_writes(tmp_path: Path) -> None:
    day = 86_400.0
    now = [1_700_000_000.0]
    async with LongTermMemory(tmp_path, clock=lambda: now[0]) as memory:
        await memory.adjudicate([candidate("The user prefers green tea.", kind="preference")])
        now[0] += 3 * day
        await memory.adjudicate([candidate("The user will call the dentist.", kind="commitment")])
        await memory.adjudicate([candidate("The user prefers window seats.", kind="preference")])
        lines = (await memory.prefix(None, budget_tokens=200)).splitlines()
        assert lines[0] == "Tentative (may be outdated):"
        preferences = lines.index("Preferences:")
        assert set(lines[preferences + 1 : preferences + 3]) == {
            "- The user prefers green tea. (2023-11-14)",  # the day each was first learned
            "- The user prefers window seats. (2023-11-17)",
        }
        commitments = lines.index("Commitments:")
        assert lines[commitments + 1] == "- The user will call the dentist. (2023-11-17)"
        assert len(lines) == 6
        await memory.adjudicate(
            [candidate("The user builds model ships.")]
        )  # seen by the next prefix
        assert "- The user builds model ships. (2023-11-17)" in await memory.prefix(
            None, budget_tokens=200
        )
        small = await memory.prefix(None, budget_tokens=30)
        assert 0 < small.count("- ") < 4 and len(small) // 4 <= 30


async def test_redelivered_candidates_are_applied_once(tmp_path: Path) -> None:
    first = candidate("The user runs marathons.")
    async with LongTermMemory(tmp_path) as memory:
        assert len(await memory.adjudicate([first, first])) == 1
        assert await memory.adjudicate([first]) == []
    async with LongTermMemory(tmp_path) as memory:  # after a restart too
        assert await memory.adjudicate([first]) == []
        (fact,) = memory.facts()
        assert fact.count == 1 and fact.sources == (first.id,)
    ledger = Ledger.replay(tmp_path / "ledger.jsonl")
    assert ledger.decided == {first.id} and ledger.seq == 1


async def test_candidates_without_user_evidence_are_dropped(tmp_path: Path) -> None:
    ungrounded = msgspec.structs.replace(candidate("The user is tired."), evidence=())
    async with LongTermMemory(tmp_path) as memory:
        (decision,) = await memory.adjudicate([ungrounded])
        assert decision.kind == "drop" and memory.facts() == []
        assert memory.ledger()[0].reason == "no user evidence"


async def test_forget(tmp_path: Path) -> None:
    async with LongTermMemory(tmp_path) as memory:
        (decision,) = await memory.adjudicate([candidate("The user's PIN hint is 'blue door'.")])
        await memory.forget(decision.facts[0].id)
        assert memory.facts() == [] and await memory.search("PIN", k=3) == []
        with pytest.raises(FactNotFoundError):
            await memory.forget("nope")


async def test_the_index_is_repaired_from_the_ledger(tmp_path: Path) -> None:
    async with LongTermMemory(tmp_path) as memory:
        await memory.adjudicate(
            [candidate("The user speaks Portuguese."), candidate("The user was born in 1990.")]
        )
        index = memory.fact_store.require_index()
        await index.delete(
            [f.id for f in memory.facts()][:1]
        )  # as if killed before the index write
    async with LongTermMemory(tmp_path) as memory:
        versions = await memory.fact_store.require_index().versions()
        assert versions == {f.id: f.version for f in memory.facts()}
        assert len(await memory.search("language", k=5)) == 2


async def test_a_plain_chromadb_client_can_read_the_store(tmp_path: Path) -> None:
    import chromadb
    from chromadb.config import Settings

    async with LongTermMemory(tmp_path) as memory:
        await memory.adjudicate(
            [candidate("The user grows basil."), candidate("The user drives a van.")]
        )
    client = chromadb.PersistentClient(
        path=str(tmp_path / "index"), settings=Settings(anonymized_telemetry=False)
    )
    collection = client.get_collection("facts")
    assert collection.configuration["hnsw"]["space"] == "cosine"  # type: ignore[index]
    found = collection.query(query_texts=["herbs in the garden"], n_results=1)
    assert found["documents"] == [["The user grows basil."]]


async def test_one_batch_sees_its_own_earlier_decisions(tmp_path: Path) -> None:
    async with LongTermMemory(tmp_path) as memory:
        decisions = await memory.adjudicate(
            [
                candidate("The user likes green tea.", "s1"),
                candidate("The user likes green tea.", "s2"),  # the fact above is not indexed yet
                candidate("The user no longer likes green tea.", "s3"),
            ]
        )
        assert [d.kind for d in decisions] == ["add", "reinforce", "supersede"]
        (fact,) = memory.facts()
        assert fact.text == "The user no longer likes green tea."
        await memory.fact_store.settle()  # (adjudication defers its index writes)
        indexed = await memory.fact_store.require_index().versions()
        assert indexed == {fact.id: fact.version}  # written once, at the end of the batch


async def test_passes_defer_their_index_writes_and_later_ones_see_them(tmp_path: Path) -> None:
    async with LongTermMemory(tmp_path) as memory:
        said = [
            "The user likes green tea.",
            "The user likes green tea.",
            "The user no longer likes green tea.",
        ]
        kinds: list[str] = []
        for n, text in enumerate(said):  # one pass each, as Sessions closing one by one
            kinds.extend(d.kind for d in await memory.adjudicate([candidate(text, f"s{n}")]))
        assert kinds == ["add", "reinforce", "supersede"]
        index = memory.fact_store.require_index()
        assert await index.count() == 0  # acknowledged (the ledger is synced), not indexed yet
        (hit,) = await memory.search("green tea", k=1)  # a read writes them first
        (fact,) = memory.facts()
        assert fact_of(hit).id == fact.id
        assert await index.versions() == {fact.id: fact.version}
        await memory.adjudicate([candidate("The user grows basil.", "s9")])
    with capture_logs() as logs:
        async with LongTermMemory(tmp_path) as memory:  # closing wrote the last pass's change
            assert await memory.fact_store.require_index().versions() == {
                f.id: f.version for f in memory.facts()
            }
    assert not [e for e in logs if e["event"] == "memory.index_repaired"]


async def test_an_idle_agent_writes_what_its_passes_deferred(tmp_path: Path) -> None:
    """The Agent's adjudicator writes the index changes its passes deferred once no pass has
    run for a moment, without any read through the memory: a shared index store (a Chroma
    server another program reads) does not stay behind the ledger while the Agent idles."""
    from xai.agent._adjudication import Adjudication
    from xai.agent._jobs import Job

    async with LongTermMemory(tmp_path) as memory:
        await memory.adjudicate([candidate("The user likes green tea.", "s0")])
        index = memory.fact_store.require_index()
        assert memory.index_behind and await index.count() == 0  # deferred, as a pass does
        adjudication = Adjudication("a", memory, lambda session, event: None, lambda: None)
        async with anyio.create_task_group() as tasks:
            await tasks.start(adjudication.run, 8)
            done = anyio.Event()
            job = Job("s1", (candidate("The user grows basil.", "s1"),), None, done)
            assert await adjudication.enqueue(job)
            await done.wait()
            with anyio.fail_after(60):  # a guard; the adjudicator writes ~2 s after its pass
                while await index.count() < 2:  # noqa: ASYNC110 (chromadb tells no one)
                    await anyio.sleep(0.1)
            assert memory.fact_store.waiting == 0
            assert await index.versions() == {f.id: f.version for f in memory.facts()}
            assert await adjudication.finish(30)
