"""CPU to ``import xai``, against a bare interpreter and against ``import openai``.

Each statement runs in a fresh child interpreter (``python -c "..."``); the child's
CPU (user + system) is read with ``resource.getrusage(RUSAGE_CHILDREN)`` before and
after it is waited for, so the figure is that child's alone, start-up included.
The statements alternate for ``--repeats`` rounds and the medians are
compared, so a noisy machine moves all three. Ratios are taken in the same run:

- ``xai_vs_bare_ratio``: ``import xai`` over ``pass`` (what xai adds to start-up);
- ``xai_vs_openai_ratio``: ``import xai`` over ``import openai`` (below 1 means xai
  is cheaper to import than the SDK it talks through, which it loads on first use);
- ``names_*_ratio``: the same for ``from xai import Agent, OpenAIProvider, Session,
  run_agent``, which loads the layers those names live in (still not the SDK).

    python bench/import_time.py                 # 9 rounds
    python bench/import_time.py --repeats 21
    python bench/import_time.py --check         # exit 1 if import xai takes over 0.35 s

The last line of output is one JSON object with the figures.
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
from collections.abc import Sequence

GOAL_SECONDS = 0.35
"""The goal for ``python -c "import xai"``: at most this much CPU, start-up included."""

STATEMENTS: dict[str, str] = {
    "bare": "pass",
    "xai": "import xai",
    "openai": "import openai",
    # What an application really touches: the names load on first use, so this is the cost
    # of the Agent layer (memory brings numpy) without the SDK or chromadb.
    "names": "from xai import Agent, OpenAIProvider, Session, run_agent",
}


def child_cpu(statement: str) -> float:
    """CPU seconds (user + system) of one ``python -c statement`` child."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run([sys.executable, "-c", statement], check=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def measure(repeats: int) -> dict[str, float]:
    """Median CPU seconds per statement over ``repeats`` alternating rounds (after a warm-up
    round, which fills the OS file cache and writes bytecode caches)."""
    samples: dict[str, list[float]] = {name: [] for name in STATEMENTS}
    for round_ in range(repeats + 1):
        for name, statement in STATEMENTS.items():
            seconds = child_cpu(statement)
            if round_:
                samples[name].append(seconds)
    return {name: statistics.median(values) for name, values in samples.items()}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=9, help="rounds of the children")
    parser.add_argument(
        "--check", action="store_true", help=f"exit 1 unless import xai <= {GOAL_SECONDS} s CPU"
    )
    args = parser.parse_args(argv)
    # Children start in this directory, which comes first on their path: from a clone's root
    # they import its xai. Say which one is measured.
    where = subprocess.run(
        [sys.executable, "-c", "import xai; print(xai.__file__)"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    print(f"measuring {where}")
    medians = measure(max(1, args.repeats))
    for name, statement in STATEMENTS.items():
        print(f"{statement!r:>60}: {medians[name] * 1000:7.1f} ms CPU (median of {args.repeats})")
    figures = {
        "repeats": args.repeats,
        "bare_cpu_s": round(medians["bare"], 4),
        "xai_cpu_s": round(medians["xai"], 4),
        "openai_cpu_s": round(medians["openai"], 4),
        "xai_added_cpu_s": round(medians["xai"] - medians["bare"], 4),
        "xai_vs_bare_ratio": round(medians["xai"] / medians["bare"], 2),
        "xai_vs_openai_ratio": round(medians["xai"] / medians["openai"], 2),
        "names_cpu_s": round(medians["names"], 4),
        "names_vs_bare_ratio": round(medians["names"] / medians["bare"], 2),
        "names_vs_openai_ratio": round(medians["names"] / medians["openai"], 2),
        "goal_cpu_s": GOAL_SECONDS,
        "goal_met": medians["xai"] <= GOAL_SECONDS,
    }
    print(json.dumps(figures))
    return 1 if args.check and not figures["goal_met"] else 0


if __name__ == "__main__":
    sys.exit(main())
