"""``xai eval``: measure memory backends on LoCoMo or LongMemEval, resumably.

Answers come from the model named by ``LLM_*`` when set, else from the offline
scripted model (an extractive baseline) over xai's OpenAI-wire server, or from
nobody (``--answers none``: retrieval figures only). The ``xai`` backend's
Sessions talk to the same model.
"""

from __future__ import annotations

import argparse
import datetime as dt
import sys
from collections.abc import Sequence
from contextlib import AsyncExitStack
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from xai.exceptions import UsageError

if TYPE_CHECKING:
    from xai.eval import EvalModel, Progress, Summary

__all__ = ["add_eval_parser", "eval_command"]


def add_eval_parser(
    sub: argparse._SubParsersAction[argparse.ArgumentParser], common: argparse.ArgumentParser
) -> None:
    from xai.eval import BACKENDS, CONFIGS

    parser = sub.add_parser(
        "eval",
        parents=[common],
        help="measure memory backends on LoCoMo or LongMemEval",
        description="Ingest each sample's conversation into each memory backend, retrieve for "
        "every question, answer and score it; write results.json, report.md and "
        "recall_at_k.png to --out. A rerun with the same --out skips finished samples.",
    )
    parser.add_argument("dataset", choices=("locomo", "longmemeval"))
    parser.add_argument("--data", type=Path, required=True, help="the dataset's JSON file")
    parser.add_argument(
        "--backend",
        default="hybrid,rag",
        help=f"comma-separated, from {', '.join(BACKENDS)} (default: hybrid,rag)",
    )
    parser.add_argument(
        "--retrieval",
        default="recall",
        choices=CONFIGS,
        help="the hybrid backend's configuration: the library's retrieval (recall, the "
        "default) or a plain baseline",
    )
    parser.add_argument("--k", default="5,10,25", help="recall@k cut-offs (default: 5,10,25)")
    parser.add_argument("--context-k", type=int, default=10, help="turns or facts given as context")
    parser.add_argument("--out", type=Path, required=True, help="where results go (resumable)")
    parser.add_argument(
        "--answers",
        choices=("auto", "model", "scripted", "none"),
        default="auto",
        help="who answers: the LLM_* model, the offline extractive script, nobody "
        "(default auto: the model when LLM_* is set, else the script)",
    )
    parser.add_argument("--judge", action="store_true", help="grade answers with the LLM_* model")
    parser.add_argument("--limit", type=int, help="only the first N samples (after --samples)")
    parser.add_argument(
        "--samples",
        help="which samples, by position from 0: ranges and numbers separated by commas, "
        "e.g. 5-9 or 0,1,2 (default: all)",
    )
    parser.add_argument("--concurrency", type=int, default=4, help="answers asked at once")


def _ks(text: str) -> tuple[int, ...]:
    try:
        ks = tuple(sorted({int(k) for k in text.split(",") if k.strip()}))
    except ValueError:
        raise UsageError(f"--k {text!r}: give whole numbers separated by commas") from None
    if not ks or ks[0] < 1:
        raise UsageError(f"--k {text!r}: every k must be at least 1")
    return ks


def _samples(text: str | None, count: int) -> list[int]:
    """``--samples``: positions (``5-9``, ``0,1,2``, ``0-2,7``) in order, each once."""
    if text is None:
        return list(range(count))
    chosen: dict[int, None] = {}
    for part in (p.strip() for p in text.split(",")):
        low, dash, high = part.partition("-")
        try:
            first, last = int(low), int(high) if dash else int(low)
        except ValueError:
            raise UsageError(f"--samples {text!r}: give numbers or ranges like 5-9") from None
        if first < 0 or last < first:
            raise UsageError(f"--samples {text!r}: {part!r} is not a range from low to high")
        if last >= count:
            raise UsageError(f"--samples {text!r}: the data has {count} samples (0-{count - 1})")
        chosen.update(dict.fromkeys(range(first, last + 1)))
    return list(chosen)


def _backend_names(text: str) -> tuple[str, ...]:
    from xai.eval import BACKENDS

    names = tuple(dict.fromkeys(n.strip() for n in text.split(",") if n.strip()))
    unknown = [n for n in names if n not in BACKENDS]
    if unknown or not names:
        raise UsageError(
            f"--backend {text!r}: unknown {', '.join(unknown) or '(none given)'}; "
            f"choose from {', '.join(BACKENDS)}"
        )
    return names


