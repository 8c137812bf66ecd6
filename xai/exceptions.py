"""Every error xai raises, in one place.

Two families that never mix: a ``UsageError`` means the library was called the
wrong way (fix the code or the configuration); a ``RunError`` means a run failed
at run time (a provider refused, timed out or sent garbage) and says whether a
retry may help.

    XaiError
    ├── UsageError                  you used the library wrong
    │   ├── ConfigurationError      missing or invalid settings (names the variable or file)
    │   │   ├── AgentLockedError    another process runs that Agent directory (directory, pid)
    │   │   └── ScenarioError       a run_agent scenario that cannot run (source)
    │   ├── InputError              a runner input file that cannot run (path)
    │   ├── AgentBusyError          suspend refused: a turn of the Agent runs (session_ids)
    │   ├── ToolDefinitionError     a function that cannot become a tool
    │   ├── LifecycleError          an actor asked to move between states it cannot (state, target)
    │   ├── NotRunningError         asked of an Agent, host or Session that is not running
    │   │   ├── AgentNotRunningError  the Agent is not started, or closing or closed (agent_id)
    │   │   └── SessionClosedError  input sent to a Session that is closing or closed
    │   ├── NotOpenError            a store or file used before open() or after close() (what)
    │   ├── NotFoundError           nothing by that id (what, id)
    │   │   ├── AgentNotFoundError  a host request about an Agent that does not exist (agent_id)
    │   │   ├── SessionNotFoundError  no Session by that id was ever opened there
    │   │   ├── FactNotFoundError   no fact by that id in the Agent's memory
    │   │   │   └── FactForgottenError  that fact was forgotten already (a repeated forget)
    │   │   ├── WakeupNotFoundError no wake-up by that id
    │   │   └── ApprovalNotFoundError  no tool call by that id waits for a decision (call_id)
    │   ├── ApprovalError           a decision on a held tool call that cannot be taken
    │   │   ├── ApprovalDecidedError  that call was decided otherwise already (call_id)
    │   │   ├── InvalidEditError    edited arguments the tool's schema refuses (call_id, tool)
    │   │   └── ApprovalPendingError  input refused while a turn waits for a person
    │   ├── EventsExpiredError      events no longer kept for a reader (first, last)
    │   └── IdempotencyKeyReusedError  a host request's key was used for another request
    └── RunError                    the run failed
        ├── ToolError               raised by a tool to send the model a clean error
        ├── MCPServerError          an MCP server (a tool source) failed to start (server)
        ├── AdjudicationStopped     the Agent stopped deciding memory candidates (they wait)
        ├── StateFileError          a file of an Agent's state is damaged or unusable (path, advice)
        │   └── JournalError        a journal or the memory ledger cannot be read (path, line)
        │       └── LedgerGapError  the memory ledger misses decisions (path, line, missing)
        ├── DiskFullError           no space left on the disk a write needed (path)  retryable
        ├── MemoryUnavailableError  the memory's index store (a Chroma server) is unreachable  retryable
        └── ProviderError           the model provider failed (status_code, retryable)
            ├── AuthenticationError       401 / 403
            ├── BadRequestError           400 / 404 / 422: the request itself is wrong
            │   └── ContextTooLongError   the prompt does not fit the model's context
            ├── RateLimitError            429 (retry_after)            retryable
            ├── ServerError               5xx                          retryable
            ├── ProviderTimeoutError      no answer in time (timeout)  retryable
            ├── ProviderConnectionError   could not connect            retryable
            └── StreamError               the stream broke after it began
                └── MalformedStreamError  a chunk that is not valid JSON / protocol

Messages never contain secrets: provider errors pass their text through
``xai._redact.redact`` before they are stored.
"""

from __future__ import annotations

from errno import ENOSPC as _ENOSPC

__all__ = [
    "AdjudicationStopped",
    "AgentBusyError",
    "AgentLockedError",
    "AgentNotFoundError",
    "AgentNotRunningError",
    "ApprovalDecidedError",
    "ApprovalError",
    "ApprovalNotFoundError",
    "ApprovalPendingError",
    "AuthenticationError",
    "BadRequestError",
    "ConfigurationError",
    "ContextTooLongError",
    "DiskFullError",
    "EventsExpiredError",
    "FactForgottenError",
    "FactNotFoundError",
    "IdempotencyKeyReusedError",
    "InputError",
    "InvalidEditError",
    "JournalError",
    "LedgerGapError",
    "LifecycleError",
    "MCPServerError",
    "MalformedStreamError",
    "MemoryUnavailableError",
    "NotFoundError",
    "NotOpenError",
    "NotRunningError",
    "ProviderConnectionError",
    "ProviderError",
    "ProviderTimeoutError",
    "RateLimitError",
    "RunError",
    "ScenarioError",
    "ServerError",
    "SessionClosedError",
    "SessionNotFoundError",
    "StateFileError",
    "StreamError",
    "ToolDefinitionError",
    "ToolError",
    "UsageError",
    "WakeupNotFoundError",
    "XaiError",
]


