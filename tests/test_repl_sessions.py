"""`xai chat`'s ``/sessions`` runs the host API's Sessions list (``ListSessions``), the request
the web page lists Sessions with: through a real pseudo-terminal."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pexpect
import pytest

from tests.test_repl import chat, shown
from xai.testing import OpenAIWireServer, demo_model


@pytest.mark.skipif(sys.platform == "win32", reason="needs a POSIX pseudo-terminal")
def test_sessions_lists_the_open_sessions_as_the_host_api_does(tmp_path: Path) -> None:
    with OpenAIWireServer() as server:
        server.script.add_responder(demo_model)
        child = chat(tmp_path, server.base_url, timeout=30)
        try:
            child.expect("you>")
            child.sendline("Hi, I'm Ada")
            child.expect(shown("Nice to meet you, Ada!"))
            child.expect("you>")
            child.sendline("/sessions")
            # The conversation (marked *): its turns, its state and what it is about.
            child.expect(
                shown("* ") + r"([0-9a-f]+)" + shown("  turns=1 state=running  Hi, I'm Ada")
            )
            first = child.match.group(1)
            child.expect("you>")
            child.sendline("/new")
            child.expect(shown("[new conversation]"))
            child.expect("you>")
            child.sendline("/sessions")
            child.expect(shown("turns=0 state=running"))  # the new conversation
            listed = child.before or ""
            child.expect("you>")
            listed += child.before or ""
            assert first not in re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", listed)  # closed: gone
            child.sendline("/quit")
            child.expect(pexpect.EOF)
        finally:
            child.close()
        assert child.exitstatus == 0
