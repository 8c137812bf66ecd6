"""Session edge cases: outside cancellation, usage of side requests, limits, bad arguments."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.session_helpers import extraction_responder, is_side_request, last_content
from xai.exceptions import ConfigurationError, ToolError
from xai.messages import TurnStatus
from xai.session import FinalizingContext, Session, SessionConfig, SessionContext
from xai.testing import Reply, ScriptedCall, ScriptedProvider
from xai.tools import ToolContext, ToolSet, tool

pytestmark = pytest.mark.anyio


def echo(body: Mapping[str, Any]) -> Reply | None:
    if is_side_request(body):
        return None
    return Reply(text=f"echo: {last_content(body)}")


async def test_a_turn_torn_down_from_outside_still_resolves_its_handle() -> None:
    provider = ScriptedProvider([Reply(text="s" * 100, chunk_chars=1, chunk_delay=0.01)])
    session = Session(provider)
    closed: list[FinalizingContext] = []
    session.on_session_finalizing.append(closed.append)
    async with anyio.create_task_group() as group:
        await group.start(session.run)
        handle = session.send("talk")
        await anyio.sleep(0.05)
        group.cancel_scope.cancel()
    outcome = await handle
    assert outcome.status is TurnStatus.CANCELLED
    assert session.state == "closed" and closed[0].reason == "cancelled"


async def test_side_requests_count_in_usage_and_survive_a_reopen(tmp_path: Path) -> None:
    provider = ScriptedProvider()
    provider.script.add_responder(extraction_responder)
    provider.script.add_responder(echo)
    async with Session(
        provider, config=SessionConfig(extract_memory=True), directory=tmp_path
    ) as session:
        await session.send("I live in Lisbon")
    assert session.usage.requests == 2 == len(provider.requests)  # the turn and the extraction
    reopened = Session.reopen(tmp_path, provider)
    assert reopened.usage == session.usage
    assert [c.text for c in reopened.candidates] == ["The user said: I live in Lisbon"]


async def test_depth_limit_holds_for_direct_delegation() -> None:
    seen: list[str] = []

    @tool
    async def sneaky(ctx: ToolContext[SessionContext]) -> str:
        """Delegates without the delegate tool."""
        try:
            await ctx.deps.delegate("anything")
        except ToolError as exc:
            seen.append(str(exc))
            raise
        return "no"

    provider = ScriptedProvider(
        [Reply(tool_calls=(ScriptedCall(name="sneaky"),)), Reply(text="ok")]
    )
    config = SessionConfig(max_delegation_depth=0)
    async with Session(provider, tools=[sneaky], config=config) as session:
        await session.send("go")
    assert seen == ["delegation depth limit reached: do this task yourself"]


async def test_a_toolsets_own_context_stays_reachable() -> None:
    @tool
    async def who(ctx: ToolContext[SessionContext]) -> str:
        """App context."""
        return str(ctx.deps.deps)

    provider = ScriptedProvider([Reply(tool_calls=(ScriptedCall(name="who"),)), Reply(text="ok")])
    async with Session(provider, tools=ToolSet([who], context="from the ToolSet")) as session:
        await session.send("who?")
    assert session.history[2].content == "from the ToolSet"


async def test_a_hanging_hook_is_abandoned_and_the_rest_run() -> None:
    ran: list[str] = []

    async def hangs(context: FinalizingContext) -> None:
        await anyio.sleep_forever()

    provider = ScriptedProvider()
    session = Session(provider, config=SessionConfig(hook_timeout=0.05))
    session.on_session_finalizing.extend([hangs, lambda context: ran.append(context.session_id)])
    async with session:
        pass
    assert ran == [session.id]


async def test_bad_arguments_are_usage_errors() -> None:
    provider = ScriptedProvider()
    with pytest.raises(ConfigurationError, match="compact_at"):
        SessionConfig(compact_at=2.0)
    async with Session(provider) as session:
        with pytest.raises(ConfigurationError, match="at least one event"):
            session.subscribe(buffer=0)


async def test_closing_a_session_that_never_ran_resolves_its_inputs() -> None:
    session = Session(ScriptedProvider())
    handle = session.send("never answered")
    await session.close()
    assert (await handle).status is TurnStatus.CANCELLED
