"""xai's contract against a real model (the real-model tier; see conftest.py).

Each test checks what xai promises whatever the model writes: a valid history, a typed
failure instead of a crash, nothing lost. Prompts are short and every request is capped:
the default server answers one request at a time at some 40 tokens a second.
"""

from __future__ import annotations

import time
from pathlib import Path

import anyio
import msgspec
import pytest

from tests.session_helpers import history_problems
from xai.agent import Agent, AgentConfig
from xai.events import Compacted, QueryEvent, SessionEvent, SessionFailed, TextDelta
from xai.exceptions import RunError
from xai.messages import AssistantMessage, StopReason, SystemMessage, TurnStatus, UserMessage
from xai.providers import OpenAIProvider
from xai.query import Observer, Query, QueryConfig
from xai.session import EXTRACTION_MARKER, JOURNAL_FILE, Session, SessionConfig, read_journal
from xai.session._extraction import EXTRACTOR_PROMPT, parse_candidates
from xai.structured import JSON_OBJECT, ask_structured, format_refused, response_format
from xai.tools import ToolSet, tool

# The tier's own bound is each request's (120 s, conftest.py), not the suite's 60 s a test:
# a small model may run a side request on to its 1,000-token cap, minutes on a loaded machine.
pytestmark = [pytest.mark.anyio, pytest.mark.real_model, pytest.mark.timeout(900)]

ENDED = (StopReason.END_TURN, StopReason.LENGTH)
TURN_ENDED = {TurnStatus.COMPLETED, TurnStatus.LENGTH}  # a capped answer ends as `length`


@tool
def add(a: int, b: int) -> int:
    """Add two whole numbers."""
    return a + b


async def test_a_query_streams_and_ends_with_a_valid_history(
    real_provider: OpenAIProvider, request: pytest.FixtureRequest
) -> None:
    deltas: list[str] = []
    started = time.perf_counter()
    query = Query(real_provider, config=QueryConfig(max_tokens=48))
    result = await query.run([], "Say hello in five words.", observers=[_collect(deltas)])
    elapsed = time.perf_counter() - started
    assert result.stop_reason in ENDED, result.error
    assert result.text and "".join(deltas) == result.text
    assert history_problems(result.messages) == []
    usage = result.usage
    assert usage.completion_tokens > 0 and usage.requests == 1
    request.node.real_model_figures = {
        "completion_tokens": usage.completion_tokens,
        "usage_estimated": usage.estimated,
        "tokens_per_second": round(usage.completion_tokens / elapsed, 1),
    }


def _collect(into: list[str]) -> Observer:
    def on_event(event: QueryEvent) -> None:
        if isinstance(event, TextDelta):
            into.append(event.text)

    return on_event


async def test_a_forced_tool_call_runs_and_the_round_trip_completes(
    real_provider: OpenAIProvider,
) -> None:
    config = QueryConfig(tool_choice="add", max_tokens=64, max_rounds=2)
    result = await Query(real_provider, tools=ToolSet([add]), config=config).run(
        [], "What is 2 + 3? Use the add tool."
    )
    [answer] = result.tool_results  # run, or an error result for arguments the model botched
    assert answer.tool_call_id and result.rounds == 2
    assert result.stop_reason in (*ENDED, StopReason.MAX_ROUNDS), result.error
    assert history_problems(result.messages) == []


async def test_a_session_survives_two_turns_with_compaction_forced(
    real_provider: OpenAIProvider, tmp_path: Path
) -> None:
    config = SessionConfig(
        query=QueryConfig(max_tokens=40), context_window=160, keep_recent_tokens=40
    )
    seen: list[object] = []
    async with Session(real_provider, config=config, directory=tmp_path) as session:
        session.listen(lambda event: seen.append(event.event))
        first = await session.send("My name is Ada. Say hi.").result()
        second = await session.send("What is my name? " + "Answer briefly. " * 20).result()
        history = session.history
    assert {first.status, second.status} <= TURN_ENDED, (first, second)
    assert any(isinstance(body, Compacted) for body in seen)
    assert history_problems(history) == []
    assert history_problems(read_journal(tmp_path / JOURNAL_FILE).history) == []


class City(msgspec.Struct):
    name: str
    country: str


async def test_structured_output_is_parsed_or_raw_text_with_an_error(
    real_provider: OpenAIProvider,
) -> None:
    parsed, result = await ask_structured(
        real_provider,
        [UserMessage(content="Name one city in France as JSON.")],
        City,
        config=QueryConfig(max_tokens=60),
    )
    assert result.stop_reason in ENDED or result.error is not None
    assert parsed.ok or (parsed.error and parsed.raw is not None)
    assert result.usage.requests >= 1


