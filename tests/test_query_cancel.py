"""A cancel that lands while a Query is announcing a message, to a back-pressured channel:
every tool call still gets its result, and nothing produced goes unannounced."""

from __future__ import annotations

import anyio
import pytest
from anyio.streams.memory import MemoryObjectReceiveStream

from tests.test_query import add, assert_valid_history
from xai.events import MessageCommitted, QueryDone, QueryEvent, ToolCallStarted
from xai.messages import AssistantMessage, Message, QueryResult, StopReason, ToolMessage
from xai.query import CancelToken, Query, QueryConfig
from xai.testing import Reply, ScriptedCall, ScriptedProvider

pytestmark = pytest.mark.anyio


async def read_until_done(receive: MemoryObjectReceiveStream[QueryEvent]) -> list[QueryEvent]:
    events: list[QueryEvent] = []
    async for event in receive:
        events.append(event)
        if isinstance(event, QueryDone):
            break
    return events


def committed(events: list[QueryEvent]) -> list[Message]:
    """What a channel reader was told, each message once: a send the cancel interrupted is
    sent again, and the reader may have taken the first one already (an anyio memory stream
    cannot tell the sender), so it keeps the first of each id."""
    seen: dict[str, Message] = {}
    for event in events:
        if isinstance(event, MessageCommitted):
            seen.setdefault(event.message.id, event.message)
    return list(seen.values())


async def test_cancel_while_the_tool_call_message_waits_for_the_channel() -> None:
    """Old: ``salvage`` answered only calls already running, so the assistant message whose
    announcement was cancelled kept its call without a result."""
    provider = ScriptedProvider(
        [Reply(tool_calls=(ScriptedCall(name="add", arguments={"a": 1, "b": 2}, id="c1"),))]
    )
    send, receive = anyio.create_memory_object_stream[QueryEvent](0)  # every send waits
    token = CancelToken()
    results: list[QueryResult] = []

    async def run() -> None:
        results.append(await Query(provider, tools=[add]).run([], "go", channel=send, cancel=token))

    async with send, receive, anyio.create_task_group() as group:
        group.start_soon(run)
        await anyio.wait_all_tasks_blocked()  # the Query waits to announce the tool-call message
        assert send.statistics().tasks_waiting_send == 1
        token.cancel()
        events = await read_until_done(receive)
    (result,) = results
    assert result.stop_reason is StopReason.CANCELLED
    assert_valid_history(result.messages)
    call, answer = result.messages
    assert isinstance(call, AssistantMessage) and call.tool_calls[0].id == "c1"
    assert isinstance(answer, ToolMessage) and answer.synthetic and answer.tool_call_id == "c1"
    # the channel's reader was told of both, in order
    assert committed(events) == list(result.messages)


async def test_cancel_while_a_finished_tool_result_waits_for_the_channel() -> None:
    """Old: the result of a tool that had finished was in ``QueryResult.messages`` but its
    ``MessageCommitted`` was never sent: a Session would have lost it."""
    calls = (
        ScriptedCall(name="add", arguments={"a": 1, "b": 2}, id="c1"),
        ScriptedCall(name="add", arguments={"a": 3, "b": 4}, id="c2"),
    )
    provider = ScriptedProvider([Reply(tool_calls=calls)])
    send, receive = anyio.create_memory_object_stream[QueryEvent](0)
    token = CancelToken()
    results: list[QueryResult] = []

    async def run() -> None:
        query = Query(provider, tools=[add], config=QueryConfig(tool_concurrency=1))
        results.append(await query.run([], "go", channel=send, cancel=token))

    async with send, receive, anyio.create_task_group() as group:
        group.start_soon(run)
        before: list[QueryEvent] = []
        async for event in receive:  # read up to the first tool's start, then stall
            before.append(event)
            if isinstance(event, ToolCallStarted):
                break
        await anyio.wait_all_tasks_blocked()  # a tool finished; its ToolCallFinished waits
        token.cancel()
        events = before + await read_until_done(receive)
    (result,) = results
    assert_valid_history(result.messages)
    seen = committed(events)
    assert seen == list(result.messages)
    assert_valid_history(seen)
    assert any(isinstance(m, ToolMessage) and not m.synthetic for m in seen)


async def test_a_token_cancel_returns_when_nobody_reads_the_channel(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Old: after ``token.cancel()`` the exit path awaited ``channel.send`` with no bound, so a
    Query whose channel's reader had stopped never returned (a cancel from outside was bounded).
    Now both paths bound the channel; the observers still see every message and ``QueryDone``."""
    monkeypatch.setattr("xai.query._CLEANUP_SECONDS", 0.2)  # the bound, shortened for the test
    provider = ScriptedProvider(
        [Reply(tool_calls=(ScriptedCall(name="add", arguments={"a": 1, "b": 2}, id="c1"),))]
    )
    send, receive = anyio.create_memory_object_stream[QueryEvent](0)  # nobody ever reads
    token = CancelToken()
    seen: list[QueryEvent] = []
    results: list[QueryResult] = []

    async def run() -> None:
        query = Query(provider, tools=[add])
        results.append(
            await query.run([], "go", observers=[seen.append], channel=send, cancel=token)
        )

    with anyio.fail_after(30):  # the old code waited here for ever
        async with send, receive, anyio.create_task_group() as group:
            group.start_soon(run)
            await anyio.wait_all_tasks_blocked()  # the Query waits on the channel
            assert send.statistics().tasks_waiting_send == 1
            token.cancel()
    (result,) = results
    assert result.stop_reason is StopReason.CANCELLED
    assert_valid_history(result.messages)
    assert isinstance(seen[-1], QueryDone) and seen[-1].result == result
    told = [e.message for e in seen if isinstance(e, MessageCommitted)]
    assert told == list(result.messages)
