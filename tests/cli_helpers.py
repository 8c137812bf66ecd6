"""Run the ``xai`` command in the test process: no interpreter start-up, no model loaded
twice. ``python -m xai`` itself is run as a program by a few tests only."""

from __future__ import annotations

import os
from pathlib import Path

import msgspec
import pytest

from xai.cli import main


class Ran(msgspec.Struct):
    """What a command did: like ``subprocess.CompletedProcess``."""

    returncode: int
    stdout: str
    stderr: str


def offline(monkeypatch: pytest.MonkeyPatch, **extra: str) -> None:
    """No LLM_* / EMBEDDING_* / OPENAI_* from the outside (offline embeddings), plus ``extra``."""
    for name in list(os.environ):
        if name.startswith(("LLM_", "EMBEDDING_", "OPENAI_")):
            monkeypatch.delenv(name)
    for name, value in extra.items():
        monkeypatch.setenv(name, value)


def run_cli(capsys: pytest.CaptureFixture[str], *args: str | Path) -> Ran:
    """``xai ARGS`` run by ``main`` in this process: its exit code and output."""
    capsys.readouterr()
    code = main([str(a) for a in args])
    captured = capsys.readouterr()
    return Ran(code, captured.out, captured.err)