async def test_memory_extraction_and_the_judge_decide_or_fail_typed(
    real_provider: OpenAIProvider, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    failures: list[SessionFailed] = []
    # The turn capped short (a 135M model runs on to any cap); extraction and judge as shipped.
    session_config = SessionConfig(query=QueryConfig(max_tokens=48), extract_memory=True)
    config = AgentConfig(session=session_config)
    async with Agent(tmp_path, real_provider, config=config) as agent:
        session = await agent.open_session("chat")
        session.listen(lambda e: _keep_failure(e, failures))
        # A liked thing said: the lexicon, if it answers, has a delta to give (not a zero).
        outcome = await session.send("I live in Lyon and I keep bees, and I love it.").result()
        await session.close()
        facts = agent.memory.facts()
    assert outcome.status in TURN_ENDED, outcome
    assert all(not f.fatal for f in failures)
    assert all(f.stage == "extraction" for f in failures)  # a typed failure, never a loss
    state = read_journal(tmp_path / "sessions" / session.id / JOURNAL_FILE)
    assert state.closed  # the Session closed: its candidates (if any) were decided
    assert all(f.evidence for f in facts)  # whatever was learnt names what it came from
    # The mood delta rode in the same request: parsed (source "model"), or the lexicon's
    # when the answer had none or a bad one; recorded once for the turn either way, and
    # grounded in what the user said.
    assert state.mood_turns == {1}
    said = {m.id for m in state.history if isinstance(m, UserMessage) and m.origin == "user"}
    for delta in state.mood:
        assert -1 <= delta.valence <= 1 and -1 <= delta.arousal <= 1, delta
        assert delta.turn == 1 and delta.evidence and set(delta.evidence) <= said, delta
    sources = {d.source for d in state.mood}
    assert sources <= {"model", "lexicon"}
    # Which path the delta took ("model": it parsed; "lexicon": the reply had none usable;
    # none: the turn moved nothing) and how extraction went, in bench/results/real_model.json.
    request.node.real_model_figures = {
        "mood_sources": sorted(sources),
        "extraction_failures": [f.error.message[:160] for f in failures],
        "candidates_learnt": len(facts),
    }


class _Side(msgspec.Struct):
    valence: float
    arousal: float
    confidence: float


class _Moods(msgspec.Struct):
    user: _Side
    assistant: _Side


class _MoodReply(msgspec.Struct):
    mood: _Moods


async def test_a_mood_delta_the_model_writes_parses_or_fails_typed(
    real_provider: OpenAIProvider, request: pytest.FixtureRequest
) -> None:
    """The extraction reply's ``mood`` as a real model writes it, through xai's parser.

    A small model rarely adds the mood on its own (SmolLM2-135M never did: the Session
    then falls back to the lexicon, as the test above checks), so here a JSON schema makes
    it write one (llama-cpp-python takes it as ``json_object`` with a ``schema``, a grammar;
    it refuses ``json_schema``): its numbers, whatever they are, must come out as clamped
    ``model`` deltas, or as ``None`` (the lexicon's turn) or a ``RunError``, nothing else.
    """
    said = UserMessage(content="My exam went badly and I feel awful.")
    reply = AssistantMessage(content="I am sorry. Do you want to talk about it?")
    content = (
        f"{EXTRACTION_MARKER}\n[{said.id}] USER: {said.content}\n"
        f"[{reply.id}] assistant: {reply.content}\n\n"
        f"The USER message ids above: {said.id}. Reply with the JSON object now."
    )
    schema = response_format(_MoodReply)
    llama_cpp = {"type": "json_object", "schema": schema["json_schema"]["schema"]}
    for fmt in (llama_cpp, schema, JSON_OBJECT):  # another endpoint may refuse the first
        config = QueryConfig(max_rounds=1, max_tokens=200, temperature=0.0, response_format=fmt)
        result = await Query(real_provider, config=config).run(
            [SystemMessage(content=EXTRACTOR_PROMPT)],
            UserMessage(content=content, origin="system"),
        )
        if not format_refused(result.error):
            break
    assert result.stop_reason in ENDED, result.error
    try:
        parsed = parse_candidates(result.text, user_ids={said.id}, session_id="s", turn=1)
    except RunError as exc:  # typed: the Session reports it and the lexicon answers
        request.node.real_model_figures = {"mood_parse": f"RunError: {exc}"[:200]}
        return
    assert parsed.kept == ()
    for delta in parsed.mood or ():
        assert delta.source == "model" and delta.who in ("user", "agent"), delta
        assert -1 <= delta.valence <= 1 and -1 <= delta.arousal <= 1, delta
        assert 0 <= delta.confidence <= 1 and delta.evidence == (said.id,), delta
    request.node.real_model_figures = {
        "mood_parse": "none" if parsed.mood is None else f"{len(parsed.mood)} delta(s)",
        "reply": result.text[:300],
    }


def _keep_failure(event: SessionEvent, into: list[SessionFailed]) -> None:
    if isinstance(event.event, SessionFailed):
        into.append(event.event)


async def test_cancel_mid_stream_leaves_a_valid_history(
    real_provider: OpenAIProvider, tmp_path: Path
) -> None:
    config = SessionConfig(query=QueryConfig(max_tokens=200))
    async with Session(real_provider, config=config, directory=tmp_path) as session:
        first_delta = anyio.Event()
        session.listen(lambda e: first_delta.set() if isinstance(e.event, TextDelta) else None)
        handle = session.send("Count from one to fifty in words.")
        await first_delta.wait()
        assert session.cancel()
        outcome = await handle.result()
        history = session.history
    assert outcome.status is TurnStatus.CANCELLED
    assert history_problems(history) == []


async def test_usage_is_reported_or_estimated_and_marked(real_provider: OpenAIProvider) -> None:
    result = await Query(real_provider, config=QueryConfig(max_tokens=16)).run([], "Hi.")
    usage = result.usage
    assert usage.prompt_tokens > 0 and usage.completion_tokens > 0
    # llama.cpp sends no usage chunk: then the figure is xai's estimate, and says so.
