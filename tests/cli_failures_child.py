"""``python -m tests.cli_failures_child SECONDS < CASES.json > RESULTS.json``: run many ``xai``
commands as real processes while paying for the interpreter and xai's imports once.

It imports every subcommand's module, then forks one child per case (all at once): each
child is a process of its own with its own environment, stdout/stderr and exit code, and an
error that escapes ``main`` prints its traceback exactly as ``python -m xai`` would. Forking
a start-up that took ~3.5 s per command (measured on the 2-core CI box) is what keeps a
table of ~20 commands under a few seconds of CPU.

A case: ``{"id": str, "argv": [str], "env": {str: str | null}}`` (null removes a variable).
A result: ``{"id": str, "code": int, "stdout": str, "stderr": str}``. A case still running
after SECONDS is killed (its code is -9): a command that should have failed at once and
serves instead must not hang the suite, nor outlive it.
"""

from __future__ import annotations

import importlib
import json
import os
import signal
import sys
import tempfile
import traceback

# Everything a subcommand imports lazily, imported before forking (shared, copy-on-write).
import xai.cli._demo
import xai.cli._eval
import xai.cli._mcp
import xai.cli._rag
import xai.cli._repl
import xai.cli._runner
import xai.cli._serve
import xai.core
import xai.eval
import xai.mcp
import xai.runner
from xai.cli import main

# And what the commands import when they start (the model client, the REPL's terminal, the
# offline embeddings): measured with sys.modules before and after each command.
for _name in (
    "openai",
    "prompt_toolkit.history",
    "prompt_toolkit.patch_stdout",
    "prompt_toolkit.shortcuts",
    "onnxruntime",
    "tokenizers",
):
    importlib.import_module(_name)

MODULES = (  # imported for their side effect: loaded before the fork
    xai.cli._demo,
    xai.cli._eval,
    xai.cli._mcp,
    xai.cli._rag,
    xai.cli._repl,
    xai.cli._runner,
    xai.cli._serve,
    xai.core,
    xai.eval,
    xai.mcp,
    xai.runner,
)


def _child(case: dict[str, object], out: int, err: int) -> None:
    """In the forked process: the case's environment and streams, then ``xai ARGV``."""
    code = 1
    try:
        for name, value in dict(case["env"]).items():  # type: ignore[call-overload]
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        devnull = os.open(os.devnull, os.O_RDONLY)
        os.dup2(devnull, 0)
        os.dup2(out, 1)
        os.dup2(err, 2)
        sys.stdin = open(0, closefd=False)  # noqa: SIM115 - the process's own fd
        try:
            code = main(list(case["argv"]))  # type: ignore[call-overload]
        except SystemExit as stop:
            code = stop.code if isinstance(stop.code, int) else 1
        except BaseException:
            traceback.print_exc()  # what the interpreter prints for an uncaught error
            code = 1
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


def run_all(cases: list[dict[str, object]], seconds: int) -> list[dict[str, object]]:
    with tempfile.TemporaryDirectory() as scratch:
        running: dict[int, tuple[dict[str, object], str, str]] = {}
        for n, case in enumerate(cases):
            out_path, err_path = f"{scratch}/{n}.out", f"{scratch}/{n}.err"
            out = os.open(out_path, os.O_WRONLY | os.O_CREAT)
            err = os.open(err_path, os.O_WRONLY | os.O_CREAT)
            sys.stdout.flush()
            sys.stderr.flush()
            pid = os.fork()
            if pid == 0:
                _child(case, out, err)
            os.close(out)
            os.close(err)
            running[pid] = (case, out_path, err_path)

        def kill_the_rest(_signal: int, _frame: object) -> None:
            for pid in running:
                os.kill(pid, signal.SIGKILL)

        signal.signal(signal.SIGALRM, kill_the_rest)
        signal.alarm(seconds)
        results = []
        while running:
            pid, status = os.wait()  # the event: a child ended
            case, out_path, err_path = running.pop(pid)
            with open(out_path) as out_file, open(err_path) as err_file:
                results.append(
                    {
                        "id": case["id"],
                        "code": os.waitstatus_to_exitcode(status),
                        "stdout": out_file.read(),
                        "stderr": err_file.read(),
                    }
                )
    return results


if __name__ == "__main__":
    json.dump(run_all(json.load(sys.stdin), int(sys.argv[1])), sys.stdout)
