"""An Agent's identity on disk (``agent.json``): read when it is made, written (with a
persona given and not yet stored) once ``run`` holds the directory's lock."""

from __future__ import annotations

import time
from pathlib import Path

import msgspec

from xai._files import write_atomic
from xai.exceptions import ConfigurationError
from xai.messages import new_id

__all__ = ["AgentInfo", "read_identity", "settle_identity"]


class AgentInfo(msgspec.Struct, frozen=True):
    agent_id: str
    created_at: float


def read_identity(directory: Path, agent_id: str | None) -> AgentInfo:
    """The identity stored in ``directory``, or a new one (not written). Blocking, small.
    ``ConfigurationError`` if the file is damaged or names another Agent than ``agent_id``."""
    path = directory / "agent.json"
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return AgentInfo(agent_id=agent_id or new_id(), created_at=time.time())
    try:
        info = msgspec.json.decode(data, type=AgentInfo)
    except (msgspec.DecodeError, msgspec.ValidationError) as exc:
        raise ConfigurationError(f"{path} is damaged: {exc}") from None
    if agent_id is not None and agent_id != info.agent_id:
        raise ConfigurationError(f"{directory} holds agent {info.agent_id!r}, not {agent_id!r}")
    return info


def settle_identity(directory: Path, identity: AgentInfo) -> None:
    """Under the lock: write ``identity`` if no other was written since. Blocking."""
    path = directory / "agent.json"
    if path.exists():
        on_disk = read_identity(directory, None)
        if on_disk.agent_id != identity.agent_id:  # written by another process since
            raise ConfigurationError(
                f"{directory} now holds agent {on_disk.agent_id!r}, not {identity.agent_id!r}"
            )
    else:
        write_atomic(path, msgspec.json.encode(identity))
