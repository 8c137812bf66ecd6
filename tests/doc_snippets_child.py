"""Run doc snippets one after another in this process: ``python -m tests.doc_snippets_child
WORKDIR < snippets.json`` (a JSON list of ``Snippet``); one JSON ``Ran`` line per snippet
goes to ``WORKDIR/ran.jsonl`` (not stdout: snippets print, and so do their children).

Each snippet runs as ``__main__`` in fresh globals, in a fresh working folder under
WORKDIR, with the environment restored after it; then ``TMPDIR`` must be empty again.
One process for many snippets keeps the interpreter and model start-up to one.
"""

from __future__ import annotations

import contextlib
import io
import os
import sys
import tempfile
import traceback
from pathlib import Path

import msgspec

from tests.doc_snippets import Snippet


class Ran(msgspec.Struct, frozen=True):
    name: str
    error: str | None
    """The traceback's last lines, or None."""
    left: list[str]
    """What the snippet left in TMPDIR (its top level)."""


def run(snippet: Snippet, workdir: Path) -> Ran:
    saved = dict(os.environ)
    error = None
    os.chdir(workdir)
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            exec(compile(snippet.code, snippet.name, "exec"), {"__name__": "__main__"})
    except BaseException:
        error = "".join(traceback.format_exc().splitlines(keepends=True)[-12:])
    finally:
        os.environ.clear()
        os.environ.update(saved)
    tmp = Path(tempfile.gettempdir())
    left = sorted(p.name for p in tmp.iterdir())
    return Ran(snippet.name, error, left)


def main(root: Path) -> None:
    todo = msgspec.json.decode(sys.stdin.buffer.read(), type=list[Snippet])
    root.mkdir(parents=True)
    with (root / "ran.jsonl").open("ab") as results:
        for number, snippet in enumerate(todo):
            workdir = root / str(number)
            workdir.mkdir()
            results.write(msgspec.json.encode(run(snippet, workdir)) + b"\n")
            results.flush()


if __name__ == "__main__":
    main(Path(sys.argv[1]))
