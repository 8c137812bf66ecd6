"""Kill -9 tests: run a child module of ``tests`` and SIGKILL it at a chosen point."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def kill_when(
    module: str, args: Sequence[str], ready: Callable[[], bool], *, timeout: float = 120
) -> None:
    """Start ``python -m tests.<module> *args``, wait until ``ready()``, then SIGKILL it.

    A child that ends first, or never gets ready, fails the test with its stderr."""
    child = subprocess.Popen(
        [sys.executable, "-m", f"tests.{module}", *args],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + timeout
        while not ready():
            if child.poll() is not None:
                assert child.stderr is not None
                raise AssertionError(
                    f"the child ended early: {child.stderr.read().decode()[-2000:]}"
                )
            assert time.monotonic() < deadline, "the child never reached the kill point"
            time.sleep(0.01)
        child.send_signal(signal.SIGKILL)
        assert child.wait(timeout=30) == -signal.SIGKILL
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
        if child.stderr is not None:
            child.stderr.close()
