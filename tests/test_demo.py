"""The README's main job runs offline and shows a whole Query with a tool call."""

from __future__ import annotations

import io
import os
import subprocess
import sys

import pytest

from xai._demo import run_demo
from xai.cli import main

pytestmark = pytest.mark.anyio


async def test_demo_in_process() -> None:
    out = io.StringIO()
    assert await run_demo(env={}, out=out) == 0
    text = out.getvalue()
    assert "SCRIPTED model" in text
    assert "get_weather" in text and "Paris: light rain, 57.2 °F" in text
    assert "done: stop=end_turn rounds=2 requests=2" in text
    assert "assistant: Your name is Ada." in text  # the Session kept the conversation
    assert 'candidates handed to the finalising hook: ["The user\'s name is Ada."]' in text
    assert "header, input, message, turn_end" in text


def test_xai_demo_command() -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LLM_", "EMBEDDING_"))}
    done = subprocess.run(
        [sys.executable, "-m", "xai", "demo"], capture_output=True, text=True, timeout=120, env=env
    )
    assert done.returncode == 0, done.stderr
    assert "Tokyo: clear, 71.6 °F" in done.stdout


def test_cli_without_command_shows_help(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([]) == 2
    assert "demo" in capsys.readouterr().out
