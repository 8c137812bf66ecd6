"""Run doc snippets one after another in this process: ``python -m tests.doc_snippets_child
WORKDIR < pages.json`` (a JSON list of pages, each ``[TMPDIR, [Snippet, ...]]``); one JSON
``Ran`` line per snippet goes to ``WORKDIR/ran.jsonl`` (not stdout: snippets print, and so
do their children).

Each page's snippets run with ``TMPDIR`` (and ``tempfile``'s folder) set to the page's own
folder, and ``XAI_HOME`` to ``home`` beside it (no page finds another's Agents); each snippet as ``__main__`` in fresh globals, in a fresh working folder under
WORKDIR, with the environment restored after it; then ``TMPDIR`` must be empty again.
One process for every page keeps the interpreter and model start-up to one.
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
    pages = msgspec.json.decode(sys.stdin.buffer.read(), type=list[tuple[str, list[Snippet]]])
    root.mkdir(parents=True)
    number = 0
    with (root / "ran.jsonl").open("ab") as results:
        for tmpdir, todo in pages:
            os.environ["TMPDIR"] = tmpdir
            os.environ["XAI_HOME"] = str(Path(tmpdir).parent / "home")
            tempfile.tempdir = None  # (read again from TMPDIR)
            for snippet in todo:
                workdir = root / str(number)
                number += 1
                workdir.mkdir()
                results.write(msgspec.json.encode(run(snippet, workdir)) + b"\n")
                results.flush()


if __name__ == "__main__":
    main(Path(sys.argv[1]))
