"""``python -m xai.testing serve``: the demo's scripted model as an option (so `xai chat`
against it extracts and remembers), and one clear line when the port is taken."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager

import openai

from xai.session import EXTRACTION_MARKER


@contextmanager
def serving(*args: str) -> Iterator[str]:
    """A ``python -m xai.testing serve`` process; yields its base URL."""
    process = subprocess.Popen(
        [sys.executable, "-m", "xai.testing", "serve", *args],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        assert line.startswith("listening on http://127.0.0.1:"), line
        yield line.split()[-1]
    finally:
        process.terminate()
        assert process.wait(timeout=30) == 0
        if process.stdout is not None:
            process.stdout.close()


def test_demo_option_answers_memory_extraction_as_xai_demo_does() -> None:
    # Without --demo an empty script answers every request with a 500, so a chat against it
    # logged the extraction failure each turn and memory stayed empty (issue 34).
    extraction = f"{EXTRACTION_MARKER}\n[m1] USER: I'm Ada. I grow tomatoes on my balcony."
    with (
        serving("--demo") as base_url,
        openai.OpenAI(base_url=base_url, api_key="k", max_retries=0) as client,
    ):
        done = client.chat.completions.create(
            model="m", messages=[{"role": "user", "content": extraction}]
        )
        found = json.loads(done.choices[0].message.content or "")
        assert [c["text"] for c in found["candidates"]] == [
            "The user's name is Ada.",
            "The user grows tomatoes on their balcony.",
        ]
        hello = client.chat.completions.create(
            model="m", messages=[{"role": "user", "content": "my name is Ada"}]
        )
        assert hello.choices[0].message.content == "Nice to meet you, Ada!"


def test_a_busy_port_fails_with_one_clear_line() -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = subprocess.run(
            [sys.executable, "-m", "xai.testing", "serve", "--port", str(port)],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
    assert done.returncode == 2
    assert done.stdout == ""
    lines = done.stderr.strip().splitlines()
    assert lines == [
        f"error: 127.0.0.1:{port} is already in use "
        "(another server? pick another --port, or --port 0 for a free one)"
    ]
