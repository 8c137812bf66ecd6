"""The Agent layer: a long-lived actor owning Sessions, a persona, long-term memory and a
scheduler of proactive wake-ups."""

from xai.agent._agent import Agent
from xai.agent._clock import Clock, FakeClock, SystemClock
from xai.agent._config import AGENT_TURN_MAX_TOKENS, AgentClosed, AgentConfig
from xai.agent._host import AgentHost, OpenSession, SessionInfo
from xai.agent._lifecycle import AgentState
from xai.agent._persona import Persona
from xai.agent._scheduler import Builder, Scheduler
from xai.agent._streams import DEFAULT_REPLAY_EVENTS, SessionStream
from xai.agent._wakeups import (
    At,
    Cron,
    Every,
    Idle,
    OnEvent,
    QuietHours,
    Trigger,
    Wakeup,
    WakeupState,
)

__all__ = [
    "AGENT_TURN_MAX_TOKENS",
    "DEFAULT_REPLAY_EVENTS",
    "Agent",
    "AgentClosed",
    "AgentConfig",
    "AgentHost",
    "AgentState",
    "At",
    "Builder",
    "Clock",
    "Cron",
    "Every",
    "FakeClock",
    "Idle",
    "OnEvent",
    "OpenSession",
    "Persona",
    "QuietHours",
    "Scheduler",
    "SessionInfo",
    "SessionStream",
    "SystemClock",
    "Trigger",
    "Wakeup",
    "WakeupState",
]
