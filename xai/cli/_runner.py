"""``xai run`` and ``xai batch``."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import anyio

from xai.exceptions import UsageError

__all__ = ["run_command"]


def run_command(args: argparse.Namespace) -> int:
    from xai.cli import EXIT_FAILED, EXIT_OK, EXIT_USAGE, single_error
    from xai.config import default_home
    from xai.runner import InputError, is_batch, load_batch, load_input, run_batch, run_input

    home = default_home()
    outdir = args.outdir.expanduser()
    if args.fixture:  # relative to where the command runs, like any other argument
        args.fixture = str(Path(args.fixture).expanduser().resolve())
    try:
        if args.command == "batch" or is_batch(args.input):
            inputs = load_batch(args.input, fixture=args.fixture)
            summary = anyio.run(
                lambda: run_batch(inputs, outdir, concurrency=args.concurrency, home=home)
            )
            print(f"{summary['successes']}/{summary['total']} tasks succeeded; see {outdir}")
            fatal = [t for t in summary["tasks"] if t.get("fatal")]
            if fatal and len(fatal) == summary["total"]:
                print(f"xai: every task failed to start: {fatal[0]['error']}", file=sys.stderr)
                return EXIT_FAILED
            return EXIT_OK
        inp = load_input(args.input, fixture=args.fixture)
    except InputError as exc:
        print(f"xai: invalid input: {exc}", file=sys.stderr)
        return EXIT_USAGE
    try:
        report = anyio.run(
            lambda: run_input(
                inp,
                outdir,
                resume=args.resume,
                home=home,
                progress=lambda text: print(f"  {text}", file=sys.stderr),
            )
        )
    except Exception as exc:
        cause = single_error(exc)  # from a task group: the one error inside it
        if isinstance(cause, UsageError):  # e.g. no model, a memory another process holds
            print(f"xai: {cause}", file=sys.stderr)
        else:
            print(f"xai: the run failed: {type(cause).__name__}: {cause}", file=sys.stderr)
        return EXIT_FAILED
    print(f"{report.status}: {report.answer[:200]}")
    print(f"artifacts in {outdir} (messages.json, trace.json, final_answer.md, runtime_log.jsonl)")
    return EXIT_OK
