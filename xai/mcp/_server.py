"""An Agent served over MCP: its memory and its Sessions as tools for any MCP client.

The tools read memory directly (search, recent facts) but never write it: ``remember``
hands the fact to ``Agent.remember`` (adjudicated like a Session's candidate, provenance
``mcp``), ``forget`` goes through ``Agent.forget``, and ``send_message`` talks to a Session
the Agent owns. The Agent stays the only writer of its memory.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Literal, assert_never

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import BaseModel, Field

from xai._http import serve_on_socket
from xai.agent import Agent, GetMood, MoodView, call_agent
from xai.exceptions import FactForgottenError, FactNotFoundError, SessionClosedError
from xai.mcp._approvals import SessionAnswer, add_approval_tools, settle
from xai.memory import Decision, Fact, ForgetScope, MemoryHit, ScoredEpisode, ScoredFact

__all__ = [
    "FactView",
    "MoodReport",
    "Remembered",
    "SessionAnswer",
    "agent_mcp_server",
    "serve_http",
    "serve_stdio",
]

MCP_SOURCE = "mcp"
"""The provenance of what arrives over MCP: the ledger's session id for ``remember``."""

ALREADY_FORGOTTEN = "already forgotten"
"""``forget``'s answer when the fact was forgotten before (no second decision is made)."""


class FactView(BaseModel):
    """One fact as an MCP client sees it."""

    id: str
    text: str
    kind: str
    tier: str
    count: int = Field(description="how many times it was reported")
    last_seen: float = Field(description="Unix time")
    score: float | None = Field(default=None, description="cosine similarity to the query")


class EpisodeView(BaseModel):
    """Something said in one of the Agent's conversations, as an MCP client sees it."""

    id: str
    text: str
    speaker: str = Field(description="who said it ('assistant': the Agent itself)")
    session_id: str
    at: float = Field(description="Unix time it was said")
    score: float = Field(description="cosine similarity to the query")
    valid_to: float | None = Field(
        default=None, description="Unix time what it said stopped holding (None: it holds)"
    )
    superseded_by: list[str] = Field(
        default_factory=list, description="ids of the facts that replaced what it said"
    )


class Remembered(BaseModel):
    """What the Agent decided about a fact it was asked to remember."""

    decisions: list[str] = Field(description="add, reinforce, merge, supersede or drop")
    reasons: list[str]
    facts: list[FactView] = Field(description="the facts as they stand after the decisions")


class Forgotten(BaseModel):
    """What became of a request to forget a fact."""

    fact_id: str
    decision: str = Field(
        description="forget, or 'already forgotten' (an earlier request decided it; "
        "nothing was written again)"
    )


def _view(fact: Fact, score: float | None = None) -> FactView:
    return FactView(
        id=fact.id,
        text=fact.text,
        kind=fact.kind,
        tier=fact.tier,
        count=fact.count,
        last_seen=fact.last_seen,
        score=score,
    )


def _hit_view(hit: MemoryHit) -> FactView | EpisodeView:
    if isinstance(hit, ScoredFact):
        return _view(hit.fact, hit.score)
    if isinstance(hit, ScoredEpisode):
        e = hit.episode
        return EpisodeView(
            id=e.id, text=e.text, speaker=e.speaker, session_id=e.session_id, at=e.at,
            score=hit.score, valid_to=hit.valid_to, superseded_by=list(hit.superseded_by),
        )  # fmt: skip
    assert_never(hit)


def _remembered(decisions: list[Decision]) -> Remembered:
    facts = {f.id: f for d in decisions for f in d.facts}
    return Remembered(
        decisions=[d.kind for d in decisions],
        reasons=[d.reason for d in decisions],
        facts=[_view(f) for f in facts.values()],
    )


