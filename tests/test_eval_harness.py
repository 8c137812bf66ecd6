"""The evaluation harness end to end: backends, the agent, the run, the CLI, resuming."""

from __future__ import annotations

import datetime as dt
import gc
import json
from collections.abc import AsyncIterator, Mapping
from pathlib import Path
from typing import Any

import msgspec
import pytest

from tests.cli_helpers import offline, run_cli
from tests.conftest import FAST_RETRY
from tests.test_eval import LOCOMO
from xai.eval import (
    ANSWER_INSTRUCTIONS,
    EvalAgent,
    EvalMessage,
    EvalSession,
    FullContext,
    HybridRetrieval,
    MemoryBackend,
    NullMemory,
    Progress,
    Retrieved,
    RunInfo,
    Summary,
    TurnVectorRAG,
    XaiAgentMemory,
    load_locomo,
    load_longmemeval,
    load_records,
    run_eval,
)
from xai.eval._agent import NOT_MENTIONED
from xai.eval._scripted import EvalModel, eval_model
from xai.memory import Embedder, local_minilm
from xai.providers import OpenAIProvider
from xai.testing import HttpError, OpenAIWireServer, Reply, ScriptedProvider

pytestmark = [pytest.mark.anyio, pytest.mark.backend_agnostic]


@pytest.fixture
def locomo_file(tmp_path: Path) -> Path:
    path = tmp_path / "locomo.json"
    path.write_text(json.dumps(LOCOMO))
    return path


@pytest.fixture
async def scripted(openai_server: OpenAIWireServer) -> AsyncIterator[OpenAIProvider]:
    """The offline eval model over real HTTP."""
    openai_server.script.add_responder(eval_model)
    p = openai_server.provider(retry=FAST_RETRY, timeout=5.0)
    yield p
    await p.aclose()


class _Spy(NullMemory):
    def __init__(self) -> None:
        super().__init__()
        self.seen: list[tuple[str, str]] = []
        self.flushed = 0

    async def ingest(self, message: EvalMessage, session: EvalSession) -> None:
        self.seen.append((message.id, session.id))

    async def flush(self) -> None:
        self.flushed += 1

    async def retrieve(self, question: str) -> Retrieved:
        return Retrieved(
            context="Ana: I adopted a puppy called Rex." if "puppy" in question else ""
        )


async def test_agent_ingests_every_message_in_order_and_builds_the_prompt(
    locomo_file: Path,
) -> None:
    (sample,) = load_locomo(locomo_file)
    memory = _Spy()
    llm = ScriptedProvider([Reply(text="Rex"), Reply(text="I don't know")])
    agent = EvalAgent(memory, llm)
    assert await agent.ingest_sample(sample) == 4
    assert memory.seen == [("D1:1", "D1"), ("D1:2", "D1"), ("D2:1", "D2"), ("D2:2", "D2")]
    assert memory.flushed == 1
    answer = await agent.answer("What is the name of Ana's puppy?")
    assert answer.text == "Rex" and answer.error is None
    no_context = await agent.answer("What did Ben adopt?")
    assert no_context.text == "I don't know"
    with_context, without = (r.messages for r in llm.requests)
    assert with_context[0].content == ANSWER_INSTRUCTIONS
    assert with_context[-1].content == (
        "Context:\nAna: I adopted a puppy called Rex.\n\nQuestion: What is the name of Ana's puppy?"
    )
    assert without[-1].content == "What did Ben adopt?"
    assert "Context:" not in without[-1].content


async def test_null_memory_and_a_retrieval_only_agent() -> None:
    memory = NullMemory()
    agent = EvalAgent(memory, None)
    answer = await agent.answer("anything?")
    assert answer.text == "" and answer.retrieved == Retrieved(context="")
    assert isinstance(memory, MemoryBackend)


