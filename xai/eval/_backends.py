"""Memory backends under evaluation: what a conversation leaves behind, and what a question gets back.

Every backend takes a sample's messages one by one (``ingest``), answers a
question with a context and, when it ranks, the message ids behind that
context (``retrieve``), and forgets everything between samples (``reset``):

- ``null``: remembers nothing (the floor, and a test double).
- ``full``: the whole conversation as context, no retrieval (the ceiling on
  evidence, the most tokens).
- ``rag``: plain turn-level vector retrieval on chromadb (the usual RAG baseline).
- ``hybrid``: the library's retrieval (``xai.memory``, the one ``LongTermMemory.search``
  uses) over the turns treated as episodes; ``--retrieval`` picks a plain baseline
  instead (see ``_retrieval``).
- ``xai``: xai's own Agent memory, as an application gets it. Each dataset session
  becomes an Agent Session: its people's turns are sent as user input (with the
  speaker's name and the session's time), and with the offline model a turn the
  dataset recorded from the assistant is the Session's answer to the input before
  it. When the Session closes, the Agent keeps its episodes and adjudicates its
  L1 candidates into long-term memory (chromadb plus the ledger); questions are
  answered from ``LongTermMemory.search``.
"""

from __future__ import annotations

import datetime as dt
import gc
import shutil
import time
from collections.abc import Iterable
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any, Protocol, assert_never, runtime_checkable

import anyio
import msgspec
import numpy as np

from xai.eval._datasets import EvalMessage, EvalSample, EvalSession
from xai.eval._retrieval import BEST, Config, ConversationIndex
from xai.memory import Embedder, ScoredEpisode, ScoredFact, query_embedding, session_date
from xai.messages import Episode, new_id
from xai.providers import Provider


class RecordedReplies(Protocol):
    """An offline model told the assistant's recorded turns (``xai.eval``'s ``EvalModel``)."""

    def expect(self, said: str, reply: str) -> None: ...


__all__ = [
    "BACKENDS",
    "FullContext",
    "HybridRetrieval",
    "MemoryBackend",
    "NullMemory",
    "Retrieved",
    "TurnVectorRAG",
    "XaiAgentMemory",
    "render_turn",
]

BACKENDS = ("xai", "rag", "hybrid", "full", "null")


class Retrieved(msgspec.Struct, frozen=True):
    context: str
    """What the answering model is given ("" for nothing)."""
    ranked: tuple[str, ...] | None = None
    """Message ids in rank order; None when the backend does not rank."""


@runtime_checkable
class MemoryBackend(Protocol):
    """A memory system under evaluation (seed 000's ``BaseMemory``, asynchronous)."""

    name: str

    async def ingest(self, message: EvalMessage, session: EvalSession) -> None: ...

    async def flush(self) -> None:
        """Make everything ingested retrievable (build indexes, close sessions)."""
        ...

    async def retrieve(self, question: str) -> Retrieved: ...

    async def reset(self) -> None: ...

    async def aclose(self) -> None: ...


def _is_assistant(message: EvalMessage) -> bool:
    return message.speaker.lower() == "assistant"


def render_turn(message: EvalMessage, session: EvalSession) -> str:
    date = f"[{session.date}] " if session.date else ""
    return f"{date}{message.speaker}: {message.text}"


class _Turns:
    """The messages of the current sample, in order, with their sessions."""

    def __init__(self) -> None:
        self.items: dict[str, tuple[EvalMessage, EvalSession]] = {}
        """By message id, in the order they came."""

    def add(self, message: EvalMessage, session: EvalSession) -> None:
        self.items[message.id] = (message, session)

    def clear(self) -> None:
        self.items.clear()

    def sample(self) -> EvalSample:
        sessions: dict[str, tuple[EvalSession, list[EvalMessage]]] = {}
        for message, session in self.items.values():
            sessions.setdefault(session.id, (session, []))[1].append(message)
        return EvalSample(
            id="current",
            sessions=tuple(
                msgspec.structs.replace(s, messages=tuple(ms)) for s, ms in sessions.values()
            ),
            questions=(),
        )

    def context(self, ids: Iterable[str]) -> str:
        return "\n".join(render_turn(*self.items[i]) for i in ids if i in self.items)


class NullMemory:
    """Remembers nothing: every question is answered without context."""

    name = "null"

    def __init__(self) -> None:
        self.ingested = 0

    async def ingest(self, message: EvalMessage, session: EvalSession) -> None:
        self.ingested += 1

    async def flush(self) -> None:
        return None

    async def retrieve(self, question: str) -> Retrieved:
        return Retrieved(context="")

    async def reset(self) -> None:
        self.ingested = 0

    async def aclose(self) -> None:
        return None


