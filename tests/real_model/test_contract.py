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
from xai.messages import StopReason, TurnStatus
from xai.providers import OpenAIProvider
from xai.query import Observer, Query, QueryConfig
from xai.session import JOURNAL_FILE, Session, SessionConfig, read_journal
from xai.structured import ask_structured
from xai.tools import ToolSet, tool

pytestmark = [pytest.mark.anyio, pytest.mark.real_model]

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
    from xai.messages import UserMessage

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
    real_provider: OpenAIProvider, tmp_path: Path
) -> None:
    failures: list[SessionFailed] = []
    # The turn capped short (a 135M model runs on to any cap); extraction and judge as shipped.
    session_config = SessionConfig(query=QueryConfig(max_tokens=48), extract_memory=True)
    config = AgentConfig(session=session_config)
    async with Agent(tmp_path, real_provider, config=config) as agent:
        session = await agent.open_session("chat")
        session.listen(lambda e: _keep_failure(e, failures))
        outcome = await session.send("I live in Lyon and I keep bees.").result()
        await session.close()
        facts = agent.memory.facts()
    assert outcome.status in TURN_ENDED, outcome
    assert all(not f.fatal for f in failures)
    assert all(f.stage == "extraction" for f in failures)  # a typed failure, never a loss
    state = read_journal(tmp_path / "sessions" / session.id / JOURNAL_FILE)
    assert state.closed  # the Session closed: its candidates (if any) were decided
    assert all(f.evidence for f in facts)  # whatever was learnt names what it came from
    # The mood delta rode in the same request: parsed (source "model"), or the lexicon's
    # when the answer had none or a bad one; recorded once for the turn either way.
    assert state.mood_turns == {1}
    assert all(-1 <= d.valence <= 1 and -1 <= d.arousal <= 1 for d in state.mood)
    assert {d.source for d in state.mood} <= {"model", "lexicon"}


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
