"""docs/testing.md's offline chat, as printed: `python -m xai.testing serve --demo` in one
process, `xai chat --agent fern` twice in a terminal against it; the second chat remembers."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pexpect
import pytest

from tests.doc_snippets import ROOT
from tests.example_helpers import offline_env
from tests.mcp_helpers import fixture_command

_ESCAPES = r"(?:\x1b\[[0-9;?]*[A-Za-z])*"


def shown(text: str) -> str:
    """``text`` as a terminal shows it: escape codes may sit between its characters."""
    return _ESCAPES.join(re.escape(c) for c in text)


def chat(env: dict[str, str], said: str, expected: str) -> str:
    """One `xai chat --agent fern`: say one line, wait for ``expected``, leave with /quit;
    returns what the terminal showed from ``expected`` to the next prompt."""
    # (forked warm by the zygote: tests/mcp_helpers.py; the terminal is handed over whole)
    command, *args = fixture_command("-m", "xai", "chat", "--agent", "fern", "--log-level", "error")
    child = pexpect.spawn(
        command,
        args,
        env=env,
        cwd=str(ROOT),
        encoding="utf-8",
        timeout=120,
        dimensions=(40, 240),
    )
    try:
        child.expect("you>")
        child.sendline(said)
        child.expect(shown(expected))
        child.expect("you>")  # the whole answer is in between
        answer = child.before
        child.sendline("/quit")  # the Session closes: its candidates are adjudicated first
        child.expect(pexpect.EOF)
    finally:
        child.close()
    assert child.exitstatus == 0
    return str(answer)


@pytest.mark.skipif(sys.platform == "win32", reason="needs a POSIX pseudo-terminal")
@pytest.mark.timeout(300)
def test_an_offline_chat_against_serve_demo_remembers(tmp_path: Path) -> None:
    server = subprocess.Popen(
        [sys.executable, "-m", "xai.testing", "serve", "--demo"],
        stdout=subprocess.PIPE,
        text=True,
        env=offline_env(),
    )
    try:
        assert server.stdout is not None
        listening = server.stdout.readline()
        assert listening.startswith("listening on "), listening
        env = offline_env(
            LLM_BASE_URL=listening.split()[-1],
            LLM_MODEL="xai-scripted",
            XAI_HOME=str(tmp_path / "home"),
            TERM="xterm-256color",
            PROMPT_TOOLKIT_NO_CPR="1",
        )
        chat(env, "I'm Ada. I grow tomatoes on my balcony in Porto.", "Nice to meet you, Ada!")
        told = chat(env, "What do you remember about me?", "You told me:")
    finally:
        server.terminate()
        server.wait(timeout=30)
        if server.stdout is not None:
            server.stdout.close()
    plain = re.sub(_ESCAPES, "", told)
    # The Session's memory prefix (chosen for the REPL's purpose) holds the name fact.
    assert "The user's name is Ada." in plain, plain
