"""What a run leaves behind for people: results.json, a recall@k plot and report.md.

The report sets the measured figures beside published ones (LoCoMo only), each
published row labelled as such so nobody mistakes it for a measurement. The plot
needs matplotlib (the ``eval`` extra); without it the report says so and goes on.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Iterable, Sequence
from io import BytesIO
from pathlib import Path

import msgspec

from xai._files import write_atomic
from xai.eval._summary import Figures, Summary, encode_summary

__all__ = ["PUBLISHED", "Published", "render_report", "write_plot", "write_report"]

PLOT_NAME = "recall_at_k.png"
_DASH = "—"
_DATASET_NAMES = {"locomo": "LoCoMo", "longmemeval": "LongMemEval"}


class Published(msgspec.Struct, frozen=True, kw_only=True):
    """Figures reported in the literature, shown beside (never mixed into) measured ones."""

    label: str
    source: str = ""
    recall: dict[int, float] = msgspec.field(default_factory=dict)
    """Evidence recall over dialog turns in percent, by k."""
    f1: float | None = None
    """Answer F1 in percent."""
    context_k: int | None = None
    """Retrieved turns given to the answering model for ``f1``."""


_LOCOMO_TABLE_3 = "LoCoMo paper, Table 3"

PUBLISHED: dict[str, tuple[Published, ...]] = {
    "locomo": (
        Published(
            label="DRAGON retriever",
            source=_LOCOMO_TABLE_3,
            recall={5: 56.7, 10: 66.2, 25: 76.7, 50: 82.7},
        ),
        Published(label="all-MiniLM-L6-v2", recall={10: 48.0}),
        Published(
            label="gpt-3.5-turbo, DRAGON top-5 turns",
            source=_LOCOMO_TABLE_3,
            f1=38.8,
            context_k=5,
        ),
        Published(
            label="gpt-3.5-turbo, DRAGON top-10 turns",
            source=_LOCOMO_TABLE_3,
            f1=39.7,
            context_k=10,
        ),
    ),
}
"""Reference figures by dataset (``RunInfo.dataset``, lower case)."""


def render_report(summary: Summary, *, plot: str | None = None) -> str:
    """The Markdown report; ``plot`` is the recall@k image's file name, relative to the report."""
    info = summary.info
    ks = sorted(info.ks)
    dataset = _DATASET_NAMES.get(info.dataset.lower(), info.dataset)
    published = PUBLISHED.get(info.dataset.lower(), ())
    lines = [f"# Memory evaluation: {dataset}", "", "## How this run was made", ""]
    lines += _run_list(summary)

    header = ["questions", *(f"recall@{k}" for k in ks), *(f"session recall@{k}" for k in ks)]
    header += ["F1", "EM", "judge", "context tokens", "retrieval p50 ms", "retrieval p95 ms"]
    rows = [[f"`{b.backend}`", *_cells(b.overall, ks)] for b in summary.backends]
    rows += [[f"*published:* {_label(p)}", *_published_cells(p, ks)] for p in published]
    lines += ["", "## Overall", "", *_table(["backend", *header], rows), ""]
    if published:
        context = (
            f" This run gave the answering model the top {info.context_k} turns of the backends "
            "that rank."
            if info.answer_model
            else ""
        )
        lines += [
            "Rows marked *published* are figures reported in the literature, not measured "
            f"here.{context} The published figures in full:",
            "",
            *(f"- {_label(p)}: {_published_text(p)}" for p in published),
        ]
    else:
        lines.append(
            f"No published figures are bundled for {dataset}: compare the backends with each other."
        )
    lines += _answer_notes(summary)

    lines += ["", "## By category"]
    for backend in summary.backends:
        lines += ["", f"### `{backend.backend}`", ""]
        if not backend.questions:
            lines.append("No questions were recorded.")
            continue
        rows = [[category, *_cells(f, ks)] for category, f in sorted(backend.by_category.items())]
        rows.append(["overall", *_cells(backend.overall, ks)])
        lines += _table(["category", *header], rows)

    ranks = any(b.overall.recall for b in summary.backends)
    if plot is not None:
        lines += ["", "## Recall@k by category", "", f"![recall@k by category]({plot})"]
    elif ranks and importlib.util.find_spec("matplotlib") is None:
        lines += [
            "",
            "No recall@k plot: matplotlib is not installed (`pip install 'xai-actors[eval]'`).",
        ]

    lines += ["", "## How to read this", "", _HOW_TO_READ, ""]
    return "\n".join(lines)


_HOW_TO_READ = (
    "Recall@k is the share of a question's evidence turns found among the top k turns the "
    "backend retrieved, averaged over the questions that have evidence. Session recall@k is "
    "the share of the question's evidence sessions that hold at least one of those k turns. "
    "F1 is token F1 between the answer and the gold answer under LoCoMo's rules (normalised, "
    "stemmed words); EM is exact match after the same normalisation; judge is the share of "
    "answers an LLM judge accepted. F1, EM and judge are averaged over the questions that "
    "were scored. The full-context and null backends do not rank turns (one holds the whole "
    "conversation, the other nothing), so they have no recall. Retrieval times are per "
    f"question, percentiles interpolated linearly; {_DASH} marks a figure that does not apply "
    "or was not measured."
)


