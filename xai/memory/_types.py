"""Long-term memory values: facts, the decisions that made them, and the settings."""

from __future__ import annotations

from typing import Literal, TypeAlias

import msgspec

from xai.exceptions import ConfigurationError
from xai.memory._pool import RecallWeights
from xai.messages import CandidateKind, DecisionKind, Episode, MemoryCandidate

__all__ = [
    "Decision",
    "DecisionKind",
    "Fact",
    "FactStatus",
    "ForgetScope",
    "MemoryConfig",
    "MemoryHit",
    "ScoredEpisode",
    "ScoredFact",
    "Tier",
]

Tier: TypeAlias = Literal["L1", "L2"]
"""L1: tentative points from Sessions; L2: stable facts (recurring or judged important)."""

FactStatus: TypeAlias = Literal["active", "superseded", "decayed", "forgotten"]

ForgetScope: TypeAlias = Literal["fact", "evidence", "erase"]
"""What ``forget`` removes: ``fact``, the fact only (search, prefix); ``evidence``, the fact
and what was said (its evidence episodes leave the search index too); ``erase``, the text of
both from every store on disk (the ledger keeps its hash and the reason)."""


class Fact(msgspec.Struct, frozen=True, kw_only=True):
    """One remembered point and its history. Every change makes a new version."""

    id: str
    text: str
    kind: CandidateKind = "fact"
    tier: Tier = "L1"
    count: int = 1
    """Recurrences: how many distinct Sessions reported it."""
    sessions: tuple[str, ...] = ()
    first_seen: float
    last_seen: float
    confidence: float = 0.5
    status: FactStatus = "active"
    supersedes: tuple[str, ...] = ()
    superseded_by: str | None = None
    sources: tuple[str, ...] = ()
    """Ids of the candidates it came from."""
    important: bool = False
    version: int = 1
    evidence: tuple[str, ...] = ()
    """Ids of the episodes (messages) that support it: the union of its candidates'
    ``evidence``; no decision drops one. Ledgers written before this field replay with
    the evidence of the candidates their decisions name (``Ledger.replay``)."""
    valid_from: float = 0.0
    """When it started holding: when it was first seen (``0.0`` on decode, from a ledger
    older than this field, means ``first_seen``)."""
    valid_to: float | None = None
    """When it stopped holding: set when it is superseded; ``None`` while it holds."""
    forget_scope: ForgetScope | None = None
    """Set when it was forgotten: what went with it (``evidence``: its episodes are out of
    search too, derived from this field on every open)."""

    def __post_init__(self) -> None:
        if not self.valid_from:
            msgspec.structs.force_setattr(self, "valid_from", self.first_seen)

    def valid_at(self, at: float) -> bool:
        """It held at ``at``: ``valid_from <= at`` and not yet superseded then."""
        return self.valid_from <= at and (self.valid_to is None or at < self.valid_to)


class ScoredFact(msgspec.Struct, frozen=True, tag_field="kind", tag="fact"):
    """A fact ``search`` found (``kind`` is ``"fact"`` on the wire)."""

    fact: Fact
    score: float
    """Cosine similarity to the query (1 = same direction); the rank is the fusion's."""

    @property
    def current(self) -> bool:
        """It still holds (not superseded, ``fact.valid_to`` unset)."""
        return self.fact.valid_to is None and self.fact.status == "active"

    @property
    def valid_to(self) -> float | None:
        return self.fact.valid_to


class ScoredEpisode(msgspec.Struct, frozen=True, tag_field="kind", tag="episode"):
    """Something said in a Session that ``search`` found (``kind`` is ``"episode"``)."""

    episode: Episode
    score: float
    """Cosine similarity to the query (1 = same direction); the rank is the fusion's."""
    valid_to: float | None = None
    """When what it said stopped holding: every fact drawn from it was superseded (the
    latest ``valid_to`` of those facts); ``None`` while it is current."""
    superseded_by: tuple[str, ...] = ()
    """The ids of the facts that replaced what it said (their evidence ranks above it)."""

    @property
    def current(self) -> bool:
        """What it said still holds (some fact drawn from it is active, or none was drawn)."""
        return self.valid_to is None


MemoryHit: TypeAlias = ScoredFact | ScoredEpisode
"""One ``search`` result: dispatch on it with ``isinstance`` and ``assert_never``."""


class Decision(msgspec.Struct, frozen=True, kw_only=True):
    """One line of the audit ledger: what was decided, why, from where, and the result.

    ``facts`` are the complete new versions of every fact the decision changed,
    so replaying the ledger rebuilds the memory exactly.
    """

    seq: int
    kind: DecisionKind
    reason: str
    at: float
    candidate: MemoryCandidate | None = None
    session_id: str | None = None
    facts: tuple[Fact, ...] = ()
    judge: bool = False
    """True when an LLM judge made the call (else thresholds did)."""