class FullContext:
    """The whole conversation, every time (no ranking, so no recall figure)."""

    name = "full"

    def __init__(self) -> None:
        self._turns = _Turns()

    async def ingest(self, message: EvalMessage, session: EvalSession) -> None:
        self._turns.add(message, session)

    async def flush(self) -> None:
        return None

    async def retrieve(self, question: str) -> Retrieved:
        return Retrieved(context=self._turns.context(self._turns.items))

    async def reset(self) -> None:
        self._turns.clear()

    async def aclose(self) -> None:
        return None


class HybridRetrieval:
    """The library's retrieval (lexical + dense + conversation cues) over the sample's turns
    as episodes, or one of the plain baseline configurations."""

    def __init__(
        self, embedder: Embedder, *, config: Config = BEST, depth: int = 50, context_k: int = 10
    ) -> None:
        self.name = "hybrid" if config == BEST else f"hybrid:{config}"
        self.embedder = embedder
        self.config: Config = config
        self.depth = depth
        self.context_k = context_k
        self._turns = _Turns()
        self._index: ConversationIndex | None = None

    async def ingest(self, message: EvalMessage, session: EvalSession) -> None:
        self._turns.add(message, session)
        self._index = None

    async def flush(self) -> None:
        if self._index is None:
            self._index = await ConversationIndex.build(
                self._turns.sample(), self.embedder, baselines=self.config != "recall"
            )

    async def retrieve(self, question: str) -> Retrieved:
        await self.flush()
        assert self._index is not None
        vector = await query_embedding(self.embedder)(question)  # as the library searches
        ranked = self._index.top(
            self.config, question, np.asarray(vector, dtype=np.float32), self.depth
        )
        return Retrieved(
            context=self._turns.context(ranked[: self.context_k]), ranked=tuple(ranked)
        )

    async def reset(self) -> None:
        self._turns.clear()
        self._index = None

    async def aclose(self) -> None:
        return None


class TurnVectorRAG:
    """Plain RAG: every turn embedded alone into a chromadb collection on disk, cosine top-k."""

    name = "rag"

    def __init__(
        self, directory: str | Path, embedder: Embedder, *, depth: int = 50, context_k: int = 10
    ) -> None:
        self.directory = Path(directory).expanduser()
        self.directory.mkdir(parents=True, exist_ok=True)
        self.embedder = embedder
        self.depth = depth
        self.context_k = context_k
        self._client: Any = None
        self._store: Path | None = None
        self._collection: Any = None
        self._turns = _Turns()
        self._pending: list[tuple[EvalMessage, EvalSession]] = []

    def _create(self) -> Any:
        """The sample's collection, in a store of its own (``reset`` closes and deletes it).

        One store for the whole run grew with every sample, on disk and in RSS (about
        4 MiB a question; issue 29): chromadb's sqlite keeps every write in its log,
        the writes of a deleted collection included. A store's directory is never used
        again, as chromadb keeps a store's system per path for its process. What an
        interrupted run left is removed first."""
        import chromadb
        from chromadb.config import Settings

        for left in self.directory.glob("turns-*"):
            shutil.rmtree(left, ignore_errors=True)
        self._store = self.directory / f"turns-{new_id()}"
        self._client = chromadb.PersistentClient(
            path=str(self._store), settings=Settings(anonymized_telemetry=False)
        )
        return self._client.create_collection(
            "turns",
            configuration={"hnsw": {"space": "cosine"}},
            metadata={"embedder": self.embedder.name},
        )

    async def ingest(self, message: EvalMessage, session: EvalSession) -> None:
        self._turns.add(message, session)
        self._pending.append((message, session))

    async def flush(self) -> None:
        if not self._pending:
            return
        pending, self._pending = self._pending, []
        vectors = await self.embedder.embed([m.text for m, _ in pending])
        if self._collection is None:
            self._collection = await anyio.to_thread.run_sync(self._create)
        collection = self._collection
        for start in range(0, len(pending), 1_000):
            chunk = pending[start : start + 1_000]

            def write(
                chunk: list[tuple[EvalMessage, EvalSession]] = chunk, at: int = start
            ) -> None:
                collection.add(
                    ids=[m.id for m, _ in chunk],
                    embeddings=[list(v) for v in vectors[at : at + len(chunk)]],
                    documents=[m.text for m, _ in chunk],
                    metadatas=[{"session": s.id, "speaker": m.speaker} for m, s in chunk],
                )

            await anyio.to_thread.run_sync(write)

    async def retrieve(self, question: str) -> Retrieved:
        await self.flush()
        if self._collection is None:
            return Retrieved(context="", ranked=())
        (vector,) = await self.embedder.embed([question])
        collection = self._collection
        count = await anyio.to_thread.run_sync(collection.count)
        n = min(self.depth, count)

        def search() -> Any:
            return collection.query(query_embeddings=[list(vector)], n_results=n, include=[])

        ranked = tuple((await anyio.to_thread.run_sync(search))["ids"][0]) if n else ()
        return Retrieved(
            context=self._turns.context(ranked[: self.context_k]), ranked=tuple(ranked)
        )

    async def reset(self) -> None:
        self._turns.clear()
        self._pending.clear()
        client, store = self._client, self._store
        self._client = self._store = self._collection = None
        if client is not None:
            await anyio.to_thread.run_sync(client.close)
        if store is not None:
            await anyio.to_thread.run_sync(shutil.rmtree, store, True)

    async def aclose(self) -> None:
        await self.reset()


