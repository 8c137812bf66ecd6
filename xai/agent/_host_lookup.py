"""Finding an open Session of an Agent by id, and saying why it is not there: never
opened (``SessionNotFoundError``), closed (``SessionClosedError``), or its journal damaged
and set aside (``StateFileError`` naming the file)."""

from __future__ import annotations

import re

from xai.agent._agent import Agent
from xai.agent._resume import QUARANTINE_SUFFIX
from xai.exceptions import SessionClosedError, SessionNotFoundError, StateFileError
from xai.session import JOURNAL_FILE, Session

__all__ = ["open_session_of"]


def open_session_of(agent: Agent, session_id: str) -> Session:
    """The open Session ``session_id`` of ``agent``, or the error that says why not."""
    try:
        return agent.session(session_id)
    except SessionClosedError:
        known = (
            re.fullmatch(r"[A-Za-z0-9_.-]{1,128}", session_id) is not None
            and (agent.directory / "sessions" / session_id).is_dir()
        )
        if not known:
            raise SessionNotFoundError(f"agent {agent.id} has no session {session_id!r}") from None
        folder = agent.directory / "sessions" / session_id
        if not (folder / JOURNAL_FILE).exists():
            set_aside = sorted(folder.glob(JOURNAL_FILE + QUARANTINE_SUFFIX + "*"))
            if set_aside:  # its journal was damaged: say so, not "closed"
                raise StateFileError(
                    f"session {session_id}'s journal was damaged and set aside as {set_aside[-1]}",
                    path=str(set_aside[-1]),
                    advice="its memory candidates were recovered; read the file for the "
                    "rest, or open a new Session",
                ) from None
        raise
