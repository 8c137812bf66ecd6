"""The Session layer: a conversation actor with a mailbox, observers, a journal, compaction,
memory candidates, finalising hooks and sub-agents.

A journal is read through ``JournalView`` (``read``, ``aread``, ``salvage``, and the cheap
``read_totals``); its record types are private to this package.
"""

from xai.session._announce import Announcing, JournalEvent, SessionHub, journal_events
from xai.session._approvals import Approvals
from xai.session._compaction import COMPACTION_MARKER
from xai.session._delegation import HELPER_INSTRUCTIONS, SessionContext
from xai.session._extraction import EXTRACTION_MARKER
from xai.session._journal import (
    JournalState,
    JournalView,
    TurnView,
    aread_journal,
    read_journal,
)
from xai.session._lifecycle import SessionState
from xai.session._observers import EventCallback, Hub, OverflowPolicy, Subscription
from xai.session._prompt import SystemPrompt
from xai.session._records import JOURNAL_FILE, FsyncPolicy
from xai.session._session import ChildFactory, Session
from xai.session._totals import JournalTotals
from xai.session._transcript import Transcript
from xai.session._types import (
    FinalizingContext,
    FinalizingHook,
    InputPolicy,
    SessionConfig,
    TurnHandle,
)

__all__ = [
    "COMPACTION_MARKER",
    "EXTRACTION_MARKER",
    "HELPER_INSTRUCTIONS",
    "JOURNAL_FILE",
    "Announcing",
    "Approvals",
    "ChildFactory",
    "EventCallback",
    "FinalizingContext",
    "FinalizingHook",
    "FsyncPolicy",
    "Hub",
    "InputPolicy",
    "JournalEvent",
    "JournalState",
    "JournalTotals",
    "JournalView",
    "OverflowPolicy",
    "Session",
    "SessionConfig",
    "SessionContext",
    "SessionHub",
    "SessionState",
    "Subscription",
    "SystemPrompt",
    "Transcript",
    "TurnHandle",
    "TurnView",
    "aread_journal",
    "journal_events",
    "read_journal",
]
