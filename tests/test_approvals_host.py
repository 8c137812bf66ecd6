"""Approval through the one host API: an Agent's held calls listed and decided in process
(``call_agent``, ``AgentHost.call``) and over HTTP, across an eviction and a reopen."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.serve_helpers import listening
from tests.session_helpers import extraction_responder, is_side_request, last_content
from tests.test_agent import echo, judge_adds
from tests.test_serve import read
from xai.agent import (
    Agent,
    AgentHost,
    DecideApproval,
    ListApprovals,
    OpenSession,
    call_agent,
)
from xai.events import ApprovalRequested, TurnDone
from xai.exceptions import ApprovalDecidedError
from xai.messages import TurnStatus
from xai.providers import OpenAIProvider
from xai.serve import create_app
from xai.session import Session, SessionState
from xai.testing import OpenAIWireServer, Reply, ScriptedCall
from xai.tools import tool

pytestmark = pytest.mark.anyio


class Vault:
    def __init__(self) -> None:
        self.opened: list[str] = []

        @tool(needs_approval=True)
        def open_vault(door: str) -> str:
            """Open a vault door.

            Args:
                door: Which door.
            """
            self.opened.append(door)
            return f"door {door} open"

        self.tool = open_vault


def asks(body: Mapping[str, Any]) -> Reply | None:
    if is_side_request(body) or last_content(body) != "open the vault":
        return None
    return Reply(tool_calls=(ScriptedCall(name="open_vault", id="v1", arguments={"door": "A"}),))


@pytest.fixture
def scripted(openai_server: OpenAIWireServer) -> OpenAIWireServer:
    for responder in (asks, extraction_responder, judge_adds, echo):
        openai_server.script.add_responder(responder)
    return openai_server


async def until(session: Session, kind: type) -> Any:
    async for event in session.events():
        if isinstance(event.event, kind):
            return event.event
    raise AssertionError(f"no {kind.__name__}")


async def test_an_evicted_agent_reopens_waiting_and_the_decision_applies_once(
    tmp_path: Path, scripted: OpenAIWireServer, provider: OpenAIProvider
) -> None:
    vault = Vault()
    async with Agent(tmp_path, provider, tools=[vault.tool]) as agent:
        session = await agent.open_session()
        events = session.events()
        session.send("open the vault")
        async for event in events:
            if isinstance(event.event, ApprovalRequested):
                break
        assert session.state is SessionState.WAITING
        await agent.suspend()  # a waiting turn does not keep an Agent from being evicted
    assert vault.opened == []
    async with Agent(tmp_path, provider, tools=[vault.tool]) as agent:
        (again,) = agent.sessions.values()
        [pending] = await call_agent(agent, ListApprovals(agent_id=agent.id))
        assert pending.call.id == "v1" and pending.session_id == again.id
        decide = DecideApproval(agent_id=agent.id, session_id=again.id, call_id="v1", approved=True)
        done = again.events()
        first = await call_agent(agent, decide)
        assert await call_agent(agent, decide) == first  # a retry changes nothing
        async for event in done:
            if isinstance(event.event, TurnDone):
                assert event.event.outcome.status is TurnStatus.COMPLETED
                break
        assert await call_agent(agent, ListApprovals(agent_id=agent.id)) == []
        await agent.suspend()
    assert vault.opened == ["A"]
    async with Agent(tmp_path, provider, tools=[vault.tool]) as agent:
        (third,) = agent.sessions.values()
        # Retried after the restart and after the call ran: the decision recorded answers it.
        assert await call_agent(agent, decide) == first
        deny = DecideApproval(agent_id=agent.id, session_id=third.id, call_id="v1", approved=False)
        with pytest.raises(ApprovalDecidedError):
            await call_agent(agent, deny)
    assert vault.opened == ["A"]


@pytest.mark.backend_agnostic  # uvicorn serves on asyncio only
async def test_over_http_the_held_call_is_listed_and_denied(
    tmp_path: Path, scripted: OpenAIWireServer, provider: OpenAIProvider
) -> None:
    import httpx

    vault = Vault()
    async with (
        AgentHost(tmp_path, lambda _: provider, tools=[vault.tool]) as host,
        listening(create_app(host)) as url,
        httpx.AsyncClient(base_url=url, timeout=30) as client,
    ):
        info = await host.open_session("ada", OpenSession())
        path = f"/agents/ada/sessions/{info.session_id}"
        sent = await client.post(path + "/messages", json={"text": "open the vault"})
        assert sent.status_code == 202
        await read(client, path + "/events", lambda got: got[-1].event == "approval_requested")
        listed = (await client.get("/agents/ada/approvals")).json()
        assert [(p["call"]["id"], json.loads(p["call"]["arguments"])) for p in listed] == [
            ("v1", {"door": "A"})
        ]
        bad = await client.post(
            path + "/approvals/v1", json={"approved": True, "arguments": {"x": 1}}
        )
        assert bad.status_code == 400 and "invalid" in bad.json()["message"]
        missing = await client.post(path + "/approvals/nope", json={"approved": True})
        assert missing.status_code == 404
        denied = await client.post(path + "/approvals/v1", json={"approved": False, "reason": "no"})
        assert denied.status_code == 200 and denied.json()["approved"] is False
        clash = await client.post(path + "/approvals/v1", json={"approved": True})
        assert clash.status_code == 409 and clash.json()["type"] == "approval_decided"
        got = await read(client, path + "/events", lambda got: got[-1].event == "turn_done")
        assert json.loads(got[-1].data)["event"]["outcome"]["status"] == "completed"
        assert (await client.get("/agents/ada/approvals")).json() == []
    assert vault.opened == []


async def test_an_agents_helper_call_held_by_its_tool_set_surfaces_at_the_parent(
    tmp_path: Path, openai_server: OpenAIWireServer, provider: OpenAIProvider
) -> None:
    """The Agent keeps its ToolSet's policy (it rebuilt the set without it), and a helper's
    held call is listed by the host API once and decided through its parent."""
    from xai.agent import AgentConfig
    from xai.session import HELPER_INSTRUCTIONS, SessionConfig
    from xai.tools import ToolSet

    peeked: list[str] = []

    async def peek(what: str) -> str:
        """Peek at something."""
        peeked.append(what)
        return f"saw {what}"

    def model(body: Mapping[str, Any]) -> Reply | None:
        if is_side_request(body):
            return None
        system = str(body["messages"][0].get("content", ""))
        answered = any(m["role"] == "tool" for m in body["messages"])
        if HELPER_INSTRUCTIONS in system:
            if answered:
                return Reply(text="helper done")
            return Reply(tool_calls=(ScriptedCall(name="peek", id="h1", arguments={"what": "x"}),))
        if answered:
            return Reply(text="all done")
        task = ScriptedCall(name="delegate", id="p1", arguments={"task": "peek at x"})
        return Reply(tool_calls=(task,))

    for responder in (model, extraction_responder, judge_adds):
        openai_server.script.add_responder(responder)
    tools = ToolSet([peek], needs_approval={"peek"})
    config = AgentConfig(session=SessionConfig(delegation=True))
    async with Agent(tmp_path, provider, tools=tools, config=config) as agent:
        parent = await agent.open_session()
        events = parent.events()
        handle = parent.send("go")
        with anyio.fail_after(60):  # a guard: without the policy nothing is held
            async for event in events:
                if isinstance(event.event, ApprovalRequested):
                    assert event.event.pending.session_id != parent.id  # the helper asked
                    break
        [held] = await call_agent(agent, ListApprovals(agent_id=agent.id))
        assert held.call.id == "h1" and peeked == []
        decide = DecideApproval(
            agent_id=agent.id, session_id=parent.id, call_id="h1", approved=True
        )
        await call_agent(agent, decide)
        assert (await handle).text == "all done"
    assert peeked == ["x"]


def test_the_ray_wire_carries_the_requests_answers_and_errors_as_themselves() -> None:
    """What a ``RayHosts`` client and a host actor exchange (msgpack): the two requests,
    their answers, and the approval errors raised as the same errors on the client (the
    gateway over Ray then answers 404 / 409 as in process)."""
    import msgspec

    from xai.agent import HostRequest
    from xai.cluster._wire import answer, failure_of, unwrap
    from xai.exceptions import ApprovalNotFoundError
    from xai.messages import ApprovalDecision, PendingApproval, ToolCall

    decide = DecideApproval(
        agent_id="ada", session_id="s1", call_id="c1", approved=True, arguments='{"a":1}', key="k"
    )
    listing = ListApprovals(agent_id="ada", session_id=None)
    for request in (decide, listing):
        wire = msgspec.msgpack.encode(request)
        assert msgspec.msgpack.decode(wire, type=HostRequest) == request
    held = [
        PendingApproval(call=ToolCall(id="c1", name="t"), session_id="s1", turn=1, requested_at=1.0)
    ]
    assert unwrap(answer(held), ListApprovals.answer) == held
    decision = ApprovalDecision(call_id="c1", approved=False, reason="no", at=2.0)
    assert unwrap(answer(decision), DecideApproval.answer) == decision
    for error in (ApprovalNotFoundError("c1"), ApprovalDecidedError("c1", "decided")):
        with pytest.raises(type(error)) as raised:
            unwrap(failure_of(error), ApprovalDecision)
        assert raised.value.call_id == "c1"  # type: ignore[attr-defined]
