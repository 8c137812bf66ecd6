"""``python SCRIPT ARGS`` as a process of its own, forked from an interpreter that has
imported xai and its dependencies once (multiprocessing's fork server, preloaded with
``tests.warm_imports``).

A new interpreter pays ~1.5-3 s of CPU to import xai, the openai SDK, numpy, onnxruntime
and chromadb before an example's first line runs; the suite ran ~20 such scripts, and on
the 2-core CI box with two CPU burners that start-up was most of their cost. Forked, each
run is still a process of its own: its own environment (``TMPDIR`` included, which
``tempfile`` reads again), working folder, ``sys.argv``, standard streams (files: what the
script's own children inherit too) and exit code; the script runs as ``__main__``, an
uncaught error prints its traceback as the interpreter would, and at its end the
non-daemon threads are joined and the ``atexit`` functions run, as at an interpreter's exit.
What it does not repeat is the imports (the subject of tests/test_import_cost.py, which
uses fresh interpreters).
"""

from __future__ import annotations

import atexit
import contextlib
import multiprocessing
import os
import runpy
import subprocess
import sys
import tempfile
import threading
import traceback
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

__all__ = ["run_python", "start_module"]

PRELOAD = "tests.warm_imports"


def run_python(
    script: str | Path,
    args: Sequence[str],
    *,
    stdin: str,
    env: Mapping[str, str],
    cwd: str | Path,
    timeout: float,
    scratch: Path,
) -> subprocess.CompletedProcess[str]:
    """Run ``script`` with ``args`` in a forked warm process (``scratch``: a folder for its
    standard streams); like ``subprocess.run(..., capture_output=True, text=True)``."""
    context = multiprocessing.get_context("forkserver")
    # (Takes effect when the fork server starts; the kill campaigns' preloads are in it too.)
    context.set_forkserver_preload([PRELOAD])
    scratch.mkdir(parents=True, exist_ok=True)
    streams = [scratch / name for name in ("stdin", "stdout", "stderr")]
    streams[0].write_text(stdin, encoding="utf-8")
    command = [sys.executable, str(script), *args]
    process = context.Process(
        target=_main,
        args=(("path", str(script)), list(args), dict(env), str(cwd), [str(p) for p in streams]),
    )
    process.start()
    process.join(timeout)
    if process.exitcode is None:
        process.kill()
        process.join()
        raise subprocess.TimeoutExpired(command, timeout)
    out, err = (p.read_text(encoding="utf-8", errors="replace") for p in streams[1:])
    return subprocess.CompletedProcess(command, process.exitcode, out, err)


def start_module(
    module: str, args: Sequence[str], *, env: Mapping[str, str], cwd: str | Path, scratch: Path
) -> Any:
    """Start ``python -m MODULE ARGS`` forked warm and return its ``multiprocessing``
    process (``exitcode``, ``kill()``, ``join()``, ``pid``); its stdin is empty, its stdout
    and stderr are ``scratch/stdout`` and ``scratch/stderr``."""
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload([PRELOAD])
    scratch.mkdir(parents=True, exist_ok=True)
    streams = [scratch / name for name in ("stdin", "stdout", "stderr")]
    streams[0].write_text("", encoding="utf-8")
    process = context.Process(
        target=_main,
        args=(("module", module), list(args), dict(env), str(cwd), [str(p) for p in streams]),
    )
    process.start()
    return process


def _main(
    target: tuple[str, str], args: list[str], env: dict[str, str], cwd: str, streams: list[str]
) -> None:
    """In the forked process: the environment, folder and streams, then the script or module."""
    kind, script = target
    code = 1
    try:
        os.environ.clear()
        os.environ.update(env)
        tempfile.tempdir = None  # read from TMPDIR again
        os.chdir(cwd)
        for fd, path in enumerate(streams):
            flags = os.O_RDONLY if fd == 0 else os.O_WRONLY | os.O_CREAT | os.O_TRUNC
            opened = os.open(path, flags, 0o600)
            os.dup2(opened, fd)
            os.close(opened)
        sys.stdin = open(0, encoding="utf-8", closefd=False)  # noqa: SIM115 - the process's own
        sys.stdout = open(1, "w", encoding="utf-8", closefd=False)  # noqa: SIM115
        sys.stderr = open(2, "w", encoding="utf-8", errors="backslashreplace", closefd=False)  # noqa: SIM115
        if kind == "path":
            sys.argv = [script, *args]
            sys.path.insert(0, str(Path(script).resolve().parent))
        else:  # (-m puts the folder it runs in first)
            sys.argv = [script, *args]
            sys.path.insert(0, cwd)
        code = _run(kind, script)
        for (
            thread
        ) in threading.enumerate():  # as at an interpreter's exit: non-daemons, then atexit
            if thread is not threading.current_thread() and not thread.daemon:
                thread.join()
        atexit._run_exitfuncs()
    except BaseException:
        traceback.print_exc()
        code = 1
    finally:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):  # (nothing left to tell it to)
                stream.flush()
        os._exit(code)


def _run(kind: str, script: str) -> int:
    try:
        if kind == "path":
            runpy.run_path(script, run_name="__main__")
        else:
            runpy.run_module(script, run_name="__main__", alter_sys=True)
    except SystemExit as stop:
        if stop.code is None or isinstance(stop.code, int):
            return stop.code or 0
        print(stop.code, file=sys.stderr)
        return 1
    except BaseException:
        traceback.print_exc()  # what the interpreter prints for an uncaught error
        return 1
    return 0
