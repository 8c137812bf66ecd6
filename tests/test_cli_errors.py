"""Configuration errors from starting an Agent reach the user of ``xai chat`` as one line
and exit code 2 — also when they come out of a task group, and when another process
holds the Agent's directory."""

from __future__ import annotations

import contextlib
import io
import subprocess
import sys
from pathlib import Path

import anyio
import pexpect
import pytest

import xai.exceptions
from tests.test_demo import ROOT, clean_env
from xai.cli import Renderer, main
from xai.config import EmbeddingConfig
from xai.events import AgentEvent, EventsDropped, SessionFailed
from xai.logs import get_logger
from xai.memory import LongTermMemory, OpenAIEmbedder
from xai.messages import ErrorInfo
from xai.testing import OpenAIWireServer


def chat_env(monkeypatch: pytest.MonkeyPatch, server: OpenAIWireServer) -> None:
    monkeypatch.setenv("LLM_BASE_URL", server.base_url)
    monkeypatch.setenv("LLM_MODEL", "scripted")
    monkeypatch.delenv("EMBEDDING_MODEL", raising=False)


def test_an_agent_that_cannot_start_is_one_line_and_exit_2(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The memory was built with other embeddings: the Agent's start fails inside its task
    group (the error used to escape as an ExceptionGroup traceback)."""
    with OpenAIWireServer() as server:

        async def build() -> None:
            embedder = OpenAIEmbedder(EmbeddingConfig(model="emb", base_url=server.base_url))
            async with LongTermMemory(tmp_path / "memory", embedder=embedder):
                pass
            await embedder.aclose()

        anyio.run(build)
        chat_env(monkeypatch, server)
        assert main(["chat", "--agent-dir", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("xai: the memory at ")


def test_a_malformed_persona_is_one_line_and_exit_2(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "persona.md").write_text("---\nname Iris\n---\n")
    with OpenAIWireServer() as server:
        chat_env(monkeypatch, server)
        assert main(["chat", "--agent-dir", str(tmp_path)]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert str(tmp_path / "persona.md") in line


@pytest.mark.parametrize("name", ["..", "a/b", "."])
def test_agent_names_are_plain_names(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["chat", "--agent", name]) == 2
    assert "--agent" in capsys.readouterr().err


@pytest.mark.skipif(
    not hasattr(xai.exceptions, "AgentLockedError"), reason="needs the Agent directory lock"
)
@pytest.mark.skipif(sys.platform == "win32", reason="needs a POSIX pseudo-terminal")
def test_a_second_chat_on_one_agent_fails_in_one_line(tmp_path: Path) -> None:
    with OpenAIWireServer() as server:
        env = clean_env(
            LLM_BASE_URL=server.base_url, LLM_MODEL="scripted", PROMPT_TOOLKIT_NO_CPR="1"
        )
        first = pexpect.spawn(
            sys.executable,
            ["-m", "xai", "chat", "--agent-dir", str(tmp_path), "--log-level", "error"],
            env=env,
            cwd=str(ROOT),
            encoding="utf-8",
            timeout=60,  # each expect; the first waits for an interpreter to start
        )
        try:
            first.expect("you>")
            second = subprocess.run(
                [sys.executable, "-m", "xai", "chat", "--agent-dir", str(tmp_path)],
                capture_output=True,
                text=True,
                timeout=60,
                env=env,
                cwd=ROOT,
            )
        finally:
            first.sendcontrol("d")
            first.expect(pexpect.EOF)
            first.close()
    assert second.returncode == 2, second.stderr
    (line,) = second.stderr.strip().splitlines()
    assert str(tmp_path) in line and str(first.pid) in line


def test_the_terminal_shows_failures_and_gaps_it_used_to_drop() -> None:
    """The renderer dispatches over every event type (``assert_never`` at the end): a
    Session's failure outside a turn and a gap in the events are shown, not skipped."""
    out = io.StringIO()
    render = Renderer(out, color=False)
    render.agent_event(
        AgentEvent(
            "a1",
            1,
            "s1",
            SessionFailed(
                error=ErrorInfo(type="ServerError", message="503 Service Unavailable"),
                stage="extraction",
            ),
        )
    )
    render.agent_event(AgentEvent("a1", 9, None, EventsDropped(count=7, first_seq=2, last_seq=8)))
    assert out.getvalue().splitlines() == [
        "[extraction failed: 503 Service Unavailable]",
        "[7 event(s) not shown: output fell behind]",
    ]


def test_main_in_a_program_that_swaps_stderr_leaves_logging_working(tmp_path: Path) -> None:
    """Tests (and tools) run ``main`` in-process with stderr captured: once the capture is
    closed, log lines must still have somewhere to go."""
    captured = io.StringIO()
    with contextlib.redirect_stderr(captured):
        assert main(["run", str(tmp_path / "missing.json"), "--outdir", str(tmp_path)]) == 2
    captured.close()
    get_logger("tests").warning("cli.after_capture")  # used to raise: I/O on a closed file
