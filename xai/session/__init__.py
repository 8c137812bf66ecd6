"""The Session layer: a conversation actor with a mailbox, observers, a journal, compaction,
memory candidates, finalising hooks and sub-agents.

A journal is read through ``JournalView`` (``read``, ``aread``, ``salvage``, and the cheap
``read_totals``); its record types are private to this package.
"""

from typing import TYPE_CHECKING, Any

from xai.session._compaction import COMPACTION_MARKER
from xai.session._delegation import HELPER_INSTRUCTIONS, SessionContext
from xai.session._extraction import EXTRACTION_MARKER
from xai.session._journal import (
    JOURNAL_FILE,
    FsyncPolicy,
    JournalState,
    JournalView,
    TurnView,
    aread_journal,
    read_journal,
)
from xai.session._lifecycle import SessionState
from xai.session._observers import EventCallback, Hub, OverflowPolicy, Subscription
from xai.session._prompt import SystemPrompt
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

if TYPE_CHECKING:  # what ``__getattr__`` below still hands out, typed for the checker
    from xai.session._journal import read_records as read_records
    from xai.session._records import AcceptedRecord as AcceptedRecord
    from xai.session._records import CandidatesRecord as CandidatesRecord
    from xai.session._records import ClosedRecord as ClosedRecord
    from xai.session._records import ClosingRecord as ClosingRecord
    from xai.session._records import CompactedRecord as CompactedRecord
    from xai.session._records import DroppedRecord as DroppedRecord
    from xai.session._records import HeaderRecord as HeaderRecord
    from xai.session._records import InputRecord as InputRecord
    from xai.session._records import MessageRecord as MessageRecord
    from xai.session._records import Record as Record
    from xai.session._records import ReportedRecord as ReportedRecord
    from xai.session._records import TurnEndRecord as TurnEndRecord
    from xai.session._records import TurnStartRecord as TurnStartRecord
    from xai.session._records import UsageRecord as UsageRecord

__all__ = [
    "COMPACTION_MARKER",
    "EXTRACTION_MARKER",
    "HELPER_INSTRUCTIONS",
    "JOURNAL_FILE",
    "ChildFactory",
    "EventCallback",
    "FinalizingContext",
    "FinalizingHook",
    "FsyncPolicy",
    "Hub",
    "InputPolicy",
    "JournalState",
    "JournalTotals",
    "JournalView",
    "OverflowPolicy",
    "Session",
    "SessionConfig",
    "SessionContext",
    "SessionState",
    "Subscription",
    "SystemPrompt",
    "Transcript",
    "TurnHandle",
    "TurnView",
    "aread_journal",
    "read_journal",
]

_PRIVATE_NOW = frozenset(
    {
        "AcceptedRecord",
        "CandidatesRecord",
        "ClosedRecord",
        "ClosingRecord",
        "CompactedRecord",
        "DroppedRecord",
        "HeaderRecord",
        "InputRecord",
        "MessageRecord",
        "Record",
        "ReportedRecord",
        "TurnEndRecord",
        "TurnStartRecord",
        "UsageRecord",
        "read_records",
    }
)


def __getattr__(name: str) -> Any:
    """The journal's record types (and ``read_records``) are private to this package now;
    code that still imports them from here gets them until it reads ``JournalView``."""
    if name in _PRIVATE_NOW:
        from xai.session import _journal

        return getattr(_journal, name)
    raise AttributeError(f"module 'xai.session' has no attribute {name!r}")
