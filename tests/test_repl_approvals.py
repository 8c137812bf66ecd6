"""`xai chat --approve` through a real pseudo-terminal: a held call is shown with its
arguments, the prompt comes back, and ``/approve`` and ``/deny`` decide it (the host API's
``ListApprovals`` / ``DecideApproval``, as the page and HTTP do)."""

from __future__ import annotations

import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pexpect
import pytest

from tests.session_helpers import is_side_request
from tests.test_demo import ROOT, clean_env
from tests.test_repl import shown
from xai.testing import OpenAIWireServer, Reply, ScriptedCall, demo_model


def searches(body: Mapping[str, Any]) -> Reply | None:
    """``look up X``: the model searches the memory for X (a call that waits for you)."""
    if is_side_request(body):
        return None
    last = body["messages"][-1]
    if last["role"] == "tool":
        return Reply(text=f"[tool said: {str(last['content'])[:60]}]")
    text = str(last.get("content") or "")
    if text.startswith("look up "):
        query = text.removeprefix("look up ")
        call = ScriptedCall(name="search_memory", id=f"call-{query}", arguments={"query": query})
        return Reply(tool_calls=(call,))
    return None


@pytest.mark.skipif(sys.platform == "win32", reason="needs a POSIX pseudo-terminal")
def test_chat_approves_and_denies_a_held_call(tmp_path: Path) -> None:
    with OpenAIWireServer() as server:
        server.script.add_responder(searches)
        server.script.add_responder(demo_model)
        child = pexpect.spawn(
            sys.executable,
            ["-m", "xai", "chat", "--agent-dir", str(tmp_path), "--log-level", "error",
             "--approve", "search_memory"],
            env=clean_env(
                LLM_BASE_URL=server.base_url,
                LLM_MODEL="scripted",
                TERM="xterm-256color",
                PROMPT_TOOLKIT_NO_CPR="1",
            ),
            cwd=str(ROOT),
            encoding="utf-8",
            timeout=60,
            dimensions=(40, 200),
        )  # fmt: skip
        try:
            child.expect("you>")
            child.sendline("look up bees")
            child.expect(shown("[approval needed] search_memory"))
            child.expect(shown('"query":"bees"'))
            child.expect("you>")  # the prompt is back while the call waits
            child.sendline("/approvals")
            child.expect(shown("call-bees  search_memory"))
            child.expect("you>")
            child.sendline('/approve call-bees {"query": "honey"}')
            child.expect(shown("[call call-bees approved by user]"))
            child.expect(shown("[tool said: [a person approved this call with edited"))
            child.expect("you>")
            child.sendline("look up wasps")
            child.expect(shown("[approval needed] search_memory"))
            child.expect("you>")
            child.sendline("/deny call-wasps not now")
            child.expect(shown("[tool said: [not run: a person denied this tool call: not now]"))
            child.expect("you>")
            child.sendline("/approve call-nope")
            child.expect(shown("error:"))
            child.expect("you>")
            child.sendline("/quit")
            child.expect(pexpect.EOF)
        finally:
            child.close()
        assert child.exitstatus == 0