def write_plot(summary: Summary, path: Path) -> bool:
    """Draw recall@k by category, one panel per backend that ranks, as a PNG at ``path``.

    Returns False, writing nothing, when no backend ranks or matplotlib is not installed.
    """
    ranking = [b for b in summary.backends if b.overall.recall]
    if not ranking:
        return False
    try:
        # The Figure API with an explicit Agg canvas: no pyplot, so no global state and no GUI.
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError:
        return False
    columns = min(len(ranking), 3)
    rows = -(-len(ranking) // columns)
    figure = Figure(figsize=(5.5 * columns, 4.5 * rows), layout="constrained")
    FigureCanvasAgg(figure)
    axes = figure.subplots(rows, columns, squeeze=False).flat
    for index, backend in enumerate(ranking):
        ax = axes[index]
        for category, figures in sorted(backend.by_category.items()):
            if figures.recall:
                ks = sorted(figures.recall)
                ax.plot(ks, [figures.recall[k] for k in ks], marker="o", label=category)
        ks = sorted(backend.overall.recall)
        ax.plot(
            ks,
            [backend.overall.recall[k] for k in ks],
            color="black",
            linewidth=3,
            marker="o",
            label="overall",
        )
        ax.set_title(backend.backend)
        ax.set_xlabel("k")
        ax.set_ylabel("recall@k (%)")
        # A little headroom so a line at 100 is not hidden by the frame.
        ax.set_ylim(0, 104)
        ax.set_yticks(range(0, 101, 20))
        ax.set_xticks(ks)
        ax.grid(alpha=0.3)
        ax.legend(loc="lower right", fontsize="small")
    for index in range(len(ranking), rows * columns):
        axes[index].set_visible(False)
    dataset = _DATASET_NAMES.get(summary.info.dataset.lower(), summary.info.dataset)
    figure.suptitle(f"{dataset}: recall@k by category")
    buffer = BytesIO()
    figure.savefig(buffer, format="png", dpi=100)
    write_atomic(path, buffer.getvalue())
    return True


def write_report(summary: Summary, out_dir: Path) -> list[Path]:
    """Write results.json, recall_at_k.png (when it can be drawn) and report.md into ``out_dir``."""
    results = out_dir / "results.json"
    write_atomic(results, encode_summary(summary))
    written = [results]
    plot = out_dir / PLOT_NAME
    if write_plot(summary, plot):
        written.append(plot)
    report = out_dir / "report.md"
    text = render_report(summary, plot=PLOT_NAME if plot in written else None)
    write_atomic(report, text.encode())
    written.append(report)
    return written


def _run_list(summary: Summary) -> list[str]:
    info = summary.info
    answers = (
        f"`{info.answer_model}`" if info.answer_model else "retrieval only — no answers asked for"
    )
    samples = ", ".join(
        f"`{b.backend}` {b.samples} ({b.ingest_s:.1f} s ingest)" for b in summary.backends
    )
    return [
        f"- Data: `{info.data}`",
        f"- Backends: {', '.join(f'`{name}`' for name in info.backends) or _DASH}",
        f"- k: {', '.join(str(k) for k in sorted(info.ks)) or _DASH}",
        f"- Context: the top {info.context_k} turns per question (facts for `xai`; "
        "for backends that rank)",
        f"- Answer model: {answers}",
        f"- Memory model of `xai`: `{info.memory_model}`"
        if info.memory_model
        else "- Memory model of `xai`: none (no `xai` backend)",
        f"- Judge: {f'`{info.judge_model}`' if info.judge_model else 'none'}",
        f"- Embedder: {f'`{info.embedder}`' if info.embedder else _DASH}",
        f"- Started: {info.started or _DASH}",
        f"- xai version: {info.xai_version or _DASH}",
        f"- Samples: {samples or _DASH}",
    ]


def _answer_notes(summary: Summary) -> list[str]:
    if summary.info.answer_model is None and not any(b.overall.answered for b in summary.backends):
        return []
    counts = "; ".join(
        f"`{b.backend}` {b.overall.answered} of {b.questions} answered, "
        + _plural(b.overall.errors, "error")
        for b in summary.backends
    )
    return ["", f"Answers: {counts}."]


def _cells(figures: Figures, ks: Sequence[int]) -> list[str]:
    if not figures.count:
        return ["0", *[_DASH] * (2 * len(ks) + 6)]
    return [
        str(figures.count),
        *(_number(figures.recall.get(k)) for k in ks),
        *(_number(figures.session_recall.get(k)) for k in ks),
        _number(figures.f1),
        _number(figures.exact),
        _number(figures.judge),
        f"{figures.context_tokens:.0f}",
        f"{figures.retrieval_ms_p50:.1f}",
        f"{figures.retrieval_ms_p95:.1f}",
    ]


def _published_cells(published: Published, ks: Sequence[int]) -> list[str]:
    return [
        _DASH,
        *(_number(published.recall.get(k)) for k in ks),
        *[_DASH] * len(ks),
        _number(published.f1),
        *[_DASH] * 5,
    ]


def _label(published: Published) -> str:
    return f"{published.label} ({published.source})" if published.source else published.label


def _published_text(published: Published) -> str:
    parts: list[str] = []
    if published.recall:
        at = ", ".join(f"{value:.1f} @{k}" for k, value in sorted(published.recall.items()))
        parts.append(f"evidence recall over dialog turns {at}")
    if published.f1 is not None:
        parts.append(f"answer F1 {published.f1:.1f} with the top {published.context_k} turns")
    return "; ".join(parts)


def _plural(count: int, noun: str) -> str:
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


def _number(value: float | None) -> str:
    return _DASH if value is None else f"{value:.1f}"


def _table(header: Sequence[str], rows: Iterable[Sequence[str]]) -> list[str]:
    return [
        "| " + " | ".join(header) + " |",
        "|" + "|".join(["---", *["---:"] * (len(header) - 1)]) + "|",
        *("| " + " | ".join(row) + " |" for row in rows),
    ]