async def _backends(
    tmp_path: Path, embedder: Embedder, model: OpenAIProvider
) -> list[MemoryBackend]:
    return [
        FullContext(),
        HybridRetrieval(embedder, depth=4, context_k=2),
        HybridRetrieval(embedder, config="bm25", depth=4),
        TurnVectorRAG(tmp_path / "rag", embedder, depth=4, context_k=2),
        XaiAgentMemory(tmp_path / "xai", model, embedder, depth=4, context_k=2),
    ]


async def test_every_backend_retrieves_the_evidence_and_forgets_on_reset(
    locomo_file: Path, tmp_path: Path, scripted: OpenAIProvider
) -> None:
    (sample,) = load_locomo(locomo_file)
    embedder = local_minilm()
    for backend in await _backends(tmp_path, embedder, scripted):
        agent = EvalAgent(backend, None)
        await agent.ingest_sample(sample)
        found = await backend.retrieve("What is the name of Ana's puppy?")
        assert "Rex" in found.context, backend.name
        if backend.name == "full":
            assert found.ranked is None and found.context.count("\n") == 3
        else:
            assert found.ranked is not None and found.ranked[0] == "D1:1", backend.name
        await backend.reset()
        after = await backend.retrieve("What is the name of Ana's puppy?")
        assert "Rex" not in after.context and not after.ranked, backend.name
        await backend.aclose()


async def test_the_xai_backend_goes_through_sessions_and_adjudication(
    locomo_file: Path, tmp_path: Path, scripted: OpenAIProvider, openai_server: OpenAIWireServer
) -> None:
    (sample,) = load_locomo(locomo_file)
    backend = XaiAgentMemory(tmp_path / "xai", scripted, local_minilm(), depth=10)
    try:
        await EvalAgent(backend, None).ingest_sample(sample)
        found = await backend.retrieve("What is Ben learning?")
        assert found.ranked is not None and set(found.ranked) == {"D1:1", "D1:2", "D2:1", "D2:2"}
        assert "violin" in found.context
        # Two Sessions, each turn answered and then mined for candidates over HTTP.
        bodies = [r.body for r in openai_server.chat_requests()]
        assert sum("[xai:memory-extraction]" in json.dumps(b) for b in bodies) == 4
        ledger = backend._agent.memory.ledger()
        assert {d.kind for d in ledger} == {"add"}  # distinct turns stay distinct facts
        assert {d.candidate.text for d in ledger if d.candidate} == {
            "I adopted a puppy called Rex last week!",
            "Lovely! I started learning the violin.",
            "My violin teacher is strict. [shares a photo: a violin case]",
            "Rex chewed my shoes.",
        }  # (the last one once ran on into the request's closing line)
        assert {e for d in ledger if d.candidate for e in d.candidate.evidence} == {
            "D1:1",
            "D1:2",
            "D2:1",
            "D2:2",
        }
    finally:
        await backend.aclose()


async def test_the_scripted_model_answers_extractively() -> None:
    reply = eval_model(
        {
            "messages": [
                {"role": "system", "content": ANSWER_INSTRUCTIONS},
                {
                    "role": "user",
                    "content": "Context:\n[8 May] Ana: Hi there. I adopted a puppy called Rex!\n"
                    "[8 May] Ben: I play the violin.\n\nQuestion: What is Ana's puppy called?",
                },
            ]
        }
    )
    assert reply is not None and reply.text == "I adopted a puppy called Rex!"
    bare = eval_model(
        {
            "messages": [
                {"role": "system", "content": ANSWER_INSTRUCTIONS},
                {"role": "user", "content": "Who?"},
            ]
        }
    )
    assert bare is not None and bare.text == NOT_MENTIONED


def _info(path: Path, backends: tuple[str, ...], **changes: object) -> RunInfo:
    info = RunInfo(
        dataset="locomo",
        data=str(path),
        backends=backends,
        ks=(1, 2),
        context_k=2,
        answer_model="scripted",
        embedder="minilm",
    )
    return msgspec.structs.replace(info, **changes)


