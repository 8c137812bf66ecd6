"""The structured output types a scenario can ask for, as msgspec types (with JSON schemas)."""

from __future__ import annotations

from typing import Any, Literal, TypeAlias

import msgspec

__all__ = [
    "OUTPUT_TYPES",
    "DocumentReviewReport",
    "GeneralAnswer",
    "OutputType",
    "QualityReport",
    "RiskAuditReport",
    "TicketResponse",
    "answer_text",
]

OutputType: TypeAlias = Literal[
    "general_answer",
    "document_review_report",
    "ticket_response",
    "quality_report",
    "risk_audit_report",
]


class GeneralAnswer(msgspec.Struct, kw_only=True):
    answer: str
    key_points: list[str] = msgspec.field(default_factory=list)


class Finding(msgspec.Struct, kw_only=True):
    issue: str
    severity: Literal["low", "medium", "high"] = "medium"
    location: str = ""


class DocumentReviewReport(msgspec.Struct, kw_only=True):
    summary: str
    findings: list[Finding] = msgspec.field(default_factory=list)
    missing_items: list[str] = msgspec.field(default_factory=list)
    verdict: Literal["approve", "revise", "reject"] = "revise"


class TicketResponse(msgspec.Struct, kw_only=True):
    reply: str
    category: str = "general"
    priority: Literal["low", "normal", "high", "urgent"] = "normal"
    next_steps: list[str] = msgspec.field(default_factory=list)


class Metric(msgspec.Struct, kw_only=True):
    name: str
    value: float
    unit: str = ""


class QualityReport(msgspec.Struct, kw_only=True):
    summary: str
    metrics: list[Metric] = msgspec.field(default_factory=list)
    issues: list[str] = msgspec.field(default_factory=list)
    action_items: list[str] = msgspec.field(default_factory=list)


class Risk(msgspec.Struct, kw_only=True):
    risk: str
    likelihood: Literal["low", "medium", "high"] = "medium"
    impact: Literal["low", "medium", "high"] = "medium"
    mitigation: str = ""


class RiskAuditReport(msgspec.Struct, kw_only=True):
    summary: str
    risks: list[Risk] = msgspec.field(default_factory=list)
    overall_rating: Literal["low", "medium", "high"] = "medium"


OUTPUT_TYPES: dict[str, type[Any]] = {
    "general_answer": GeneralAnswer,
    "document_review_report": DocumentReviewReport,
    "ticket_response": TicketResponse,
    "quality_report": QualityReport,
    "risk_audit_report": RiskAuditReport,
}

_TEXT_FIELD: dict[type[Any], str] = {
    GeneralAnswer: "answer",
    DocumentReviewReport: "summary",
    TicketResponse: "reply",
    QualityReport: "summary",
    RiskAuditReport: "summary",
}


def answer_text(value: Any) -> str:
    """The natural-language part of a structured output."""
    field = _TEXT_FIELD.get(type(value))
    return str(getattr(value, field)) if field else ""
