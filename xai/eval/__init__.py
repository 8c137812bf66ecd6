"""Memory evaluation: datasets (LoCoMo, LongMemEval), memory backends, an agent that
answers from them, retrieval and answer metrics, and the report (``xai eval``)."""

from xai.eval._agent import ANSWER_INSTRUCTIONS, Answer, EvalAgent, build_messages
from xai.eval._backends import (
    BACKENDS,
    FullContext,
    HybridRetrieval,
    MemoryBackend,
    NullMemory,
    Retrieved,
    TurnVectorRAG,
    XaiAgentMemory,
)
from xai.eval._datasets import (
    EvalMessage,
    EvalQuestion,
    EvalSample,
    EvalSession,
    load_locomo,
    load_longmemeval,
    normalise_evidence,
)
from xai.eval._harness import Progress, load_records, run_eval
from xai.eval._records import QuestionRecord, RunInfo, SampleRecord
from xai.eval._report import PUBLISHED, render_report, write_report
from xai.eval._retrieval import (
    BEST,
    CONFIGS,
    Config,
    ConversationIndex,
    recall_at,
    session_recall_at,
)
from xai.eval._scoring import (
    JUDGE_MARKER,
    exact_match,
    judge_answer,
    normalise_answer,
    qa_f1,
    says_not_mentioned,
    score_answer,
    token_f1,
)
from xai.eval._scripted import EvalModel, eval_model
from xai.eval._summary import BackendSummary, Figures, Summary, summarise

__all__ = [
    "ANSWER_INSTRUCTIONS",
    "BACKENDS",
    "BEST",
    "CONFIGS",
    "JUDGE_MARKER",
    "PUBLISHED",
    "Answer",
    "BackendSummary",
    "Config",
    "ConversationIndex",
    "EvalAgent",
    "EvalMessage",
    "EvalModel",
    "EvalQuestion",
    "EvalSample",
    "EvalSession",
    "Figures",
    "FullContext",
    "HybridRetrieval",
    "MemoryBackend",
    "NullMemory",
    "Progress",
    "QuestionRecord",
    "Retrieved",
    "RunInfo",
    "SampleRecord",
    "Summary",
    "TurnVectorRAG",
    "XaiAgentMemory",
    "build_messages",
    "eval_model",
    "exact_match",
    "judge_answer",
    "load_locomo",
    "load_longmemeval",
    "load_records",
    "normalise_answer",
    "normalise_evidence",
    "qa_f1",
    "recall_at",
    "render_report",
    "run_eval",
    "says_not_mentioned",
    "score_answer",
    "session_recall_at",
    "summarise",
    "token_f1",
    "write_report",
]
