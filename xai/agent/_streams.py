"""A Session's events kept replayable by the host: renumbered, logged, resumable.

A Session numbers its events from 1 each time it starts (a suspended Agent's
Sessions start again when the host reopens it, a restarted process reopens them
from their journals), and keeps none once published. The host keeps, per Session
it streams, the last ``capacity`` events under its own sequence numbers, which go on
counting across suspends, reopens and restarts of the process. A reader says after
which number it wants to go on (``0``: from the stream's first event) and gets
every later event exactly once, in order; it is refused with ``EventsExpiredError``
when the events it asks for are no longer kept, never given a silent gap.

The window is on disk (``log``: the Session's events log, see ``_eventlog``): each
event is written there before any reader is given it. Every event but a text or
thinking delta is written as it is recorded, with the deltas before it in the same
write; deltas wait until a reader wants them or the next other event comes (a
reader's wake-up writes every delta pending, so a burst of deltas costs one write;
deltas nobody was given may be lost to a kill, their numbers then go to the next
events).

One commit point: the journal. Every journal-backed event (a turn's start and end, each
committed message, a compaction, memory candidates, the close) is made from its record
and carries the record's position in the journal (``SessionEvent.journal``), and the log
knows how far in the journal it has announced (``Found.journal``). A kill can fall
between a record and the event that announces it (inside the fsync at a turn's end, or
while a stream is still reading its log): the journal says it, the log never got it. So
a stream that takes up a log again announces first, from the journal
(``journal_events``), every record past that position up to where the Session it
attaches to begins (``Session.announced``: a reopened Session announces only what it
writes itself), each once, in journal order, with its position, under the next
numbers. A stream made for a running Session begins at ``Session.announced``: exactly
what the Session has announced so far, no guess; the host begins its log there as it
makes it (``begin_log``), so a kill before ``load`` has run still leaves that mark. The stream of a closed Session read
back from its log is completed from its journal the same way (``complete_log``).

No task runs per stream. Recent events are also kept in memory while the
Session runs (for readers that keep up); a suspended or closed stream keeps none,
its readers read the file. A stream made again on the same log (the Agent
reopened, here or by another process) goes on from the log's last number, so a
reader that reconnects with its last number misses nothing, even across a kill -9
of the process. Numbers start after the wall clock in microseconds when the log
was made; a log whose tail may be lost (a machine crash) starts again past any
number the old one could have reached, so an old number is refused, never taken for
a new event's. (Numbers stay below 2**53: exact in JavaScript too.)

Without a ``log`` the window lives in memory only (and a new stream is a new one).
"""

from __future__ import annotations

import contextlib
import functools
from collections import deque
from collections.abc import AsyncGenerator, Callable
from pathlib import Path

import anyio

from xai.agent._eventlog import EventLog, Found, clock_start, complete_log, open_log, read_log
from xai.events import (
    SessionClosed,
    SessionEvent,
    SessionEventBody,
    TextDelta,
    ThinkingDelta,
    TurnDone,
)
from xai.exceptions import EventsExpiredError
from xai.logs import get_logger
from xai.session import JOURNAL_FILE, JournalEvent, Session, journal_events

__all__ = ["DEFAULT_REPLAY_EVENTS", "MEMORY_EVENTS", "SessionStream"]

_log = get_logger(__name__)

DEFAULT_REPLAY_EVENTS = 4096
"""Events a host keeps per streamed Session for readers that reconnect."""

MEMORY_EVENTS = 256
"""Of those, the most recent kept in memory too while the Session runs (with a log)."""

_DEFERRED = (TextDelta, ThinkingDelta)
"""Events written when a reader wants them or with the next other event."""


