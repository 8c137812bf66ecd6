"""The audit ledger: every memory decision, append-only, and the source of truth.

A decision is on disk (written and synced) before the vector index hears of
it. Replaying the ledger gives every fact's latest version and the ids of the
candidates already decided, which is what makes adjudication idempotent and
lets the index be repaired after a kill at any point.

One line per decision, numbered ``seq`` 1, 2, 3... with no gap: replay checks
the numbering and refuses a ledger that lost a line (``LedgerGapError``)
rather than start without what it said. A new fact is written whole; a new
version of a known fact whose history only grew (a reinforcement, a promotion,
a status change) is written as a ``FactChange``: its scalar fields and what was
appended to its ``sessions``/``sources``/``supersedes``, so a fact seen in a
thousand Sessions costs a small constant per recurrence, not its whole history
each time. Ledgers written before changes existed (every fact whole) read the same, and
so do ledgers written before facts had ``evidence``/``valid_from``/``valid_to``
(``_upgraded`` fills them in from the decisions).
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from pathlib import Path

import anyio
import msgspec

from xai._files import read_jsonl, space_checked
from xai.exceptions import JournalError, LedgerGapError, NotOpenError
from xai.logs import get_logger
from xai.memory._types import Decision, Fact, FactStatus, Tier
from xai.messages import DecisionKind, MemoryCandidate

__all__ = ["FactChange", "Ledger", "LedgerState"]

_log = get_logger(__name__)


class FactChange(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """A new version of a known fact, as what changed: its scalar fields as they now are
    and what was appended to each growing tuple."""

    id: str
    position: int = 0
    """Where the fact stands in its decision's ``facts``."""
    version: int
    text: str | None = None
    """``None``: the text did not change."""
    tier: Tier
    count: int
    last_seen: float
    confidence: float
    status: FactStatus = "active"
    superseded_by: str | None = None
    important: bool = False
    sessions: tuple[str, ...] = ()
    sources: tuple[str, ...] = ()
    supersedes: tuple[str, ...] = ()
    evidence: tuple[str, ...] = ()
    valid_to: float | None = None

    @classmethod
    def between(cls, old: Fact, new: Fact, position: int) -> FactChange | None:
        """``new`` as a change of ``old``; ``None`` when it is not ``old`` grown by appends
        (then it is written whole)."""
        grown = (
            new.id == old.id
            and new.version == old.version + 1
            and new.kind == old.kind
            and new.first_seen == old.first_seen
            and new.valid_from == old.valid_from
            and new.sessions[: len(old.sessions)] == old.sessions
            and new.sources[: len(old.sources)] == old.sources
            and new.supersedes[: len(old.supersedes)] == old.supersedes
            and new.evidence[: len(old.evidence)] == old.evidence
            and new.forget_scope == old.forget_scope  # (a forgetting is written whole)
        )
        if not grown:
            return None
        return cls(
            id=new.id,
            position=position,
            version=new.version,
            text=None if new.text == old.text else new.text,
            tier=new.tier,
            count=new.count,
            last_seen=new.last_seen,
            confidence=new.confidence,
            status=new.status,
            superseded_by=new.superseded_by,
            important=new.important,
            sessions=new.sessions[len(old.sessions) :],
            sources=new.sources[len(old.sources) :],
            supersedes=new.supersedes[len(old.supersedes) :],
            evidence=new.evidence[len(old.evidence) :],
            valid_to=new.valid_to,
        )

    def apply(self, old: Fact) -> Fact:
        return msgspec.structs.replace(
            old,
            version=self.version,
            text=old.text if self.text is None else self.text,
            tier=self.tier,
            count=self.count,
            last_seen=self.last_seen,
            confidence=self.confidence,
            status=self.status,
            superseded_by=self.superseded_by,
            important=self.important,
            sessions=old.sessions + self.sessions,
            sources=old.sources + self.sources,
            supersedes=old.supersedes + self.supersedes,
            evidence=old.evidence + self.evidence,
            valid_to=self.valid_to,
        )


class _Line(msgspec.Struct, frozen=True, kw_only=True):
    """One decision as the ledger stores it. A line of an older ledger (a ``Decision`` with
    every fact whole) decodes as one with no ``changes``."""

    seq: int
    kind: DecisionKind
    reason: str
    at: float
    candidate: MemoryCandidate | None = None
    session_id: str | None = None
    facts: tuple[Fact, ...] = ()
    """Facts written whole: new ones, and versions that are not appends to the last."""
    changes: tuple[FactChange, ...] = ()
    judge: bool = False


_encode = msgspec.json.Encoder().encode
_decode = msgspec.json.Decoder(_Line).decode


class LedgerState(msgspec.Struct, kw_only=True):
    facts: dict[str, Fact] = msgspec.field(default_factory=dict)
    decided: set[str] = msgspec.field(default_factory=set)
    """Candidate ids with a decision: a second delivery is ignored."""
    seq: int = 0


