"""An Agent's lifecycle is one state with checked transitions (``AgentState``)."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from xai.agent import Agent, AgentState
from xai.agent._lifecycle import TRANSITIONS, Lifecycle
from xai.exceptions import ConfigurationError
from xai.testing import ScriptedProvider

pytestmark = pytest.mark.anyio


def test_only_the_drawn_transitions_are_allowed() -> None:
    for state in AgentState:
        for to in AgentState:
            life = Lifecycle("a")
            life.state = state
            if to in TRANSITIONS[state]:
                life.move(to)
                assert life.state is to
            else:
                with pytest.raises(ConfigurationError, match=f"from {state.value} to {to.value}"):
                    life.move(to)
                assert life.state is state
    assert TRANSITIONS[AgentState.CLOSING] == {AgentState.STOPPED}  # a close is never undone


def state(agent: Agent) -> AgentState:
    return agent.state  # (read anew each time: it moves as the Agent runs)


async def test_an_agent_goes_through_its_states_and_runs_again(tmp_path: Path) -> None:
    agent = Agent(tmp_path, ScriptedProvider())
    assert state(agent) is AgentState.NEW
    assert (await agent.close()).complete  # nothing to close: a no-op
    for _ in range(2):  # a stopped Agent runs again
        async with anyio.create_task_group() as group:
            await group.start(agent.run)
            assert state(agent) is AgentState.RUNNING
            with pytest.raises(ConfigurationError, match="already running"):
                await agent.run()
            await agent.close()
        assert state(agent) is AgentState.STOPPED
    async with agent:
        await agent.suspend()
        assert state(agent) is AgentState.STOPPED
        assert (await agent.close()).complete  # after a stop: nothing left to do
