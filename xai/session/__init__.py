"""The Session layer: a conversation actor with a mailbox, observers, a journal, compaction,
memory candidates, finalising hooks and sub-agents."""

from xai.session._compaction import COMPACTION_MARKER
from xai.session._delegation import SessionContext
from xai.session._extraction import EXTRACTION_MARKER
from xai.session._journal import FsyncPolicy, JournalState, read_journal
from xai.session._observers import EventCallback, OverflowPolicy, Subscription
from xai.session._prompt import SystemPrompt
from xai.session._session import Session
from xai.session._types import (
    ChildFactory,
    FinalizingContext,
    FinalizingHook,
    InputPolicy,
    SessionConfig,
    TurnHandle,
)

__all__ = [
    "COMPACTION_MARKER",
    "EXTRACTION_MARKER",
    "ChildFactory",
    "EventCallback",
    "FinalizingContext",
    "FinalizingHook",
    "FsyncPolicy",
    "InputPolicy",
    "JournalState",
    "OverflowPolicy",
    "Session",
    "SessionConfig",
    "SessionContext",
    "Subscription",
    "SystemPrompt",
    "TurnHandle",
    "read_journal",
]
