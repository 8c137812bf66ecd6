"""The agent under evaluation (seed 000's ``BaseAgent``): a memory backend and a model.

``ingest_sample`` feeds every message of every session, in order, to the memory;
``answer`` retrieves a context for the question, builds the prompt and asks the
model. The agent neither holds the sample nor resets the memory: the harness
resets it before each sample.
"""

from __future__ import annotations

import time

import msgspec

from xai.eval._backends import MemoryBackend, Retrieved
from xai.eval._datasets import EvalSample
from xai.messages import SystemMessage, UserMessage
from xai.providers import Provider
from xai.query import Query, QueryConfig

__all__ = ["ANSWER_INSTRUCTIONS", "NOT_MENTIONED", "Answer", "EvalAgent", "build_messages"]

NOT_MENTIONED = "Not mentioned in the conversation."
"""How an answer declines (LoCoMo's scoring looks for "not mentioned")."""

ANSWER_INSTRUCTIONS = (
    "You are a helpful assistant with access to past conversation history. Answer the "
    "question based on the provided context, as briefly as you can: a short phrase, a name "
    "or a date (work dates out from the session dates shown). If the context does not say, "
    f"answer: {NOT_MENTIONED}"
)


class Answer(msgspec.Struct, frozen=True, kw_only=True):
    text: str
    retrieved: Retrieved
    retrieval_ms: float
    error: str | None = None
    """Why there is no answer (the model failed); ``text`` is then empty."""


def build_messages(
    question: str, context: str, *, asked_on: str = ""
) -> tuple[SystemMessage, UserMessage]:
    """The prompt: without context the question alone (no empty "Context:" block); the
    date the question is asked on, when the dataset gives one, ahead of the question
    ("how many days ago" counts from it)."""
    if asked_on:
        question = f"(Asked on {asked_on}.) {question}"
    content = f"Context:\n{context}\n\nQuestion: {question}" if context else question
    return SystemMessage(content=ANSWER_INSTRUCTIONS), UserMessage(content=content)


class EvalAgent:
    def __init__(
        self, memory: MemoryBackend, llm: Provider | None, *, max_tokens: int = 200
    ) -> None:
        self.memory = memory
        self.llm = llm
        """None: retrieval only (``answer`` returns the context and no text)."""
        self.max_tokens = max_tokens

    async def ingest_sample(self, sample: EvalSample) -> int:
        """Every message of every session, in order, into memory (then ``flush``: all of it
        retrievable); returns how many."""
        count = 0
        for session in sample.sessions:
            for message in session.messages:
                await self.memory.ingest(message, session)
                count += 1
        await self.memory.flush()
        return count

    async def retrieve(self, question: str) -> tuple[Retrieved, float]:
        started = time.perf_counter()
        retrieved = await self.memory.retrieve(question)
        return retrieved, (time.perf_counter() - started) * 1000

    async def answer(self, question: str) -> Answer:
        """Retrieve → build the prompt → ask the model."""
        retrieved, elapsed = await self.retrieve(question)
        return await self.answer_from(question, retrieved, elapsed)

    async def answer_from(
        self, question: str, retrieved: Retrieved, elapsed: float, *, asked_on: str = ""
    ) -> Answer:
        """The model's answer from a context already retrieved (in ``elapsed`` ms), to a
        question asked on ``asked_on`` (the dataset's date; "" for none)."""
        if self.llm is None:
            return Answer(text="", retrieved=retrieved, retrieval_ms=elapsed)
        system, user = build_messages(question, retrieved.context, asked_on=asked_on)
        query = Query(
            self.llm, config=QueryConfig(max_rounds=1, max_tokens=self.max_tokens, temperature=0.0)
        )
        result = await query.run([system], user)
        if result.error is not None:
            return Answer(
                text="",
                retrieved=retrieved,
                retrieval_ms=elapsed,
                error=f"{result.error.type}: {result.error.message}",
            )
        return Answer(text=result.text.strip(), retrieved=retrieved, retrieval_ms=elapsed)