class MemoryConfig(msgspec.Struct, frozen=True, kw_only=True):
    """Thresholds and limits of adjudication, promotion, decay and the memory prefix.

    Similarities are cosines between unit vectors (1 = identical meaning).
    """

    duplicate_similarity: float = 0.88
    """At or above, a candidate that restates the nearest fact (no content word it lacks,
    same polarity) reinforces it without asking the judge."""
    novel_similarity: float = 0.65
    """Below: nothing known is close enough to be restated or merged; the candidate is
    added (unless it contradicts a fact, see ``contradiction_similarity``). From here to
    ``duplicate_similarity`` the judge decides (or the rules), held to the same policy."""
    contradiction_similarity: float = 0.4
    """Facts at least this similar are checked for a contradiction of the same subject and
    attribute: a changed value ("lives in Paris" -> "moved to Berlin") is often far apart
    in meaning (0.4-0.6 with MiniLM), and the word rules that decide it are strict."""
    neighbours: int = 5
    """Nearest active facts shown to the judge."""
    use_judge: bool = True
    """Ask the LLM in the ambiguous band when a provider is available."""
    judge_max_tokens: int = 400
    promote_after_sessions: int = 3
    """An L1 fact reported by this many distinct Sessions becomes L2."""
    l1_half_life_days: float = 30.0
    decay_floor: float = 0.1
    """An unreinforced L1 fact whose decayed strength falls below this is dropped."""
    l2_merge_similarity: float = 0.95
    """L2 compaction merges stable facts at least this similar."""
    prefix_tokens: int = 600
    """Default budget of the memory prefix handed to a new Session."""
    prefix_candidates: int = 40
    prefix_min_relevance: float = 0.2
    """With a purpose, tentative (L1) facts less similar to it than this are left out."""
    lexical_weight: float = 0.5
    """``search`` ranks by this share of BM25 (words) and the rest of cosine similarity
    (meaning), each z-normalised over the candidates, before the cues of ``recall``; 0:
    by cosine alone. (It overrides ``recall.lexical``; 0.5 was chosen on LoCoMo 0-4.)"""
    recall: RecallWeights = RecallWeights()
    """The retrieval's candidate depth and cue weights (``xai.memory.RecallWeights``)."""
    episode_retention_days: float | None = None
    """Episodes said longer ago than this are deleted, oldest first (None: kept forever).
    Adjudication never deletes an episode; only this and ``max_episodes`` do."""
    max_episodes: int | None = None
    """At most this many episodes are kept; the oldest go first (None: no cap)."""
    check_support: bool = True
    """Drop a candidate its cited episodes do not support (``_support``): neither
    ``support_overlap`` of its content words in them nor ``support_similarity``."""
    support_overlap: float = 0.55
    """Chosen on the choice half of ``tests/data/support.jsonl`` (``bench/support.py``)."""
    support_similarity: float = 0.5
    """Chosen with ``support_overlap``: the cosine of candidate and evidence (MiniLM)."""
    demote_unused_days: float | None = None
    """Forgetting by policy (``maintain``): an active stable (L2) fact neither recalled
    (found by a search or put in a prefix) nor reinforced for this long is demoted to L1,
    one ``demote`` decision (None: never)."""
    forget_unused_days: float | None = None
    """An active tentative (L1) fact neither recalled nor reinforced for this long is
    forgotten, one ``forget`` decision (scope ``fact``) saying why (None: never). With
    ``demote_unused_days`` it must be longer: a stable fact is demoted first, forgotten
    at a later ``maintain``."""

    def __post_init__(self) -> None:
        if not 0 < self.novel_similarity <= self.duplicate_similarity <= 1:
            raise ConfigurationError(
                "need 0 < novel_similarity <= duplicate_similarity <= 1, got "
                f"{self.novel_similarity} and {self.duplicate_similarity}"
            )
        if not 0 < self.contradiction_similarity <= 1:
            raise ConfigurationError(
                f"contradiction_similarity must be in (0, 1], got {self.contradiction_similarity}"
            )
        if not 0 <= self.lexical_weight <= 1:
            raise ConfigurationError(f"lexical_weight must be in [0, 1], got {self.lexical_weight}")
        if self.episode_retention_days is not None and self.episode_retention_days <= 0:
            raise ConfigurationError("episode_retention_days must be positive (or None)")
        if self.max_episodes is not None and self.max_episodes < 0:
            raise ConfigurationError("max_episodes must be at least 0 (or None)")
        for name in ("demote_unused_days", "forget_unused_days"):
            days = getattr(self, name)
            if days is not None and days <= 0:
                raise ConfigurationError(f"{name} must be positive (or None)")
        demote, forget = self.demote_unused_days, self.forget_unused_days
        if demote is not None and forget is not None and forget <= demote:
            raise ConfigurationError("forget_unused_days must be longer than demote_unused_days")
        if self.promote_after_sessions < 1:
            raise ConfigurationError("promote_after_sessions must be at least 1")