class SessionStream:
    """The replay window of one Session; ``attach`` it to each running incarnation (and,
    with a ``log``, ``load`` it when ``attach`` says so)."""

    __slots__ = (
        "_first",
        "_journal",
        "_loaded",
        "_loading",
        "_log",
        "_mark",
        "_on_closed",
        "_on_disk",
        "_pending",
        "_ready",
        "_recent",
        "_stop",
        "_told",
        "_unnumbered",
        "_waiter",
        "accepted",
        "capacity",
        "closed",
        "log_path",
        "seq",
        "session_id",
        "start",
        "written",
    )

    def __init__(
        self,
        session_id: str,
        capacity: int = DEFAULT_REPLAY_EVENTS,
        *,
        start: int | None = None,
        log: Path | None = None,
        on_closed: Callable[[SessionStream], None] | None = None,
    ) -> None:
        self.session_id = session_id
        self.capacity = capacity
        self.log_path = log
        self.start = clock_start() if start is None else start
        """The number before the stream's first event (``after=0`` means after it)."""
        self.seq = self.start
        """The number of the last event numbered (``start``: none yet)."""
        self.written = self.start
        """The number of the last event readers may have (on disk, with a log)."""
        self.closed = False
        """The Session's ``session_closed`` event is in the stream: no more will come."""
        self._first = self.start + 1  # the oldest event in the log
        self._on_disk = False  # the log holds the window
        self._loaded = log is None  # the numbering is known
        self._recent: deque[SessionEvent] = deque(
            maxlen=capacity if log is None else min(capacity, MEMORY_EVENTS)
        )
        self._unnumbered: list[JournalEvent | SessionEventBody] = []  # before the log was read
        self._pending: list[SessionEvent] = []  # numbered, not written yet
        self._log: EventLog | None = None  # taken up (between ``load`` and ``stop``)
        self._stop: Callable[[], None] | None = None
        self._waiter: anyio.Event | None = None
        self._ready: anyio.Event | None = None
        self._loading: anyio.Event | None = None  # set when ``load`` has ended
        self._journal: Path | None = None  # the Session's, as ``attach`` found it
        self._mark = 0  # ``Session.announced`` as ``attach`` found it
        self._told: set[int] = set()  # positions announced from the journal: not again
        self.accepted: dict[str, str] = {}
        """The inputs the host accepted into the Session by a caller-given id (its text by
        id): a repeated submit is recognised while the Session is open (the journal has
        them after a restart)."""
        self._on_closed = on_closed
        """Called once, when the Session's last event is written (its log sealed): the
        host then keeps the log, not this object (a long run keeps nothing per closed
        Session in memory)."""

    @classmethod
    async def of_closed(
        cls, session_id: str, log: Path, capacity: int, journal: Path | None = None
    ) -> SessionStream:
        """The stream of a Session that closed, read back from its log (a number past the
        log's end, after a machine crash, is refused). With the Session's ``journal``, what
        the log lacks of it (a kill fell between a record and its event) is added first."""
        if journal is not None:
            missing = functools.partial(_journal_tail, journal)
            await anyio.to_thread.run_sync(complete_log, log, session_id, missing)
        found, _ = await anyio.to_thread.run_sync(read_log, log, 2**62)
        stream = cls(session_id, capacity, log=log)
        stream.read_closed(found)
        return stream

    def read_closed(self, found: Found | None) -> None:
        """Become the stream of a closed Session whose log holds ``found``."""
        self.closed = True
        self._loaded = self._on_disk = True
        if found is not None:
            self.start, self._first = found.start, found.first
            self.seq = self.written = found.last

    @property
    def attached(self) -> bool:
        return self._stop is not None

    @property
    def on_disk(self) -> bool:
        """Its events are in its log (a reader can read them back from there)."""
        return self._on_disk and self.log_path is not None

    @property
    def memory_events(self) -> int:
        """Events held in memory (none once the stream is stopped or closed)."""
        return len(self._recent)

    def attach(self, session: Session) -> bool:
        """Record the events of ``session`` (a running Session) from now on, each as it is
        published (synchronously: none is lost or recorded late). True if the caller must
        run ``load`` now (in a task): there is a log this stream has not taken up."""
        self.detach()
        if self.closed:
            return False
        self._stop = session.listen(self._record)
        directory = session.directory
        self._journal = directory / JOURNAL_FILE if directory is not None else None
        self._mark = session.announced
        loading = self._loading is not None and not self._loading.is_set()
        if self.log_path is None or self._log is not None or loading:
            return False
        self._loaded = False  # the log is read again: another process may have written it
        return True

    def detach(self) -> None:
        stop, self._stop = self._stop, None
        if stop is not None:
            stop()

    def _record(self, event: SessionEvent) -> None:
        at = event.journal
        self.add(event.event if at is None else JournalEvent(at, event.event))

    def add(self, item: JournalEvent | SessionEventBody) -> None:
        """Keep ``item`` (an event, or a journal-backed one with its position) as the next
        event; readers get it once it is written."""
        body, at = (item.event, item.position) if isinstance(item, JournalEvent) else (item, None)
        if isinstance(body, SessionClosed):
            self.closed = True
            self.detach()
        if at is not None and at in self._told:
            self._told.discard(at)  # announced already, from the journal
            return
        if not self._loaded:
            self._unnumbered.append(item)
            return
        self.seq += 1
        self._pending.append(SessionEvent(self.session_id, self.seq, body, at))
        if self._log is None or not isinstance(body, _DEFERRED):
            self.flush()
        else:
            self._wake()  # a reader that wants it writes it

    def _wake(self) -> None:
        waiter, self._waiter = self._waiter, None
        if waiter is not None:
            waiter.set()

    def flush(self) -> None:
        """Write what is numbered and not written (one write), then give it to readers."""
        pending, self._pending = self._pending, []
        if not pending:
            self._settle()
            return
        log = self._log
        if log is not None:
            try:
                log.append(pending)
                if log.events > 2 * self.capacity:
                    log.compact(self.capacity)
                    self._first = pending[-1].seq - log.events + 1
                if isinstance(pending[-1].event, TurnDone):
                    log.release()  # between turns an idle Session holds no descriptor
            except OSError as exc:
                self._lose_log(exc)
        self._recent.extend(pending)
        self.written = pending[-1].seq
        if self.closed and self._log is not None:
            self._let_go(self._log)  # the Session's last event: nothing more comes
        self._wake()
        self._settle()

    def _settle(self) -> None:
        """Once closed and every event written: tell ``on_closed`` (once)."""
        if self.closed and self._loaded and not self._pending:
            on_closed, self._on_closed = self._on_closed, None
            if on_closed is not None:
                on_closed(self)

    def _let_go(self, log: EventLog) -> None:
        """Seal the log (not synced) and drop the events held in memory."""
        self._log = None
        try:
            log.seal()
        except OSError as exc:
            _log.warning("stream.seal_failed", session_id=self.session_id, error=str(exc))
        finally:
            log.release()
        self._recent.clear()  # readers read the log from now on

    def _lose_log(self, exc: OSError) -> None:
        """The log cannot be written: go on in memory, and remove the log so that no later
        stream continues numbering from a log that lacks events readers were given."""
        _log.error("stream.log_failed", session_id=self.session_id, error=str(exc))
        log, self._log = self._log, None
        self._on_disk = False
        if log is not None:
            log.release()
            with contextlib.suppress(OSError):
                log.path.unlink()

    async def load(self) -> None:
        """Take up the log: read it (the numbering goes on from it, see ``_eventlog``), then
        number and write what was recorded meanwhile. Returns once done."""
        assert self.log_path is not None
        self._loading = done = anyio.Event()
        try:
            log, found, how = await anyio.to_thread.run_sync(open_log, self.log_path, self._mark)
            missed: list[JournalEvent] = []
            if how == "continued" and found.journal is not None and self._journal is not None:
                missed = await anyio.to_thread.run_sync(
                    journal_events, self._journal, found.journal, self._mark
                )
        except OSError as exc:
            _log.error("stream.log_unreadable", session_id=self.session_id, error=str(exc))
            self.log_path = None  # memory only from now on: a new stream's numbers
            now = clock_start()
            self._renumber(now, now + 1, on_disk=False, start=now)
        else:
            self._log = log
            if how == "restarted":
                self._recent.clear()
            self._tell(missed)
            self._renumber(found.last, found.first, on_disk=True, start=found.start)
        finally:
            if not self._loaded:  # cancelled: what was recorded cannot be numbered
                self._unnumbered.clear()
                self._loaded = True
                self._set_ready()
                self._settle()
            done.set()

    def _tell(self, missed: list[JournalEvent]) -> None:
        """Put the journal-backed events the log lacks (``missed``) before what the Session
        published since ``attach``, leaving out any it published itself (by position);
        should it publish one of them later, that one is dropped."""
        published = {i.position for i in self._unnumbered if isinstance(i, JournalEvent)}
        missed = [m for m in missed if m.position not in published]
        if missed:
            _log.warning(
                "stream.journal_events_retold",
                session_id=self.session_id,
                events=[f"{type(m.event).__name__}@{m.position}" for m in missed],
            )
        self._told.update(m.position for m in missed)
        self._unnumbered[:0] = missed

    def _renumber(self, last: int, first: int, *, on_disk: bool, start: int) -> None:
        """The numbering is known (the log was read): number what was recorded meanwhile."""
        self.start = start
        self.seq = self.written = last
        self._first = first
        self._on_disk = on_disk
        self._loaded = True
        unnumbered, self._unnumbered = self._unnumbered, []
        for item in unnumbered:
            body, at = (
                (item.event, item.position) if isinstance(item, JournalEvent) else (item, None)
            )
            self.seq += 1
            self._pending.append(SessionEvent(self.session_id, self.seq, body, at))
        self.flush()
        if self.closed and self._log is not None:  # (closed before the log was read)
            self._let_go(self._log)
        self._set_ready()
        self._wake()

    def _set_ready(self) -> None:
        ready, self._ready = self._ready, None
        if ready is not None:
            ready.set()

    async def stop(self) -> None:
        """Detach, write what is left, seal the log (fsynced: another machine may take it
        up) and drop the events held in memory."""
        self.detach()
        if self._loading is not None:
            await self._loading.wait()
        log = self._log
        if log is not None:
            self.flush()
            self._let_go(log)
            with anyio.CancelScope(shield=True):
                try:
                    await anyio.to_thread.run_sync(log.sync)
                except OSError as exc:
                    _log.warning("stream.sync_failed", session_id=self.session_id, error=str(exc))
                finally:
                    log.release()
        self._recent.clear()

    async def ready(self) -> None:
        """Wait until the numbering is known (the log read)."""
        if not self._loaded:
            if self._ready is None:
                self._ready = anyio.Event()
            await self._ready.wait()

    @property
    def first(self) -> int:
        """The number of the oldest event kept (``written + 1`` when none is)."""
        if self._on_disk:
            return max(self._first, self.written - self.capacity + 1)
        return self._recent[0].seq if self._recent else self.written + 1

    def check(self, after: int) -> int:
        """``after`` as a number of this stream (``0``: ``start``); ``EventsExpiredError``
        unless every event after it is kept."""
        position = self.start if after == 0 else after
        if position < self.first - 1 or position > self.seq:
            raise EventsExpiredError(self.session_id, after, first=self.first, last=self.written)
        return position

    async def since(self, after: int) -> AsyncGenerator[SessionEvent, None]:
        """Every event numbered above ``after``, then each new one, until the Session closes.

        Raises ``EventsExpiredError`` at once when the window no longer holds
        ``after + 1``, and later if the reader falls so far behind that it would miss one.
        """
        await self.ready()
        position = self.check(after)
        while True:
            if position < self.written:
                recent = self._recent
                if recent and recent[0].seq <= position + 1:
                    event = recent[position + 1 - recent[0].seq]
                    position = event.seq
                    yield event
                    continue
                self.check(position)
                for event in await self._from_log(position):
                    position = event.seq
                    yield event
                continue
            if self._pending:
                self.flush()  # deltas wait for a reader: this one
                continue
            if self.closed and self._loaded and position >= self.seq:
                return
            waiter = self._waiter
            if waiter is None:
                waiter = self._waiter = anyio.Event()
            await waiter.wait()
            await self.ready()

    async def _from_log(self, position: int) -> list[SessionEvent]:
        """The written events after ``position`` that the log holds (at least one)."""
        written, path = self.written, self.log_path
        events = []
        if self._on_disk and path is not None:
            events = (await anyio.to_thread.run_sync(read_log, path, position))[1]
        events = [e for e in events if e.seq <= written]
        if not events or events[0].seq != position + 1:  # gone meanwhile: never a gap
            raise EventsExpiredError(self.session_id, position, first=self.first, last=self.written)
        return events


def _journal_tail(journal: Path, after: int) -> list[JournalEvent]:
    """The journal-backed events of ``journal`` past ``after``, to its end. Blocking."""
    try:
        size = journal.stat().st_size
    except OSError:
        return []
    return journal_events(journal, after, size)
