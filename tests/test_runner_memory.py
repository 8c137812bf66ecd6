"""The runner's memory goes through Agents (only an Agent writes memory), works on any
event loop — one ``anyio.run`` after another, asyncio and trio — and closes every
embeddings client it opened."""

from __future__ import annotations

import ast
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

import xai.runner
from xai.agent import Agent
from xai.cli import main as cli_main
from xai.memory import OpenAIEmbedder
from xai.memory._ledger import Ledger
from xai.runner import RunReport, run_batch, run_input, validate_input
from xai.testing import OpenAIWireServer, ScriptedProvider, demo_model

RUNNER = Path(xai.runner.__file__).parent


@pytest.fixture
def server() -> Iterator[OpenAIWireServer]:
    with OpenAIWireServer() as running:
        running.script.add_responder(demo_model)
        yield running


def run(
    server: OpenAIWireServer, data: dict[str, Any], tmp_path: Path, backend: str = "asyncio"
) -> RunReport:
    inp = validate_input({"toolset": "none", **data}, tmp_path)

    async def main() -> RunReport:
        async with server.provider() as provider:
            return await run_input(
                inp, tmp_path / "out" / inp.conversation_id, home=tmp_path, provider=provider
            )

    return anyio.run(main, backend=backend)


def test_runs_on_one_event_loop_after_another_and_on_trio(
    server: OpenAIWireServer, tmp_path: Path
) -> None:
    data = {
        "conversation_id": "intro",
        "user_input": "Hi, I'm Ada!",
        "save_memory": "global",
        "use_global_memory": True,
    }
    for backend in ("asyncio", "asyncio", "trio"):  # module-level locks broke the second
        report = run(server, data, tmp_path, backend)
        assert report.status == "success", report.error
    decisions = Ledger.read_path(tmp_path / "runner" / "memory" / "ledger.jsonl")
    assert [d.kind for d in decisions] == ["add", "reinforce", "reinforce"]
    trace = json.loads((tmp_path / "out" / "intro" / "trace.json").read_text())
    assert trace["memory"]["saved_to"] == "global"
    assert [d["decision"] for d in trace["memory"]["decisions"]] == ["reinforce"]
    # The third run's prompt carried what the first two taught the global memory.
    system = json.loads((tmp_path / "out" / "intro" / "messages.json").read_text())[0]
    assert "The user's name is Ada." in system["content"]


def test_a_conversation_remembers_its_own_earlier_runs(
    server: OpenAIWireServer, tmp_path: Path
) -> None:
    data = {"conversation_id": "c1", "save_memory": "conversation"}
    run(server, {**data, "user_input": "Hi, I'm Grace."}, tmp_path, "trio")
    run(server, {**data, "user_input": "What is my name?"}, tmp_path)
    answer = (tmp_path / "out" / "c1" / "final_answer.md").read_text()
    assert answer.strip() == "Your name is Grace."  # from the memory prefix
    facts = Ledger.replay(tmp_path / "runner" / "conversations" / "c1" / "memory" / "ledger.jsonl")
    assert [f.text for f in facts.facts.values()] == ["The user's name is Grace."]
    assert (tmp_path / "runner" / "conversations" / "c1" / "agent.json").is_file()


def test_a_batch_shares_one_global_agent(server: OpenAIWireServer, tmp_path: Path) -> None:
    names = ["Ada", "Grace", "Alan"]
    inputs = [
        validate_input(
            {
                "conversation_id": f"t{i}",
                "user_input": f"Hi, I'm {name}.",
                "toolset": "none",
                "save_memory": "global",
            },
            tmp_path,
        )
        for i, name in enumerate(names)
    ]

    async def main() -> dict[str, Any]:
        return await run_batch(inputs, tmp_path / "out", concurrency=3, home=tmp_path)

    env = server.llm_config()
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("LLM_BASE_URL", env.base_url or "")
        patch.setenv("LLM_MODEL", env.model or "")
        summary = anyio.run(main, backend="trio")
    assert summary["successes"] == 3, summary
    facts = Ledger.replay(tmp_path / "runner" / "memory" / "ledger.jsonl").facts.values()
    assert sorted(f.text for f in facts) == [f"The user's name is {n}." for n in sorted(names)]


def test_every_embeddings_client_opened_is_closed(
    server: OpenAIWireServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    opened: list[OpenAIEmbedder] = []
    closed: list[OpenAIEmbedder] = []
    init, aclose = OpenAIEmbedder.__init__, OpenAIEmbedder.aclose

    def spy_init(self: OpenAIEmbedder, *args: Any, **kwargs: Any) -> None:
        init(self, *args, **kwargs)
        opened.append(self)

    async def spy_aclose(self: OpenAIEmbedder) -> None:
        closed.append(self)
        await aclose(self)

    monkeypatch.setattr(OpenAIEmbedder, "__init__", spy_init)
    monkeypatch.setattr(OpenAIEmbedder, "aclose", spy_aclose)
    monkeypatch.setenv("EMBEDDING_BASE_URL", server.base_url)
    monkeypatch.setenv("EMBEDDING_MODEL", "scripted-embedder")
    data = {
        "conversation_id": "e1",
        "user_input": "Hi, I'm Ada!",
        "save_memory": "conversation",
        "use_global_memory": True,  # reads the global memory: a second Agent
    }
    assert run(server, data, tmp_path).status == "success"
    assert len(opened) == 2
    assert {id(e) for e in opened} <= {id(e) for e in closed}


def test_the_runner_never_writes_memory_itself() -> None:
    """Rule 7: the runner hands Sessions to Agents; it opens no LongTermMemory and
    adjudicates nothing."""
    for path in RUNNER.glob("*.py"):
        tree = ast.parse(path.read_text())
        names = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
        attributes = {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)}
        assert "LongTermMemory" not in names, path
        assert "adjudicate" not in attributes, path


def test_a_memory_whose_agent_runs_elsewhere_is_refused_clearly(
    server: OpenAIWireServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """One owner per Agent directory: while another Agent holds the global memory, a run
    that saves to it stops with a one-line error naming the directory (exit code 1)."""
    path = tmp_path / "input.json"
    path.write_text(
        json.dumps(
            {
                "conversation_id": "c1",
                "user_input": "Hi, I'm Ada!",
                "toolset": "none",
                "save_memory": "global",
            }
        )
    )

    async def main() -> int:
        async with Agent(tmp_path / "runner", ScriptedProvider([])):
            return await anyio.to_thread.run_sync(
                cli_main, ["run", str(path), "--outdir", str(tmp_path / "out")]
            )

    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("XAI_HOME", str(tmp_path))
        patch.setenv("LLM_BASE_URL", server.base_url)
        patch.setenv("LLM_MODEL", "scripted")
        assert anyio.run(main) == 1
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert "in use by" in line and str(tmp_path / "runner") in line
