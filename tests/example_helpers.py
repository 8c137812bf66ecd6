"""Run a script in examples/ as a user would, offline, and check it cleans up after itself.

Each run gets a fresh, empty ``TMPDIR`` (``tempfile`` and every library honour it); the
script must exit 0 and leave that folder empty: no ``mkdtemp`` folder left behind, no
stray file from a dependency (onnxruntime's telemetry wrote ``$TMPDIR/.ses``).

The script runs as a process of its own forked from a warm interpreter
(``tests/warm_python.py``: xai and its dependencies imported once for all runs, not once
per script); ``fresh=True`` runs it in a new interpreter instead.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.warm_python import run_python

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"


def offline_env(**extra: str) -> dict[str, str]:
    """The environment without LLM_* / EMBEDDING_* / OPENAI_*, this tree first, plus ``extra``."""
    env = {
        k: v for k, v in os.environ.items() if not k.startswith(("LLM_", "EMBEDDING_", "OPENAI_"))
    }
    return {**env, "PYTHONPATH": str(ROOT), **extra}


def left_behind(folder: Path) -> list[str]:
    """What is in ``folder`` (a run's TMPDIR), recursively, as paths relative to it."""
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


def run_example(
    script: str | Path,
    *args: str,
    tmp: Path,
    stdin: str = "",
    env: dict[str, str] | None = None,
    timeout: float = 180,
    fresh: bool = False,
) -> subprocess.CompletedProcess[str]:
    """``python examples/SCRIPT ARGS`` with ``TMPDIR`` a fresh folder under ``tmp``; asserts it
    exited 0 and left that folder empty. ``fresh``: in a new interpreter, not a warm fork."""
    folder = tmp / "TMPDIR"
    folder.mkdir()
    environ = {**(env or offline_env()), "TMPDIR": str(folder)}
    if fresh:
        done = subprocess.run(
            [sys.executable, str(EXAMPLES / script), *args],
            input=stdin,
            capture_output=True,
            text=True,
            timeout=timeout,
            env=environ,
            cwd=ROOT,
            check=False,
        )
    else:
        done = run_python(
            EXAMPLES / script,
            args,
            stdin=stdin,
            env=environ,
            cwd=ROOT,
            timeout=timeout,
            scratch=tmp / "streams",
        )
    assert done.returncode == 0, done.stderr[-3000:]
    assert not left_behind(folder), f"{script} left {left_behind(folder)} in its TMPDIR"
    return done