class XaiError(Exception):
    """Base class of every error raised by xai."""


class UsageError(XaiError):
    """The library was used the wrong way; retrying the same call cannot help."""


class ConfigurationError(UsageError):
    """A required setting is missing or invalid.

    ``variable`` names the environment variable (or argument) to fix, if any.
    """

    def __init__(self, message: str, *, variable: str | None = None) -> None:
        super().__init__(message)
        self.variable = variable


class AgentLockedError(ConfigurationError):
    """Another process (or another ``Agent`` object) runs the Agent in ``directory``.

    One process owns an Agent directory at a time: the lock is an OS file lock on
    ``directory/agent.lock``, released when its holder stops or dies. ``pid`` is the
    holder's process id, when it could be read.
    """

    def __init__(self, directory: str, pid: int | None) -> None:
        holder = f"process {pid}" if pid is not None else "another process"
        super().__init__(f"the Agent directory {directory} is in use by {holder}")
        self.directory = directory
        self.pid = pid


class AgentBusyError(UsageError):
    """``Agent.suspend`` was refused: a turn of its Sessions ``session_ids`` runs (a suspend
    never interrupts a turn; try again when they are idle)."""

    def __init__(self, agent_id: str, session_ids: tuple[str, ...]) -> None:
        super().__init__(f"agent {agent_id} has turns running in sessions {list(session_ids)}")
        self.agent_id = agent_id
        self.session_ids = session_ids


class ScenarioError(ConfigurationError):
    """A ``run_agent`` scenario file or value is invalid; the message names the field."""


class InputError(UsageError):
    """A runner input file is invalid. ``problems`` lists every ``field: why``."""

    def __init__(self, path: str, problems: list[str]) -> None:
        super().__init__(f"{path}: {len(problems)} problem(s):\n  " + "\n  ".join(problems))
        self.path = path
        self.problems = problems


class ToolDefinitionError(UsageError):
    """A Python callable cannot be turned into a tool (e.g. an unannotated parameter)."""


class LifecycleError(UsageError):
    """An actor was asked to move from lifecycle state ``state`` to ``target``, a move its
    state machine does not allow (``actor`` names it, e.g. ``session 1a2b``)."""

    def __init__(self, actor: str, state: str, target: str) -> None:
        super().__init__(f"{actor} cannot go from {state!r} to {target!r}")
        self.actor = actor
        self.state = state
        self.target = target


class NotRunningError(UsageError):
    """Work was asked of an Agent, a host or a Session that is not running: not started
    yet, or closing or closed. Start it (``async with``) or use one that runs."""


class AgentNotRunningError(NotRunningError):
    """The Agent ``agent_id`` is not running: not started yet, or closing or closed."""

    def __init__(self, agent_id: str, message: str | None = None) -> None:
        super().__init__(message or f"agent {agent_id} is not running (or is closing)")
        self.agent_id = agent_id


class SessionClosedError(NotRunningError):
    """Input was sent to a Session that is closing or already closed."""


class NotOpenError(UsageError):
    """``what`` (a memory store, a ledger, a journal) was used before ``open()`` or after
    ``close()``: open it first, or use it as ``async with``."""

    def __init__(self, what: str) -> None:
        super().__init__(f"{what} is not open: call open() or use `async with`")
        self.what = what


class NotFoundError(UsageError):
    """Nothing by the id ``id`` is there; ``what`` names the kind (``"fact"``, ...)."""

    def __init__(self, what: str, id: str, message: str | None = None) -> None:
        super().__init__(message or f"no {what} {id!r}")
        self.what = what
        self.id = id


class SessionNotFoundError(NotFoundError):
    """No Session by that id was ever opened on that Agent (or host)."""

    def __init__(self, message: str, *, session_id: str = "") -> None:
        super().__init__("session", session_id, message)


class FactNotFoundError(NotFoundError):
    """No fact by that id in the Agent's memory (``forget``, a fact's detail)."""

    def __init__(self, fact_id: str) -> None:
        super().__init__("fact", fact_id)


class FactForgottenError(FactNotFoundError):
    """The fact was forgotten already: a repeated ``forget`` decides nothing and writes no
    ledger record (three concurrent requests to forget one fact make one decision)."""

    def __init__(self, fact_id: str) -> None:
        NotFoundError.__init__(self, "fact", fact_id, f"fact {fact_id!r} is already forgotten")