async def test_run_scores_writes_and_resumes(
    locomo_file: Path, tmp_path: Path, scripted: OpenAIProvider, openai_server: OpenAIWireServer
) -> None:
    samples = load_locomo(locomo_file)
    out = tmp_path / "out"
    embedder = local_minilm()
    hybrid = HybridRetrieval(embedder, depth=2, context_k=2)
    seen: list[Progress] = []
    summary = await run_eval(
        samples,
        [hybrid, NullMemory()],
        info=_info(locomo_file, ("hybrid", "null")),
        out=out,
        llm=scripted,
        progress=seen.append,
    )
    assert [p.backend for p in seen] == ["hybrid", "null"] and seen[0].questions_done == 4
    by_name = {b.backend: b for b in summary.backends}
    assert by_name["hybrid"].overall.recall[2] == 100.0  # every evidence turn in the top 2
    assert by_name["null"].overall.recall == {}
    # The null memory always says "not mentioned": right on the adversarial question only.
    null = {q.id: q for q in load_records(out, "null")[0].questions}
    assert null["conv-1-q2"].f1 == 1.0 and null["conv-1-q0"].f1 == 0.0
    assert by_name["null"].overall.f1 == 25.0
    hybrid_records = load_records(out, "hybrid")[0].questions
    assert hybrid_records[0].prediction and "Rex" in hybrid_records[0].prediction
    assert hybrid_records[0].context_tokens > 0
    assert hybrid_records[3].recall == {}  # no evidence: no recall figure
    for name in ("results.json", "report.md", "recall_at_k.png", "run.json"):
        assert (out / name).is_file(), name
    assert msgspec.json.decode((out / "results.json").read_bytes(), type=Summary) == summary

    # A rerun skips what is done: nothing is asked of the model again.
    asked = len(openai_server.chat_requests())
    seen.clear()
    again = await run_eval(
        samples,
        [HybridRetrieval(embedder, depth=2, context_k=2)],
        info=_info(locomo_file, ("hybrid",)),
        out=out,
        llm=scripted,
        progress=seen.append,
    )
    assert len(openai_server.chat_requests()) == asked
    assert seen[-1].skipped == 1
    # The null backend measured before stays in the report.
    assert [b.backend for b in again.backends] == ["null", "hybrid"]

    # Other settings in the same folder are refused, with the reason.
    from xai.exceptions import UsageError

    with pytest.raises(UsageError, match="ks"):
        await run_eval(
            samples, [NullMemory()], info=_info(locomo_file, ("null",), ks=(5,)), out=out
        )


async def test_a_failing_model_is_recorded_and_scores_zero(
    locomo_file: Path, tmp_path: Path, openai_server: OpenAIWireServer
) -> None:
    openai_server.script.add_responder(lambda body: Reply(fault=HttpError(status=500)))
    failing = openai_server.provider(retry=FAST_RETRY, timeout=5.0)
    try:
        summary = await run_eval(
            load_locomo(locomo_file),
            [FullContext()],
            info=_info(locomo_file, ("full",)),
            out=tmp_path / "out",
            llm=failing,
        )
    finally:
        await failing.aclose()
    (full,) = summary.backends
    assert full.overall.errors == 4 and full.overall.f1 == 0.0
    record = load_records(tmp_path / "out", "full")[0].questions[0]
    assert (record.error is not None and "500" in record.error) or "Server" in (record.error or "")