def agent_mcp_server(agent: Agent, *, name: str = "xai-agent") -> MCPServer:
    """An MCP server (official SDK) whose tools use ``agent``, which must be running."""
    server = MCPServer(
        name,
        instructions=(
            f"The long-term memory and conversations of the xai Agent {agent.id}. Search it "
            "before answering about the user; ask it to remember what the user wants kept."
        ),
        log_level="WARNING",
    )

    @server.tool()
    async def search_memory(
        query: str,
        k: Annotated[int, Field(ge=1, le=50, description="how many results")] = 5,
        history: Annotated[
            bool, Field(description="also what no longer holds (marked with valid_to)")
        ] = False,
    ) -> list[FactView | EpisodeView]:
        """Search the Agent's long-term memory: the facts and the things said (episodes)
        that best match the query, only what still holds unless history is asked for."""
        hits = await agent.memory.search(query, k, current_only=not history)
        return [_hit_view(hit) for hit in hits]

    @server.tool()
    async def remember(
        text: str,
        kind: Literal["preference", "fact", "commitment", "event", "other"] = "fact",
    ) -> Remembered:
        """Ask the Agent to remember a fact about the user. The Agent decides: add it,
        reinforce or update what it knows, or drop it; the answer says which."""
        if not text.strip():
            raise ToolError("there is nothing to remember in an empty text")
        decisions = await agent.remember(text, kind=kind, source=MCP_SOURCE)
        return _remembered(decisions)

    @server.tool()
    async def forget(
        fact_id: str,
        scope: Annotated[
            ForgetScope,
            Field(
                description="fact: the fact only; evidence: also what was said (its turns); "
                "erase: the text of both leaves every file of the Agent (a hash stays)"
            ),
        ] = "fact",
    ) -> Forgotten:
        """Forget one fact (by the id search_memory or recent_facts gave); with scope
        evidence, what the user said that it came from leaves the search too; with scope
        erase, their text is removed from every store on disk."""
        try:
            decision = await agent.forget(fact_id, "forgotten on request over MCP", scope=scope)
        except FactForgottenError:
            return Forgotten(fact_id=fact_id, decision=ALREADY_FORGOTTEN)
        except FactNotFoundError as exc:
            raise ToolError(str(exc)) from None
        return Forgotten(fact_id=fact_id, decision=decision.kind)

    # Every tool is a coroutine: the SDK runs a plain function in a worker thread, where
    # reading the Agent's memory races the adjudication that writes it on the loop.
    @server.tool()
    async def recent_facts(
        limit: Annotated[int, Field(ge=1, le=200, description="how many facts")] = 10,
    ) -> list[FactView]:
        """The facts the Agent holds, most recently seen first."""
        return [_view(f) for f in agent.memory.facts()[:limit]]

    @server.tool()
    async def send_message(
        text: str,
        session_id: Annotated[
            str | None, Field(description="continue this Session (from an earlier answer)")
        ] = None,
        purpose: Annotated[
            str | None, Field(description="when opening a new Session: what it is for")
        ] = None,
    ) -> SessionAnswer:
        """Send a message to one of the Agent's Sessions and return its answer. Without
        session_id a new Session is opened for the purpose given."""
        try:
            session = agent.session(session_id) if session_id else await agent.open_session(purpose)
            events = session.subscribe(buffer=10_000)
            handle = session.send(text)
        except SessionClosedError as exc:
            raise ToolError(str(exc)) from None
        assert handle.input is not None
        # The answer, or (status awaiting_approval) the calls that wait for decide_approval.
        return await settle(session, events, handle.input.id)

    @server.tool()
    async def close_session(session_id: str) -> str:
        """Close a Session: what it learnt is handed to the Agent's memory."""
        try:
            session = agent.session(session_id)
        except SessionClosedError as exc:
            raise ToolError(str(exc)) from None
        await session.close()
        return f"closed {session_id}"

    add_approval_tools(server, agent)  # list_approvals, decide_approval

    @server.tool()
    async def get_mood() -> MoodReport:
        """The user's and the Agent's mood now (valence: unpleasant -1 .. +1 pleasant;
        arousal: calm -1 .. +1 activated), carried across conversations."""
        return _mood_report(await call_agent(agent, GetMood(agent_id=agent.id, limit=1)))

    return server


class MoodReport(BaseModel):
    """The mood as an MCP client sees it (docs/mood.md)."""

    enabled: bool
    user_valence: float
    user_arousal: float
    user_emotions: dict[str, float]
    agent_valence: float
    agent_arousal: float
    agent_emotions: dict[str, float]
    last_digest_at: float | None = Field(description="Unix time a conversation last moved it")


def _mood_report(view: MoodView) -> MoodReport:
    last = view.history[-1].at if view.history else None
    user, mine = view.user, view.agent
    return MoodReport(
        enabled=view.enabled,
        user_valence=round(user.valence, 3),
        user_arousal=round(user.arousal, 3),
        user_emotions=user.emotions,
        agent_valence=round(mine.valence, 3),
        agent_arousal=round(mine.arousal, 3),
        agent_emotions=mine.emotions,
        last_digest_at=last,
    )


async def serve_stdio(agent: Agent) -> None:
    """Serve ``agent`` (running) over stdin/stdout until the client disconnects."""
    await agent_mcp_server(agent).run_stdio_async()


async def serve_http(
    agent: Agent,
    host: str = "127.0.0.1",
    port: int = 8000,
    *,
    ready: Callable[[str], None] = lambda _url: None,
    stop: anyio.Event | None = None,
) -> None:
    """Serve ``agent`` over streamable HTTP at ``http://host:port/mcp`` until ``stop`` is set
    (a graceful shutdown) or the caller is cancelled; ``ready`` gets the URL once it
    listens (port 0: a free port). Signals are the caller's: nothing here installs handlers."""
    app = agent_mcp_server(agent).streamable_http_app(host=host)
    await serve_on_socket(app, host, port, path="/mcp", ready=ready, stop=stop)