def _line(decision: Decision, known: Mapping[str, Fact]) -> _Line:
    whole: list[Fact] = []
    changes: list[FactChange] = []
    for position, fact in enumerate(decision.facts):
        old = known.get(fact.id)
        change = FactChange.between(old, fact, position) if old is not None else None
        if change is None:
            whole.append(fact)
        else:
            changes.append(change)
    return _Line(
        seq=decision.seq,
        kind=decision.kind,
        reason=decision.reason,
        at=decision.at,
        candidate=decision.candidate,
        session_id=decision.session_id,
        facts=tuple(whole),
        changes=tuple(changes),
        judge=decision.judge,
    )


def _walk(path: Path, state: LedgerState, *, repair: bool) -> Iterator[Decision]:
    """Apply every line of ``path`` to ``state`` in order, yielding each decision with its
    facts whole. Raises ``LedgerGapError`` where a line is missing (or out of order)."""
    lines = read_jsonl(path, _decode, repair=repair, what="ledger")
    for number, line in enumerate(lines, start=1):
        if line.seq != state.seq + 1:
            raise LedgerGapError(path=str(path), line=number, missing=state.seq + 1, found=line.seq)
        state.seq = line.seq
        if line.candidate is not None:
            state.decided.add(line.candidate.id)
        facts: list[Fact | None] = [None] * (len(line.facts) + len(line.changes))
        whole = iter(line.facts)
        for change in line.changes:
            old = state.facts.get(change.id)
            if old is None or old.version + 1 != change.version:
                raise JournalError(
                    f"a change to fact {change.id!r} (version {change.version}) without its "
                    "previous version before it",
                    path=str(path),
                    line=number,
                )
            facts[change.position] = change.apply(old)
        for position, slot in enumerate(facts):
            if slot is None:
                facts[position] = next(whole)
        complete = tuple(_upgraded(f, line) for f in facts if f is not None)
        for fact in complete:
            state.facts[fact.id] = fact
        yield Decision(
            seq=line.seq,
            kind=line.kind,
            reason=line.reason,
            at=line.at,
            candidate=line.candidate,
            session_id=line.session_id,
            facts=complete,
            judge=line.judge,
        )


def _upgraded(fact: Fact, line: _Line) -> Fact:
    """A fact from a ledger older than ``evidence``/``valid_to`` gets the evidence of the
    candidate its decision names (when that candidate is one of its sources), and a fact
    superseded without ``valid_to`` gets the decision's time. A no-op on newer ledgers:
    their facts already hold both. (``valid_from`` defaults to ``first_seen`` on decode.)"""
    candidate = line.candidate
    if fact.status == "superseded" and fact.valid_to is None:
        fact = msgspec.structs.replace(fact, valid_to=line.at)
    if candidate is None or not candidate.evidence or candidate.id not in fact.sources:
        return fact
    missing = [e for e in candidate.evidence if e not in fact.evidence]
    if not missing:
        return fact
    return msgspec.structs.replace(fact, evidence=(*fact.evidence, *missing))


class Ledger:
    """``ledger.jsonl``: one decision per line, synced after each append."""

    def __init__(self, path: Path, *, sync: bool = True) -> None:
        self.path = path
        self.sync = sync
        path.parent.mkdir(parents=True, exist_ok=True)
        self._fd: int | None = None  # opened by the first append: an idle memory holds none
        self._closed = False
        self._dirty = False

    @staticmethod
    def replay(path: Path) -> LedgerState:
        """Rebuild the state. A torn last line is cut off; a bad line elsewhere is a
        ``JournalError``, a missing one a ``LedgerGapError``."""
        state = LedgerState()
        if path.exists():
            for _ in _walk(path, state, repair=True):
                pass
        return state

    async def append(
        self, decision: Decision, *, known: Mapping[str, Fact], sync: bool = True
    ) -> None:
        """Write one decision; sync it now unless ``sync=False`` (then ``flush`` later).

        ``known`` holds the current version of every fact: a fact that only grew from its
        current version is written as a ``FactChange``. A failed write is cut back off
        the file, so the next line starts clean.
        """
        if self._closed:
            raise NotOpenError(f"ledger {self.path}")
        if self._fd is None:
            self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        data = memoryview(_encode(_line(decision, known)) + b"\n")
        start = os.lseek(self._fd, 0, os.SEEK_END)
        with space_checked(self.path):
            try:
                while data:
                    data = data[os.write(self._fd, data) :]
            except OSError:
                try:
                    os.ftruncate(self._fd, start)
                except OSError:
                    _log.exception("ledger.truncate_failed", path=str(self.path))
                raise
        self._dirty = True
        if sync:
            await self.flush()

    async def flush(self) -> None:
        """fsync what was appended (when the ledger syncs at all)."""
        if self._fd is not None and self.sync and self._dirty:
            self._dirty = False
            with space_checked(self.path):
                await anyio.to_thread.run_sync(os.fsync, self._fd)

    def release(self) -> None:
        """Close the file (it is about to be replaced); the next append opens it again."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
        self._dirty = False

    def close(self) -> None:
        self._closed = True
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    @staticmethod
    def read_path(path: Path) -> list[Decision]:
        """Every decision, oldest first, each with its facts whole (for audits and tools);
        a torn last line is skipped."""
        if not path.exists():
            return []
        return list(_walk(path, LedgerState(), repair=False))
