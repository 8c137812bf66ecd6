"""Long-term memory: facts on chromadb with offline embeddings, an audit ledger, adjudication."""

from xai.memory._corpus import EpisodeCorpus
from xai.memory._dates import DateWindow, question_windows, session_date, session_time
from xai.memory._embeddings import (
    BlockingQuestion,
    Embedder,
    EmbedQuestion,
    LocalMiniLM,
    OpenAIEmbedder,
    QueryEmbedder,
    default_embedder,
    local_minilm,
    query_embedding,
    token_counter,
)
from xai.memory._episodes import EpisodeStore
from xai.memory._erase import Erasure
from xai.memory._judge import JUDGE_MARKER
from xai.memory._lexical import LexicalIndex, lexical_tokens
from xai.memory._memory import LongTermMemory
from xai.memory._recall import (
    DEFAULT_CUES,
    Columns,
    Cues,
    EpisodeLike,
    PoolItem,
    RecallWeights,
    fuse,
    rank,
    rank_apart,
)
from xai.memory._search import SearchTier
from xai.memory._store import IndexStore
from xai.memory._types import (
    Decision,
    DecisionKind,
    Fact,
    FactStatus,
    ForgetScope,
    MemoryConfig,
    MemoryHit,
    ScoredEpisode,
    ScoredFact,
    Tier,
)
from xai.memory._writer import FactStore

__all__ = [
    "DEFAULT_CUES",
    "JUDGE_MARKER",
    "BlockingQuestion",
    "Columns",
    "Cues",
    "DateWindow",
    "Decision",
    "DecisionKind",
    "EmbedQuestion",
    "Embedder",
    "EpisodeCorpus",
    "EpisodeLike",
    "EpisodeStore",
    "Erasure",
    "Fact",
    "FactStatus",
    "FactStore",
    "ForgetScope",
    "IndexStore",
    "LexicalIndex",
    "LocalMiniLM",
    "LongTermMemory",
    "MemoryConfig",
    "MemoryHit",
    "OpenAIEmbedder",
    "PoolItem",
    "QueryEmbedder",
    "RecallWeights",
    "ScoredEpisode",
    "ScoredFact",
    "SearchTier",
    "Tier",
    "default_embedder",
    "fuse",
    "lexical_tokens",
    "local_minilm",
    "query_embedding",
    "question_windows",
    "rank",
    "rank_apart",
    "session_date",
    "session_time",
    "token_counter",
]
