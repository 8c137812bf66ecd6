"""Kill -9 tests: run a child module of ``tests`` and SIGKILL it at a chosen point."""

from __future__ import annotations

import os
import shutil
import signal
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from tests.warm_python import start_module

ROOT = Path(__file__).resolve().parent.parent


def kill_when(
    module: str, args: Sequence[str], ready: Callable[[], bool], *, timeout: float = 120
) -> None:
    """Start ``python -m tests.<module> *args`` (a process of its own, forked warm:
    tests/warm_python.py), wait until ``ready()``, then SIGKILL it.

    A child that ends first, or never gets ready, fails the test with its stderr."""
    scratch = Path(tempfile.mkdtemp(prefix="kill-when-"))
    child = start_module(
        f"tests.{module}",
        args,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        cwd=ROOT,
        scratch=scratch,
    )
    try:
        deadline = time.monotonic() + timeout
        while not ready():
            if child.exitcode is not None:
                stderr = (scratch / "stderr").read_text(errors="replace")
                raise AssertionError(f"the child ended early: {stderr[-2000:]}")
            assert time.monotonic() < deadline, "the child never reached the kill point"
            time.sleep(0.01)
        os.kill(child.pid, signal.SIGKILL)
        child.join(timeout=30)
        assert child.exitcode == -signal.SIGKILL
    finally:
        if child.exitcode is None:
            child.kill()
            child.join()
        shutil.rmtree(scratch, ignore_errors=True)