class WakeupNotFoundError(NotFoundError):
    """No wake-up by that id in the Agent's scheduler."""

    def __init__(self, wakeup_id: str) -> None:
        super().__init__("wake-up", wakeup_id)


class ApprovalNotFoundError(NotFoundError):
    """No tool call by that id waits for a decision in that Session (never held there, or
    its result is in the history already)."""

    def __init__(self, call_id: str, message: str | None = None) -> None:
        super().__init__("held tool call", call_id, message)
        self.call_id = call_id


class ApprovalError(UsageError):
    """A decision on a tool call held for approval that cannot be taken as asked."""


class ApprovalDecidedError(ApprovalError):
    """The call ``call_id`` was decided already, otherwise (a repeat of the same decision
    is not an error: it changes nothing and answers the decision recorded)."""

    def __init__(self, call_id: str, message: str) -> None:
        super().__init__(message)
        self.call_id = call_id


class InvalidEditError(ApprovalError):
    """The arguments a person edited do not fit the schema of ``tool``: the edit is refused
    (nothing recorded, the call still waits), so no invalid call ever runs."""

    def __init__(self, call_id: str, tool: str, problem: str) -> None:
        super().__init__(f"edited arguments for {tool} (call {call_id}) are invalid: {problem}")
        self.call_id = call_id
        self.tool = tool


class ApprovalPendingError(ApprovalError):
    """The Session refuses input while a turn waits for a person (its config says
    ``while_waiting="reject"``): decide the held calls first."""


class EventsExpiredError(UsageError):
    """A reader asked for the events of ``session_id`` after number ``after``, and the
    host's window no longer (or never) held them: it keeps events ``first``..``last``.

    Read again from ``first - 1`` (some events are lost to this reader) or from a
    snapshot of the Session; the events are never skipped silently."""

    def __init__(self, session_id: str, after: int, *, first: int, last: int) -> None:
        super().__init__(
            f"session {session_id}: the events after {after} are not kept "
            f"(the window holds {first}..{last})"
        )
        self.session_id = session_id
        self.after = after
        self.first = first
        self.last = last


class AgentNotFoundError(NotFoundError):
    """A host request about Agent ``agent_id``, which the host does not have (no directory
    under its root): a read never creates an Agent; opening a Session or adding a wake-up
    does (HTTP 404)."""

    def __init__(self, agent_id: str) -> None:
        super().__init__(
            "agent",
            agent_id,
            f"no agent {agent_id!r} (opening a Session or adding a wake-up creates it)",
        )
        self.agent_id = agent_id


class IdempotencyKeyReusedError(UsageError):
    """A host write came with the idempotency ``key`` of an earlier, different request
    (HTTP 422, as the IETF httpapi draft on ``Idempotency-Key`` asks): use a new key for a
    new request."""

    def __init__(self, key: str) -> None:
        super().__init__(f"idempotency key {key!r} was already used for a different request")
        self.key = key


class RunError(XaiError):
    """A run failed at run time. ``retryable`` says whether trying again may succeed."""

    retryable: bool = False


class ToolError(RunError):
    """Raise from inside a tool to return a clean error message to the model.

    The message is sent as the tool's error result; no traceback is attached.
    """


class MCPServerError(RunError):
    """An MCP server given as a tool source could not be started, answered no handshake in
    time or failed to list its tools; ``server`` names it. (A server that fails during a call
    is a tool error the model reads, not this.)"""

    def __init__(self, message: str, *, server: str) -> None:
        super().__init__(message)
        self.server = server


class AdjudicationStopped(RunError):
    """Raised by the Agent's finalising hook: the Agent stopped adjudicating (it is stopping
    or was cancelled), or failed, before it decided a closing Session's candidates. The
    Session then records itself ``closing``; the candidates are decided on the next start."""


_DOCTOR_ADVICE = "check the Agent directory with `xai doctor DIR` (`--repair` to fix it)"
"""What to do about a damaged state file, unless the error knows better."""


class StateFileError(RunError):
    """A file of an Agent's durable state (``path``) is damaged or unusable: a ledger or
    episodes line that is not JSON, an ``agent.lock`` that is a directory, a memory index
    that cannot be read. ``advice`` says what to do (usually ``xai doctor``). The Agent
    refuses the operation rather than guess; other Agents are not affected."""

    def __init__(self, message: str, *, path: str, advice: str = _DOCTOR_ADVICE) -> None:
        super().__init__(f"{message}: {advice}")
        self.path = path
        self.advice = advice


