"""examples/otel_tracing.py runs offline and prints the span tree it promises."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.example_helpers import run_example


@pytest.mark.timeout(150)
def test_the_tracing_example_prints_the_span_tree(tmp_path: Path) -> None:
    result = run_example("otel_tracing.py", tmp=tmp_path)
    lines = result.stdout.splitlines()
    names = [line.split("  [")[0] for line in lines if line.strip() and "answer:" not in line]
    assert names == [
        "xai.session.turn",
        "  chat harbour-model",
        "  execute_tool forecast",
        "  execute_tool tides",
        "  execute_tool delegate",
        "    xai.session.turn",
        "      chat harbour-model",
        "  chat harbour-model",
    ], result.stdout
    assert "answer: Light rain, high water at 12:40, and 42 boats out" in result.stdout