class _Bar:
    """One line on stderr, redrawn in place on a terminal; a line per sample otherwise."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self.live = stream.isatty()

    def __call__(self, progress: Progress) -> None:
        width = 24
        filled = width * progress.samples_done // max(1, progress.samples_total)
        resumed = f", {progress.skipped} resumed" if progress.skipped else ""
        line = (
            f"{progress.backend:<8} [{'#' * filled}{'.' * (width - filled)}] "
            f"{progress.samples_done}/{progress.samples_total} samples, "
            f"{progress.questions_done}/{progress.questions_total} questions{resumed}"
        )
        if self.live:
            end = "\n" if progress.samples_done == progress.samples_total else ""
            self.stream.write(f"\r{line}{end}")
        else:
            self.stream.write(line + "\n")
        self.stream.flush()


def eval_command(args: argparse.Namespace) -> int:
    import anyio

    from xai.cli._errors import EXIT_FAILED, EXIT_OK, explain

    ks = _ks(args.k)
    names = _backend_names(args.backend)
    if args.context_k < 1 or args.concurrency < 1 or (args.limit is not None and args.limit < 1):
        raise UsageError("--context-k, --concurrency and --limit must be at least 1")
    try:
        summary = anyio.run(lambda: _run(args, names, ks))
    except Exception as exc:
        if explain(exc) is not None:  # a setting, a directory, a port: main says what to fix
            raise
        print(f"xai: the evaluation failed: {type(exc).__name__}: {exc}", file=sys.stderr)
        return EXIT_FAILED
    out = args.out.expanduser()
    for backend in summary.backends:
        recall = backend.overall.recall
        shown = ", ".join(f"@{k} {v:.1f}" for k, v in recall.items()) or "no ranking"
        f1 = backend.overall.f1
        print(
            f"{backend.backend:<8} recall {shown}"
            + (f"; F1 {f1:.1f}" if f1 is not None else "")
            + f" ({backend.questions} questions)"
        )
    print(f"report: {out / 'report.md'}")
    return EXIT_OK


async def _run(args: argparse.Namespace, names: Sequence[str], ks: tuple[int, ...]) -> Summary:
    from xai import __version__
    from xai.config import LLMConfig
    from xai.eval import (
        FullContext,
        HybridRetrieval,
        MemoryBackend,
        NullMemory,
        RunInfo,
        TurnVectorRAG,
        XaiAgentMemory,
        load_locomo,
        load_longmemeval,
        run_eval,
    )
    from xai.memory import default_embedder, token_counter
    from xai.providers import OpenAIProvider

    load = load_locomo if args.dataset == "locomo" else load_longmemeval
    loaded = load(args.data.expanduser())
    samples = [loaded[i] for i in _samples(args.samples, len(loaded))][: args.limit]
    out: Path = args.out.expanduser()
    config = LLMConfig.from_env()
    answers = args.answers
    if answers == "auto":
        answers = "model" if config.is_configured else "scripted"
    if (answers == "model" or args.judge) and not config.is_configured:
        from xai.cli._errors import no_model

        raise no_model("--answers model and --judge need one")
    async with AsyncExitStack() as stack:
        model = None
        if config.is_configured:
            model = await stack.enter_async_context(OpenAIProvider(config))
        scripted = None
        offline: EvalModel | None = None
        if answers == "scripted" or ("xai" in names and model is None):
            from xai.eval import EvalModel
            from xai.testing import OpenAIWireServer

            server = await stack.enter_async_context(OpenAIWireServer(keep_requests=False))
            offline = EvalModel()
            server.script.add_responder(offline)
            scripted = await stack.enter_async_context(OpenAIProvider(server.llm_config()))
        embedder = default_embedder()
        aclose = getattr(embedder, "aclose", None)
        if aclose is not None:  # an embeddings endpoint client: ours to close
            stack.push_async_callback(aclose)
        depth = max(*ks, args.context_k)  # the context is drawn from the ranking too
        backends: list[MemoryBackend] = []
        for name in names:
            if name == "null":
                backends.append(NullMemory())
            elif name == "full":
                backends.append(FullContext())
            elif name == "hybrid":
                backends.append(
                    HybridRetrieval(
                        embedder, config=args.retrieval, depth=depth, context_k=args.context_k
                    )
                )
            elif name == "rag":
                backends.append(
                    TurnVectorRAG(
                        out / "stores" / "rag", embedder, depth=depth, context_k=args.context_k
                    )
                )
            else:
                memory_model = model or scripted
                assert memory_model is not None
                backends.append(
                    XaiAgentMemory(
                        out / "stores" / "xai",
                        memory_model,
                        embedder,
                        use_judge=model is not None,
                        depth=depth,
                        context_k=args.context_k,
                        replies=offline if model is None else None,
                    )
                )
        for backend in backends:
            stack.push_async_callback(backend.aclose)
        llm = {"model": model, "scripted": scripted, "none": None}[answers]
        answer_model = {
            "model": config.model,
            "scripted": "scripted (offline, extractive)",
            "none": None,
        }[answers]
        info = RunInfo(
            dataset=args.dataset,
            data=str(args.data.expanduser().resolve()),
            backends=tuple(b.name for b in backends),
            ks=ks,
            context_k=args.context_k,
            answer_model=answer_model,
            judge_model=config.model if args.judge else None,
            memory_model=(
                (config.model if model is not None else "scripted (offline, verbatim extraction)")
                if "xai" in names
                else None
            ),
            embedder=embedder.name,
            started=dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
            xai_version=__version__,
        )
        return await run_eval(
            samples,
            backends,
            info=info,
            out=out,
            llm=llm,
            judge=model if args.judge else None,
            count_tokens=token_counter(embedder),
            concurrency=args.concurrency,
            progress=_Bar(sys.stderr),
        )