def _when(at: float) -> str:
    return dt.datetime.fromtimestamp(at, dt.UTC).strftime("%Y-%m-%d %H:%M")


class _ReplayClock:
    """The Agent's clock during a replay: the recorded time of the turn being played (so
    episodes and facts carry the dataset's dates), else the machine's."""

    def __init__(self) -> None:
        self.at: float | None = None

    def now(self) -> float:
        return self.at if self.at is not None else time.time()

    async def sleep_until(self, deadline: float) -> None:
        await anyio.sleep(max(0.0, deadline - self.now()))


def _unasked(
    turns: list[tuple[int, EvalMessage]], played: list[Episode], session_id: str, start: float
) -> list[Episode]:
    """Episodes for assistant turns no input came before: one that opens the session is
    placed before its first episode, one after another reply right after that reply's
    episode (``seq``: the session's order, so neighbours stay neighbours)."""
    first = min((e.seq for e in played), default=0)
    last = max((e.seq for e in played), default=-1)
    out: list[Episode] = []
    for n, (i, message) in enumerate(turns):
        seq = first - len(turns) + n if i == n else last + 1 + n
        out.append(
            Episode(
                id=message.id,
                session_id=session_id,
                turn=0,
                seq=seq,
                origin="assistant",
                speaker="assistant",
                text=message.text,
                at=start + i,
            )
        )
    return out


