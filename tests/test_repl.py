"""`xai chat` through a real pseudo-terminal: typing, streaming, Ctrl-C, a wake-up mid-line, exit."""

from __future__ import annotations

import re
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pexpect
import pytest

from tests.test_demo import ROOT, clean_env
from xai.memory._ledger import Ledger
from xai.testing import OpenAIWireServer, Reply, demo_model

_ESCAPES = r"(?:\x1b\[[0-9;?]*[A-Za-z])*"


def shown(text: str) -> str:
    """A pattern for ``text`` as a terminal shows it: escape codes may sit between characters."""
    return _ESCAPES.join(re.escape(c) for c in text)


def long_story(body: Mapping[str, Any]) -> Reply | None:
    last = body["messages"][-1]
    if last.get("content") == "tell me a long story":
        return Reply(text="Once upon a time " * 60, chunk_chars=3, chunk_delay=0.05)
    return None


@pytest.mark.skipif(sys.platform == "win32", reason="needs a POSIX pseudo-terminal")
def test_chat_in_a_terminal(tmp_path: Path) -> None:
    with OpenAIWireServer() as server:
        server.script.add_responder(long_story)
        server.script.add_responder(demo_model)
        env = clean_env(
            LLM_BASE_URL=server.base_url,
            LLM_MODEL="scripted",
            TERM="xterm-256color",
            PROMPT_TOOLKIT_NO_CPR="1",
        )
        child = pexpect.spawn(
            sys.executable,
            ["-m", "xai", "chat", "--agent-dir", str(tmp_path), "--log-level", "error"],
            env=env,
            cwd=str(ROOT),
            encoding="utf-8",
            timeout=30,
            dimensions=(40, 200),
        )
        try:
            child.expect("you>")
            child.sendline("Hi, I'm Ada")
            child.expect(shown("Nice to meet you, Ada!"))  # streamed answer
            child.expect("you>")

            child.sendline("tell me a long story")
            child.expect(shown("Once upon"))
            child.sendcontrol("c")  # cancels the answer, not the REPL
            child.expect(shown("[turn cancelled]"))
            child.expect("you>")

            child.sendline("/wake add in 1 Good morning!")
            child.expect(shown("added w1"))
            child.expect("you>")
            child.send("what is my na")  # typing when the wake-up fires
            child.expect(shown("[wake-up w1]"))
            child.expect(shown("Good morning"))
            child.expect(shown("you> what is my na"))  # the line being typed survived
            child.send("me?\r")
            child.expect(shown("Your name is Ada."))
            child.expect("you>")

            child.sendline("/memory")
            child.expect(shown("The user's name is Ada."))
            child.expect("you>")
            child.sendcontrol("d")  # leave: the conversation is adjudicated first
            child.expect(shown('[remembered from this conversation: "The user\'s name is Ada."]'))
            child.expect(shown("bye."))
            child.expect(pexpect.EOF)
        finally:
            child.close()
        assert child.exitstatus == 0
        asked = [r.body["messages"][-1].get("content") for r in server.chat_requests()]
    assert "what is my name?" in asked
    facts = Ledger.replay(tmp_path / "memory" / "ledger.jsonl").facts.values()
    assert [f.text for f in facts] == ["The user's name is Ada."]
