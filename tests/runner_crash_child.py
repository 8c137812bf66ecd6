"""``python -m tests.runner_crash_child INPUT OUTDIR URL``: run ``xai run`` against the parent's
wire server (the parent kills it mid-run)."""

from __future__ import annotations

import os
import sys

from xai.cli import main

if __name__ == "__main__":
    os.environ["LLM_BASE_URL"] = sys.argv[3]
    os.environ["LLM_MODEL"] = "scripted"
    raise SystemExit(main(["run", sys.argv[1], "--outdir", sys.argv[2]]))
