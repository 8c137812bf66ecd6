"""Memory evaluation: datasets (LoCoMo, LongMemEval) and retrieval measurements."""

from xai.eval._datasets import (
    EvalMessage,
    EvalQuestion,
    EvalSample,
    EvalSession,
    load_locomo,
    load_longmemeval,
    normalise_evidence,
)
from xai.eval._retrieval import CONFIGS, Config, ConversationIndex, recall_at

__all__ = [
    "CONFIGS",
    "Config",
    "ConversationIndex",
    "EvalMessage",
    "EvalQuestion",
    "EvalSample",
    "EvalSession",
    "load_locomo",
    "load_longmemeval",
    "normalise_evidence",
    "recall_at",
]
