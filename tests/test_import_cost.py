"""``import xai`` stays cheap: the ``openai`` SDK, chromadb, the embedding runtime and the
test server's web stack load when first needed, not at import.

Each check runs in a fresh interpreter and reads ``sys.modules`` there, so what this
test process has already imported does not count. (The CPU figures are in
``bench/import_time.py``; a test does not time anything.)
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

HEAVY = (
    "openai",
    "httpx2",
    "chromadb",
    "onnxruntime",
    "onnx",
    "tokenizers",
    "numpy",
    "starlette",
    "uvicorn",
    "yaml",
    "prompt_toolkit",
)


def heavy_after(statement: str) -> set[str]:
    """The heavy modules loaded in a fresh interpreter after it ran ``statement``."""
    probe = f"{statement}\nimport json, sys\nprint(json.dumps([m for m in {HEAVY!r} if m in sys.modules]))"
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=50, check=False
    )
    assert done.returncode == 0, done.stderr
    return set(json.loads(done.stdout.splitlines()[-1]))


def test_import_xai_loads_no_heavy_module() -> None:
    assert heavy_after("import xai") == set()


def test_every_front_door_name_loads_without_the_sdk_or_the_stores() -> None:
    # The Agent layer's memory works on numpy arrays; nothing else heavy comes with the names.
    assert heavy_after("from xai import *") <= {"numpy"}


def test_the_sdk_loads_when_a_provider_is_built() -> None:
    statement = (
        "from xai import LLMConfig, OpenAIProvider\n"
        "OpenAIProvider(LLMConfig(model='m', base_url='http://127.0.0.1:9/v1', api_key='k'))"
    )
    assert "openai" in heavy_after(statement)


def test_the_bench_ends_with_its_ratios() -> None:
    # It runs, and its last line is the JSON the README's figures come from (not timed here).
    bench = Path(__file__).parent.parent / "bench" / "import_time.py"
    done = subprocess.run(
        [sys.executable, str(bench), "--repeats", "1"],
        capture_output=True,
        text=True,
        timeout=50,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    figures = json.loads(done.stdout.splitlines()[-1])
    assert {"xai_vs_bare_ratio", "xai_vs_openai_ratio", "names_vs_openai_ratio"} <= set(figures)
    assert all(value > 0 for key, value in figures.items() if key.endswith("_ratio"))
