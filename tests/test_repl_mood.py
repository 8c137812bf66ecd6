"""`xai chat`'s ``/mood`` runs the host API's ``GetMood`` (what the web page shows): the
conversation's copy moves with what the user says, and a closed conversation is digested
into the Agent's mood. Through a real pseudo-terminal."""

from __future__ import annotations

import sys
from pathlib import Path

import pexpect
import pytest

from tests.test_repl import chat, shown
from xai.testing import OpenAIWireServer, demo_model


@pytest.mark.skipif(sys.platform == "win32", reason="needs a POSIX pseudo-terminal")
def test_mood_shows_the_conversation_and_the_digests(tmp_path: Path) -> None:
    with OpenAIWireServer() as server:
        server.script.add_responder(demo_model)
        child = chat(tmp_path, server.base_url, timeout=30)
        try:
            child.expect("you>")
            child.sendline("/mood")
            child.expect(shown("user:   valence +0.00  arousal +0.00  (neutral)"))
            child.expect("you>")
            child.sendline("I am so happy today, everything works and it is wonderful!")
            child.expect("you>")
            child.sendline("/mood")
            child.expect(shown("this conversation: user valence +0."))
            child.expect("you>")
            child.sendline("/new")
            child.expect(shown("[new conversation]"))
            child.expect("you>")
            child.sendline("/mood")
            child.expect(shown("user:   valence +0."))  # digested into the Agent's mood
            child.expect(r"session [0-9a-f]+: user valence \+0\.00 -> \+0\.\d\d \(2 deltas\)")
            child.expect("you>")
            child.sendline("/quit")
            child.expect(pexpect.EOF)
        finally:
            child.close()
        assert child.exitstatus == 0
