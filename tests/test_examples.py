"""The scripts in examples/ run offline, as a user would run them, finish cleanly and leave
nothing in the temporary directory."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.example_helpers import run_example


@pytest.mark.timeout(150)
@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("query_with_tools.py", ["[calling unit_price(", "Twelve mangoes cost 24.00 euros."]),
        (
            "proactive_wakeup.py",
            [
                "memory: promote (judged important)",
                "[Fri 08:00] wake-up 'good-morning' fired (scheduled time)",
                "Good morning! I remember that your chemistry exam is on Friday at 9 am",
            ],
        ),
    ],
)
def test_example_runs_offline(name: str, expected: list[str], tmp_path: Path) -> None:
    result = run_example(name, tmp=tmp_path, timeout=120)
    for line in expected:
        assert line in result.stdout, result.stdout
