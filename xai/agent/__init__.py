"""The Agent layer: a long-lived actor owning Sessions, a persona and long-term memory."""

from xai.agent._agent import Agent, AgentConfig
from xai.agent._host import AgentHost, OpenSession, SessionInfo
from xai.agent._persona import Persona

__all__ = ["Agent", "AgentConfig", "AgentHost", "OpenSession", "Persona", "SessionInfo"]
