"""Long-term memory: facts on chromadb with offline embeddings, an audit ledger, adjudication."""

from xai.memory._embeddings import (
    Embedder,
    LocalMiniLM,
    OpenAIEmbedder,
    default_embedder,
    local_minilm,
    token_counter,
)
from xai.memory._episodes import EpisodeStore
from xai.memory._judge import JUDGE_MARKER
from xai.memory._lexical import LexicalIndex, lexical_tokens
from xai.memory._memory import LongTermMemory
from xai.memory._types import (
    Decision,
    DecisionKind,
    Fact,
    FactStatus,
    MemoryConfig,
    ScoredFact,
    Tier,
)

__all__ = [
    "JUDGE_MARKER",
    "Decision",
    "DecisionKind",
    "Embedder",
    "EpisodeStore",
    "Fact",
    "FactStatus",
    "LexicalIndex",
    "LocalMiniLM",
    "LongTermMemory",
    "MemoryConfig",
    "OpenAIEmbedder",
    "ScoredFact",
    "Tier",
    "default_embedder",
    "lexical_tokens",
    "local_minilm",
    "token_counter",
]