class JournalError(StateFileError):
    """An append-only file (a Session journal, the memory ledger, the episodes) is corrupt
    where it cannot be a torn last write.

    ``path`` and ``line`` (1-based) say where.
    """

    def __init__(self, message: str, *, path: str, line: int, advice: str = _DOCTOR_ADVICE) -> None:
        super().__init__(f"{path}:{line}: {message}", path=path, advice=advice)
        self.line = line


class DiskFullError(RunError, OSError):
    """A write found no space left (``ENOSPC``, or a quota: ``EDQUOT``) on the disk that
    holds ``path``. Only that write fails: what was acknowledged before is on disk, the
    write is cut back off its file, and the operation can be retried once space is freed
    (HTTP 507). Also an ``OSError`` (its ``errno`` kept), so code that already treats a
    failed write as a failed write goes on doing so."""

    retryable = True

    def __init__(self, path: str, *, errno: int | None = None) -> None:
        super().__init__(
            f"no space left on the disk of {path}: free space there, then retry "
            "(nothing acknowledged before is lost)"
        )
        self.path = path
        self.errno = errno if errno is not None else _ENOSPC


class LedgerGapError(JournalError):
    """The memory ledger lacks decisions: line ``line`` has sequence number ``found`` where
    ``missing`` (the first absent one) was due. The Agent refuses to start rather than
    forget what those decisions said; restore the ledger from a backup.
    """

    def __init__(self, *, path: str, line: int, missing: int, found: int) -> None:
        span = f"{missing}" if found == missing + 1 else f"{missing}-{found - 1}"
        what = f"decision(s) {span} are missing" if found > missing else "out of order"
        super().__init__(
            f"{what}: expected decision {missing}, found {found}",
            path=path,
            line=line,
            advice="restore the ledger from a backup (`xai doctor DIR` shows what it holds)",
        )
        self.missing = missing
        self.found = found


class MemoryUnavailableError(RunError):
    """The store of the memory's indexes (a Chroma server) could not be reached: ``where``
    names it. Retryable: nothing decided is lost (the ledger and the episodes are on local
    disk first), and the indexes are repaired from them when the store answers again."""

    retryable = True

    def __init__(self, message: str, *, where: str) -> None:
        super().__init__(message)
        self.where = where


class ProviderError(RunError):
    """The model provider failed.

    ``status_code`` is the HTTP status when there was one; ``provider`` names the
    endpoint kind (e.g. ``"openai"``) for logs.
    """

    retryable = False

    def __init__(
        self,
        message: str,
        *,
        status_code: int | None = None,
        provider: str = "openai",
    ) -> None:
        super().__init__(message)
        self.status_code = status_code
        self.provider = provider


class AuthenticationError(ProviderError):
    """The endpoint refused the credentials (401 / 403)."""


class BadRequestError(ProviderError):
    """The endpoint rejected the request as malformed or unsupported."""


class ContextTooLongError(BadRequestError):
    """The request does not fit the model's context window.

    A Session reacts by compacting its history and retrying once.
    ``inferred`` is True when the endpoint did not say so but answered in a way
    that most likely means it (llama.cpp's server answers a streamed request
    past its window with an empty HTTP 200 body).
    """

    def __init__(
        self,
        message: str,
        *,
        status_code: int | None = None,
        provider: str = "openai",
        inferred: bool = False,
    ) -> None:
        super().__init__(message, status_code=status_code, provider=provider)
        self.inferred = inferred


class RateLimitError(ProviderError):
    """429: too many requests. ``retry_after`` is the server's hint in seconds, if given."""

    retryable = True

    def __init__(
        self,
        message: str,
        *,
        status_code: int | None = 429,
        provider: str = "openai",
        retry_after: float | None = None,
    ) -> None:
        super().__init__(message, status_code=status_code, provider=provider)
        self.retry_after = retry_after


class ServerError(ProviderError):
    """The endpoint failed on its side (5xx)."""

    retryable = True


class ProviderTimeoutError(ProviderError):
    """No answer within ``timeout`` seconds."""

    retryable = True

    def __init__(
        self,
        message: str,
        *,
        timeout: float | None = None,
        provider: str = "openai",
    ) -> None:
        super().__init__(message, status_code=None, provider=provider)
        self.timeout = timeout


class ProviderConnectionError(ProviderError):
    """The endpoint could not be reached."""

    retryable = True


class StreamError(ProviderError):
    """The response stream broke after it had begun (connection dropped, early end).

    Not retried automatically: part of the answer may already have been shown.
    """


class MalformedStreamError(StreamError):
    """A stream chunk could not be decoded (invalid JSON or not the expected shape)."""