def test_cli_runs_offline_and_resumes(
    locomo_file: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``xai eval`` end to end, in this process (18 s as five programs, 3 s here)."""
    offline(monkeypatch)
    out = tmp_path / "out"
    argv: list[str | Path] = [
        "eval",
        "locomo",
        "--data",
        locomo_file,
        "--backend",
        "hybrid,rag,xai,null",
    ]
    first = run_cli(capsys, *argv, "--k", "1,2", "--out", out)
    assert first.returncode == 0, first.stderr
    assert "hybrid   recall @1" in first.stdout and "report:" in first.stdout
    assert "1/1 samples, 4/4 questions" in first.stderr
    report = (out / "report.md").read_text()
    assert "DRAGON" in report and "| `rag` |" in report and "| `xai` |" in report
    assert "verbatim extraction" in report  # what the xai backend's memory was built with
    again = run_cli(capsys, *argv, "--k", "1,2", "--out", out)
    assert again.returncode == 0 and "1 resumed" in again.stderr
    other = run_cli(capsys, *argv, "--k", "5", "--out", out)
    assert other.returncode == 2 and "other settings (ks differ)" in other.stderr
    unknown = run_cli(capsys, *argv[:4], "--backend", "nope", "--out", out)
    assert unknown.returncode == 2 and "unknown nope" in unknown.stderr
    missing = run_cli(capsys, "eval", "locomo", "--data", tmp_path / "missing.json", "--out", out)
    assert missing.returncode == 2 and "cannot read LoCoMo data" in missing.stderr


def test_cli_longmemeval_retrieval_only(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    offline(monkeypatch)
    data = [
        {
            "question_id": "q1",
            "question_type": "single-session-user",
            "question": "Where did I go on holiday?",
            "answer": "Porto",
            "haystack_dates": ["2023/05/01 (Mon) 10:00", "2023/05/02 (Tue) 11:00"],
            "haystack_session_ids": ["s1", "s2"],
            "haystack_sessions": [
                [{"role": "user", "content": "I like tea."}],
                [
                    {"role": "user", "content": "I went to Porto on holiday", "has_answer": True},
                    {"role": "assistant", "content": "Lovely city."},
                ],
            ],
            "answer_session_ids": ["s2"],
        }
    ]
    path = tmp_path / "lme.json"
    path.write_text(json.dumps(data))
    out = tmp_path / "out"
    done = run_cli(
        capsys,
        *[
            "eval",
            "longmemeval",
            "--data",
            str(path),
            "--backend",
            "hybrid",
            "--k",
            "1",
            "--answers",
            "none",
            "--out",
            str(out),
        ],
    )
    assert done.returncode == 0, done.stderr
    summary = msgspec.json.decode((out / "results.json").read_bytes(), type=Summary)
    (hybrid,) = summary.backends
    assert hybrid.overall.recall == {1: 100.0} and hybrid.overall.session_recall == {1: 100.0}
    assert hybrid.overall.f1 is None and summary.info.answer_model is None


async def test_the_judge_is_told_the_truth_of_an_abstention(
    locomo_file: Path, tmp_path: Path, scripted: OpenAIProvider, openai_server: OpenAIWireServer
) -> None:
    from xai.eval import JUDGE_MARKER

    def judge(body: Mapping[str, Any]) -> Reply | None:
        content = body["messages"][-1]["content"]
        if not content.startswith(JUDGE_MARKER):
            return None
        return Reply(text='{"correct": true, "reason": "same"}')

    openai_server.script.reset()
    openai_server.script.add_responder(judge)
    openai_server.script.add_responder(eval_model)
    summary = await run_eval(
        load_locomo(locomo_file),
        [NullMemory()],
        info=_info(locomo_file, ("null",), judge_model="scripted"),
        out=tmp_path / "out",
        llm=scripted,
        judge=scripted,
    )
    asked = [
        b["messages"][-1]["content"]
        for b in (r.body for r in openai_server.chat_requests())
        if b["messages"][-1]["content"].startswith(JUDGE_MARKER)
    ]
    assert len(asked) == 4
    (adversarial,) = [a for a in asked if "What did Ben adopt?" in a]
    assert f"Gold answer: {NOT_MENTIONED}" in adversarial  # not the trap "a puppy"
    assert summary.backends[0].overall.judge == 100.0


async def test_the_model_is_told_when_a_longmemeval_question_is_asked(
    tmp_path: Path, scripted: OpenAIProvider, openai_server: OpenAIWireServer
) -> None:
    path = tmp_path / "lme.json"
    path.write_text(
        json.dumps(
            [
                {
                    "question_id": "q1",
                    "question_type": "temporal-reasoning",
                    "question": "How many days ago did I buy a tent?",
                    "answer": "19 days ago",
                    "question_date": "2023/05/20 (Sat) 02:21",
                    "haystack_dates": ["2023/05/01 (Mon) 10:00"],
                    "haystack_session_ids": ["s1"],
                    "haystack_sessions": [
                        [{"role": "user", "content": "I bought a tent today", "has_answer": True}]
                    ],
                    "answer_session_ids": ["s1"],
                }
            ]
        )
    )
    await run_eval(
        load_longmemeval(path),
        [FullContext()],
        info=RunInfo(
            dataset="longmemeval", data=str(path), backends=("full",), ks=(1,), context_k=1
        ),
        out=tmp_path / "out",
        llm=scripted,
    )
    (request,) = openai_server.chat_requests()
    assert request.body["messages"][-1]["content"].endswith(
        "Question: (Asked on 2023/05/20 (Sat) 02:21.) How many days ago did I buy a tent?"
    )


async def test_rag_starts_over_after_an_interrupted_run(locomo_file: Path, tmp_path: Path) -> None:
    (sample,) = load_locomo(locomo_file)
    embedder = local_minilm()
    crashed = TurnVectorRAG(tmp_path / "rag", embedder)
    await EvalAgent(crashed, None).ingest_sample(sample)  # never reset nor closed
    again = TurnVectorRAG(tmp_path / "rag", embedder, depth=10)
    await EvalAgent(again, None).ingest_sample(sample)
    found = await again.retrieve("What is the name of Ana's puppy?")
    assert found.ranked is not None and sorted(found.ranked) == ["D1:1", "D1:2", "D2:1", "D2:2"]
    await again.aclose()


def test_the_scripted_extractor_keeps_whole_messages() -> None:
    from xai.session import EXTRACTION_MARKER

    rendered = (
        f"{EXTRACTION_MARKER}\n[D1:1] USER: Ana: I moved to Porto.\nIt rains a lot there.\n"
        "[a2] assistant: OK.\n[D1:2] USER: Ben: hi"
    )
    reply = eval_model({"messages": [{"role": "user", "content": rendered}]})
    assert reply is not None
    (candidate,) = json.loads(reply.text)["candidates"]  # "Ben: hi" is too short
    assert candidate["text"] == "Ana: I moved to Porto.\nIt rains a lot there."
    assert candidate["evidence"] == ["D1:1"]


def test_a_file_of_the_wrong_shape_is_a_clear_error(tmp_path: Path) -> None:
    from xai.eval import load_longmemeval
    from xai.exceptions import ConfigurationError

    path = tmp_path / "other.json"
    path.write_text(json.dumps([{"question": "no conversation here"}]))
    with pytest.raises(ConfigurationError, match="not LoCoMo's format"):
        load_locomo(path)
    with pytest.raises(ConfigurationError, match="not LongMemEval's format"):
        load_longmemeval(path)


async def test_a_report_compares_backends_on_the_same_samples(
    locomo_file: Path, tmp_path: Path
) -> None:
    path = tmp_path / "two.json"
    path.write_text(json.dumps([*LOCOMO, {**LOCOMO[0], "sample_id": "conv-2"}]))
    samples = load_locomo(path)
    out = tmp_path / "out"
    info = _info(path, ("full",), answer_model=None)
    await run_eval(samples, [FullContext()], info=info, out=out)
    summary = await run_eval(
        samples[:1], [NullMemory()], info=_info(path, ("null",), answer_model=None), out=out
    )
    assert {b.backend: b.samples for b in summary.backends} == {"full": 1, "null": 1}


def test_cli_runs_only_the_samples_asked_for(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """``--samples`` picks samples by position (a held-out half: ``--samples 5-9``)."""
    offline(monkeypatch)
    data = [
        {
            "question_id": f"q{n}",
            "question_type": "single-session-user",
            "question": f"Where did I go in trip {n}?",
            "answer": "Porto",
            "haystack_dates": ["2023/05/01 (Mon) 10:00"],
            "haystack_session_ids": [f"s{n}"],
            "haystack_sessions": [
                [{"role": "user", "content": f"Trip {n}: Porto", "has_answer": True}]
            ],
            "answer_session_ids": [f"s{n}"],
        }
        for n in range(3)
    ]
    path = tmp_path / "lme.json"
    path.write_text(json.dumps(data))

    def run(samples: str, out: str) -> Any:
        argv = ["eval", "longmemeval", "--data", str(path), "--backend", "hybrid"]
        argv += [
            "--k",
            "1",
            "--answers",
            "none",
            "--samples",
            samples,
            "--out",
            str(tmp_path / out),
        ]
        return run_cli(capsys, *argv)

    done = run("1-2", "a")
    assert done.returncode == 0, done.stderr
    assert "2/2 samples" in done.stderr
    records = load_records(tmp_path / "a", "hybrid")
    assert sorted(r.sample for r in records) == ["q1", "q2"]
    picked = run("0,2", "b")
    assert picked.returncode == 0 and "2/2 samples" in picked.stderr
    assert sorted(r.sample for r in load_records(tmp_path / "b", "hybrid")) == ["q0", "q2"]
    bad = run("2-1", "c")
    assert bad.returncode == 2 and "--samples" in bad.stderr
    beyond = run("3", "d")
    assert beyond.returncode == 2 and "3 samples" in beyond.stderr


async def test_the_xai_backend_replays_the_assistant_turns_with_speakers_and_times(
    tmp_path: Path, openai_server: OpenAIWireServer
) -> None:
    """A dataset's assistant turns become the Agent's own answers (episodes of origin
    ``assistant``), its people's turns inputs with their names and the session's time;
    ranked ids are the dataset's."""
    model = EvalModel()
    openai_server.script.add_responder(model)
    provider = openai_server.provider(retry=FAST_RETRY, timeout=5.0)
    session = EvalSession(
        id="s1",
        date="2023/05/20 (Sat) 02:21",
        messages=(
            EvalMessage(id="s1:0", speaker="user", text="Which tea helps me sleep?"),
            EvalMessage(id="s1:1", speaker="assistant", text="Try chamomile before bed."),
            EvalMessage(id="s1:2", speaker="Ana", text="Thanks, I will buy some chamomile."),
        ),
    )
    backend = XaiAgentMemory(tmp_path / "xai", provider, local_minilm(), replies=model)
    try:
        for message in session.messages:
            await backend.ingest(message, session)
        await backend.flush()
        memory = backend._agent.memory
        (sid,) = memory.episodes.sessions()
        episodes = memory.episodes.in_session(sid)
        assert [(e.origin, e.speaker, e.text) for e in episodes] == [
            ("user", "user", "Which tea helps me sleep?"),
            ("assistant", "assistant", "Try chamomile before bed."),
            ("user", "Ana", "Thanks, I will buy some chamomile."),
        ]  # the input without a recorded reply got an empty answer: no episode
        noon = dt.datetime(2023, 5, 20, 12, tzinfo=dt.UTC).timestamp()
        assert [e.at for e in episodes] == [noon, noon, noon + 2]
        assert backend._alias == {episodes[1].id: "s1:1"}
    finally:
        await backend.aclose()
        await provider.aclose()


async def test_the_xai_backend_keeps_an_assistant_turn_that_opens_a_session(
    tmp_path: Path, openai_server: OpenAIWireServer
) -> None:
    """Bug (issue 29): an assistant turn with no input before it (one that opens a session,
    as in three LongMemEval questions whose evidence is there) was dropped. It is kept as
    an episode of the assistant before the session's first, found by search, ranked as the
    dataset's id."""
    model = EvalModel()
    openai_server.script.add_responder(model)
    provider = openai_server.provider(retry=FAST_RETRY, timeout=5.0)
    session = EvalSession(
        id="s1",
        date="2023/05/20 (Sat) 02:21",
        messages=(
            EvalMessage(id="s1:0", speaker="assistant", text="Your flight to Oslo leaves at 7."),
            EvalMessage(id="s1:1", speaker="user", text="Which tea helps me sleep?"),
            EvalMessage(id="s1:2", speaker="assistant", text="Try chamomile before bed."),
        ),
    )
    backend = XaiAgentMemory(tmp_path / "xai", provider, local_minilm(), replies=model)
    try:
        for message in session.messages:
            await backend.ingest(message, session)
        await backend.flush()
        memory = backend._agent.memory
        (sid,) = memory.episodes.sessions()
        episodes = memory.episodes.in_session(sid)
        assert [(e.origin, e.text) for e in episodes] == [
            ("assistant", "Your flight to Oslo leaves at 7."),
            ("user", "Which tea helps me sleep?"),
            ("assistant", "Try chamomile before bed."),
        ]
        assert episodes[0].seq < episodes[1].seq
        found = await backend.retrieve("When does my flight to Oslo leave?")
        assert found.ranked is not None and found.ranked[0] == "s1:0"
    finally:
        await backend.aclose()
        await provider.aclose()


def test_cli_keeps_no_request_its_offline_model_was_sent(
    locomo_file: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Issue 29: the offline model's server kept every request's body (each Session turn's
    whole conversation) for the whole run: megabytes per question of RSS."""
    offline(monkeypatch)
    made: list[OpenAIWireServer] = []

    class Kept(OpenAIWireServer):  # the real server, remembered to look at afterwards
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            made.append(self)

    monkeypatch.setattr("xai.testing.OpenAIWireServer", Kept)
    argv: list[str | Path] = [
        "eval",
        "locomo",
        "--data",
        locomo_file,
        "--backend",
        "xai",
        "--k",
        "1",
    ]
    done = run_cli(capsys, *argv, "--out", tmp_path / "out")
    assert done.returncode == 0, done.stderr
    assert "1/1 samples, 4/4 questions" in done.stderr
    (server,) = made
    assert server.requests == []


async def test_rag_keeps_nothing_of_a_sample_after_reset(locomo_file: Path, tmp_path: Path) -> None:
    """Issue 29: one chromadb store for the whole run grew with every sample (its sqlite
    log keeps the writes of a deleted collection): RSS about 4 MiB a question. Each sample
    gets a store of its own, closed and deleted by ``reset``."""
    from chromadb.api.shared_system_client import SharedSystemClient

    (sample,) = load_locomo(locomo_file)
    systems = len(SharedSystemClient._identifier_to_system)
    rag = TurnVectorRAG(tmp_path / "rag", local_minilm(), depth=10)
    for _ in range(3):
        await EvalAgent(rag, None).ingest_sample(sample)
        found = await rag.retrieve("What is the name of Ana's puppy?")
        assert found.ranked is not None and len(found.ranked) == 4
        assert len(SharedSystemClient._identifier_to_system) == systems + 1
        await rag.reset()
        assert len(SharedSystemClient._identifier_to_system) == systems  # its system stopped
        assert list((tmp_path / "rag").iterdir()) == []  # its store deleted, text and all
    await rag.aclose()


async def test_the_xai_backend_leaves_no_agent_or_session_behind_after_reset(
    locomo_file: Path, tmp_path: Path, scripted: OpenAIProvider
) -> None:
    """Issue 29: a closed Agent's Sessions form cycles, which CPython's own collection
    reached only some samples later; ``reset`` collects them (here with automatic
    collection off, so only ``reset`` can)."""
    from xai.agent import Agent
    from xai.session import Session

    def alive() -> int:
        return sum(1 for o in gc.get_objects() if isinstance(o, (Agent, Session)))

    (sample,) = load_locomo(locomo_file)
    backend = XaiAgentMemory(tmp_path / "xai", scripted, local_minilm(), depth=10)
    gc.collect()
    before = alive()
    gc.disable()
    try:
        for _ in range(2):
            await EvalAgent(backend, None).ingest_sample(sample)
            assert alive() > before
            await backend.reset()
            assert alive() == before
    finally:
        gc.enable()
        await backend.aclose()