class XaiAgentMemory:
    """xai's Agent memory: dataset sessions become Agent Sessions; their closing
    adjudicates L1 candidates into long-term memory, which answers questions.

    Each sample gets a fresh Agent directory under ``directory``. ``provider``
    plays the model the Agent's Sessions talk to and extract candidates with (the
    offline default is the scripted model of ``xai.eval``, which proposes each
    turn as a candidate, verbatim). Ranked ids are the evidence of each retrieved
    fact's candidates, in fact order.

    Use it from one task: the Agent's task group is entered on the first ingest and
    left in ``reset()`` or ``aclose()``.
    """

    name = "xai"

    def __init__(
        self,
        directory: str | Path,
        provider: Provider,
        embedder: Embedder,
        *,
        use_judge: bool = False,
        depth: int = 50,
        context_k: int = 10,
        replies: RecordedReplies | None = None,
    ) -> None:
        self.directory = Path(directory).expanduser()
        self.provider = provider
        self.replies = replies
        """The offline model playing ``provider``: told the assistant's recorded turns."""
        self.embedder = embedder
        self.use_judge = use_judge
        self.depth = depth
        self.context_k = context_k
        self._samples = 0
        self._current: Path | None = None
        self._agent: Any = None
        self._stack: AsyncExitStack | None = None
        self._buffer: list[tuple[EvalMessage, EvalSession]] = []
        self._alias: dict[str, str] = {}
        """The dataset's id of each assistant turn replayed, by the id of its episode."""
        self._clock = _ReplayClock()

    async def _start(self) -> Any:
        from xai.agent import Agent, AgentConfig
        from xai.memory import MemoryConfig
        from xai.session import SessionConfig

        if self._agent is not None:
            return self._agent
        self._samples += 1
        directory = self._current = self.directory / f"agent-{self._samples}"
        shutil.rmtree(directory, ignore_errors=True)
        agent = Agent(
            directory,
            self.provider,
            embedder=self.embedder,
            clock=self._clock,
            config=AgentConfig(
                session=SessionConfig(extract_memory=True, fsync="off"),
                memory=MemoryConfig(use_judge=self.use_judge),
                memory_tool=False,
                sync_ledger=False,
            ),
        )
        stack = AsyncExitStack()
        await stack.enter_async_context(agent)
        self._agent, self._stack = agent, stack
        return agent

    async def ingest(self, message: EvalMessage, session: EvalSession) -> None:
        if self._buffer and self._buffer[-1][1].id != session.id:
            await self._play()
        self._buffer.append((message, session))

    async def flush(self) -> None:
        """Play what is buffered; then index the new episodes (here, not in a timed
        ``retrieve``)."""
        await self._play()
        if self._agent is not None:
            await self._agent.memory.index_episodes()

    async def _play(self) -> None:
        """Play the buffered dataset session through an Agent Session and close it."""
        from xai.messages import UserMessage

        if not self._buffer:
            return
        buffer, self._buffer = self._buffer, []
        agent = await self._start()
        session = buffer[0][1]
        day = session_date(session.date)
        start = (
            dt.datetime.combine(day, dt.time(12), dt.UTC).timestamp() if day is not None else None
        )
        messages = [m for m, _ in buffer]
        answered: dict[str, str] = {}  # dataset id of a user turn -> of the reply it got
        unasked: list[tuple[int, EvalMessage]] = []
        """Assistant turns with no input before them (one that opens a session, or a
        second in a row): no Session turn can answer them, so they are recorded as they are."""
        live = await agent.open_session(f"conversation of {session.date or session.id}")
        try:
            for i, message in enumerate(messages):
                if _is_assistant(message):
                    if i == 0 or _is_assistant(messages[i - 1]):
                        unasked.append((i, message))
                    continue  # else replayed as the answer to the input before it
                following = messages[i + 1] if i + 1 < len(messages) else None
                if self.replies is not None and following is not None and _is_assistant(following):
                    self.replies.expect(message.text, following.text)
                    answered[message.id] = following.id
                self._clock.at = start + i if start is not None else None
                name = None if message.speaker.lower() == "user" else message.speaker
                await live.send(UserMessage(id=message.id, content=message.text, name=name))
        finally:
            await live.close()  # finalising: the candidates are adjudicated before this returns
            self._clock.at = None
        episodes = agent.memory.episodes.in_session(live.id)
        if unasked:
            await agent.memory.record_episodes(
                _unasked(unasked, episodes, live.id, start if start is not None else time.time())
            )
        input_of_turn = {e.turn: e.id for e in episodes if e.origin != "assistant"}
        for episode in episodes:
            if episode.origin == "assistant" and input_of_turn.get(episode.turn) in answered:
                self._alias[episode.id] = answered[input_of_turn[episode.turn]]

    async def retrieve(self, question: str) -> Retrieved:
        await self.flush()
        if self._agent is None:
            return Retrieved(context="", ranked=())
        hits = await self._agent.memory.search(question, k=self.depth)
        ranked: dict[str, None] = {}
        lines: list[str] = []
        for hit in hits:
            if isinstance(hit, ScoredEpisode):
                ids: Iterable[str] = (hit.episode.id,)
                line = f"[{_when(hit.episode.at)}] {hit.episode.speaker}: {hit.episode.text}"
            elif isinstance(hit, ScoredFact):
                ids = hit.fact.evidence  # the episodes it was drawn from
                line = f"[{_when(hit.fact.first_seen)}] {hit.fact.text}"
            else:
                assert_never(hit)
            ranked.update(dict.fromkeys(self._alias.get(i, i) for i in ids))
            if len(lines) < self.context_k:
                lines.append(line)
        return Retrieved(context="\n".join(lines), ranked=tuple(ranked)[: self.depth])

    async def reset(self) -> None:
        """Close the sample's Agent and delete its directory; then collect, as a host does
        every 32 closed Sessions (``xai.agent._give_back``): a closed Session's parts form
        cycles, and with chromadb and onnxruntime loaded CPython's own full collection
        came about once in ten samples (1,000-1,500 such objects a sample, issue 29)."""
        self._buffer.clear()
        self._alias.clear()
        await self.aclose()
        if self._current is not None:
            await anyio.to_thread.run_sync(shutil.rmtree, self._current, True)
            self._current = None
        gc.collect()

    async def aclose(self) -> None:
        stack = self._stack
        self._agent, self._stack = None, None
        if stack is not None:
            await stack.aclose()  # closes the Agent: its memory is flushed and closed
