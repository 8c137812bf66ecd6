"""``xai run`` and ``xai batch``."""

from __future__ import annotations

import argparse
import contextlib
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import anyio

if TYPE_CHECKING:
    from xai.runner import RunInput

__all__ = ["run_command"]


def run_command(args: argparse.Namespace) -> int:
    from xai.cli._errors import EXIT_FAILED, EXIT_OK, EXIT_USAGE
    from xai.config import default_home
    from xai.runner import InputError, is_batch, load_batch, load_input, run_batch, run_input

    home = default_home()
    outdir = args.outdir.expanduser()
    if args.fixture:  # relative to where the command runs, like any other argument
        args.fixture = str(Path(args.fixture).expanduser().resolve())
    try:
        if args.command == "batch" or is_batch(args.input):
            inputs = load_batch(args.input, fixture=args.fixture)
            _need_model(inputs)
            with _no_empty_folder(outdir):
                try:
                    summary = anyio.run(
                        lambda: run_batch(inputs, outdir, concurrency=args.concurrency, home=home)
                    )
                except Exception as error:
                    return _failed(error)
            print(f"{summary['successes']}/{summary['total']} tasks succeeded; see {outdir}")
            fatal = [t for t in summary["tasks"] if t.get("fatal")]
            if fatal and len(fatal) == summary["total"]:
                print(f"xai: every task failed to start: {fatal[0]['error']}", file=sys.stderr)
                return EXIT_FAILED
            return EXIT_OK
        inp = load_input(args.input, fixture=args.fixture)
    except InputError as exc:  # a list of problems, one per line
        print(f"xai: invalid input: {exc}", file=sys.stderr)
        return EXIT_USAGE
    _need_model([inp])
    with _no_empty_folder(outdir):
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
        except Exception as error:
            return _failed(error)
    print(f"{report.status}: {report.answer[:200]}")
    print(f"artifacts in {outdir} (messages.json, trace.json, final_answer.md, runtime_log.jsonl)")
    return EXIT_OK


def _need_model(inputs: list[RunInput]) -> None:
    """Fail before anything is written when an input needs a model and none is configured
    (fixture inputs replay recorded answers and need none)."""
    from xai.config import LLMConfig

    if any(inp.execution_mode != "fixture" for inp in inputs):
        LLMConfig.from_env().validated()  # the error main explains like every command's


def _failed(error: Exception) -> int:
    """A problem found once the run started is a failed run, exit code 1 (runner.md): worded
    by ``explain`` like any command's error; what it cannot word goes on to ``main``."""
    from xai.cli._errors import EXIT_FAILED, explain

    explained = explain(error)
    if explained is None:
        raise error
    print(f"xai: {explained.message}", file=sys.stderr)
    return EXIT_FAILED


@contextlib.contextmanager
def _no_empty_folder(outdir: Path) -> Iterator[None]:
    """The output folder is made first (one that cannot be is a setting to fix, exit 2); a
    run that fails leaves no empty folder it made behind (a folder that has artifacts in
    it is kept: they tell what happened)."""
    existed = outdir.exists()
    outdir.mkdir(parents=True, exist_ok=True)
    try:
        yield
    finally:
        if not existed:
            with contextlib.suppress(OSError):  # not empty (artifacts), or gone: keep it
                outdir.rmdir()
