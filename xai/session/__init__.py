"""The Session layer: a conversation actor with a mailbox, observers, a journal, compaction,
memory candidates, finalising hooks and sub-agents."""

from xai.session._compaction import COMPACTION_MARKER
from xai.session._delegation import HELPER_INSTRUCTIONS, SessionContext
from xai.session._extraction import EXTRACTION_MARKER
from xai.session._journal import (
    JOURNAL_FILE,
    AcceptedRecord,
    CandidatesRecord,
    ClosedRecord,
    ClosingRecord,
    CompactedRecord,
    DroppedRecord,
    FsyncPolicy,
    HeaderRecord,
    InputRecord,
    JournalState,
    MessageRecord,
    Record,
    ReportedRecord,
    TurnEndRecord,
    TurnStartRecord,
    UsageRecord,
    aread_journal,
    read_journal,
    read_records,
)
from xai.session._observers import EventCallback, Hub, OverflowPolicy, Subscription
from xai.session._prompt import SystemPrompt
from xai.session._session import Session
from xai.session._transcript import Transcript
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
    "HELPER_INSTRUCTIONS",
    "JOURNAL_FILE",
    "AcceptedRecord",
    "CandidatesRecord",
    "ChildFactory",
    "ClosedRecord",
    "ClosingRecord",
    "CompactedRecord",
    "DroppedRecord",
    "EventCallback",
    "FinalizingContext",
    "FinalizingHook",
    "FsyncPolicy",
    "HeaderRecord",
    "Hub",
    "InputPolicy",
    "InputRecord",
    "JournalState",
    "MessageRecord",
    "OverflowPolicy",
    "Record",
    "ReportedRecord",
    "Session",
    "SessionConfig",
    "SessionContext",
    "Subscription",
    "SystemPrompt",
    "Transcript",
    "TurnEndRecord",
    "TurnHandle",
    "TurnStartRecord",
    "UsageRecord",
    "aread_journal",
    "read_journal",
    "read_records",
]
