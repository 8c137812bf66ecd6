"""Every ``xai`` subcommand, run where it cannot work — a directory that cannot be created, a
port another program holds, no model configured — ends with exit code 2 and ONE ``xai: ...``
line naming what to fix: no traceback, and no "listening at" from a server that is not.

The table runs as real processes, forked from one interpreter that imported xai once
(``tests/cli_failures_child.py``): about 3.5 s of start-up per command saved, ~20 times.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from typing import Any

import msgspec
import pytest

from tests.test_demo import ROOT, clean_env
from tests.test_eval import LOCOMO

pytestmark = pytest.mark.timeout(180)  # the table runs in the first test's setup

# Why no-model cases list only some commands: demo, serve, mcp serve, eval (scripted
# answers) and ingest (local embeddings) work offline by design, so a missing model is not
# an error for them (test_demo / test_serve / test_mcp_serve / test_eval run them so).


class Case(msgspec.Struct, frozen=True):
    id: str
    argv: tuple[str, ...]  # {bad} {port} {tmp} {input} {batch} {scenario} {locomo} {doc}
    setting: str  # "bad-dir", "busy-port" or "no-model": what is wrong
    model: bool = True  # LLM_* point at a (never reached) local endpoint


CASES = (
    Case("demo", ("demo", "--agent-dir", "{bad}"), "bad-dir"),
    Case("chat", ("chat", "--agent-dir", "{bad}"), "bad-dir"),
    Case("serve", ("serve", "--root", "{bad}", "--port", "0"), "bad-dir"),
    Case("serve-default-root", ("serve", "--port", "0"), "bad-dir"),  # under XAI_HOME
    Case("mcp-http", ("mcp", "serve", "--agent-dir", "{bad}", "--http", "127.0.0.1:0"), "bad-dir"),
    Case("mcp-stdio", ("mcp", "serve", "--agent-dir", "{bad}"), "bad-dir"),
    Case("ingest", ("ingest", "--scenario", "s", "--knowledge-dir", "{bad}", "{doc}"), "bad-dir"),
    Case("ask", ("ask", "--scenario", "{scenario}", "--knowledge-dir", "{bad}", "hi"), "bad-dir"),
    Case("run", ("run", "{input}", "--outdir", "{bad}"), "bad-dir"),
    Case("batch", ("batch", "{batch}", "--outdir", "{bad}"), "bad-dir"),
    Case(
        "eval",
        ("eval", "locomo", "--data", "{locomo}", "--out", "{bad}", "--backend", "null"),
        "bad-dir",
    ),
    Case("serve-busy", ("serve", "--root", "{tmp}/serve", "--port", "{port}"), "busy-port"),
    Case(
        "mcp-busy",
        ("mcp", "serve", "--agent-dir", "{tmp}/mcp", "--http", "127.0.0.1:{port}"),
        "busy-port",
    ),
    Case("chat-no-model", ("chat", "--agent-dir", "{tmp}/chat"), "no-model", model=False),
    Case("run-no-model", ("run", "{input}", "--outdir", "{tmp}/run"), "no-model", model=False),
    Case(
        "batch-no-model", ("batch", "{batch}", "--outdir", "{tmp}/batch"), "no-model", model=False
    ),
    Case("ask-no-model", ("ask", "--scenario", "{scenario}", "hi"), "no-model", model=False),
    Case(
        "eval-no-model",
        ("eval", "locomo", "--data", "{locomo}", "--out", "{tmp}/eval", "--answers", "model"),
        "no-model",
        model=False,
    ),
)


@pytest.fixture(scope="module")
def ran(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    tmp = tmp_path_factory.mktemp("cli-failures")
    a_file = tmp / "a-file"
    a_file.write_text("a file where a directory is wanted\n")
    (tmp / "in.json").write_text(json.dumps({"conversation_id": "c1", "user_input": "hi"}))
    (tmp / "batch.json").write_text(
        json.dumps({"tasks": [{"conversation_id": "c1", "user_input": "hi"}]})
    )
    (tmp / "scenario.yaml").write_text(
        "scenario_id: s\ninstructions: help\nrag:\n  enabled: true\n"
    )
    (tmp / "locomo.json").write_text(json.dumps(LOCOMO))
    (tmp / "doc.md").write_text("# A document\n\nSome text.\n")
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        names = {
            "bad": str(a_file / "dir"),
            "port": str(port),
            "tmp": str(tmp),
            "input": str(tmp / "in.json"),
            "batch": str(tmp / "batch.json"),
            "scenario": str(tmp / "scenario.yaml"),
            "locomo": str(tmp / "locomo.json"),
            "doc": str(tmp / "doc.md"),
        }
        cases = []
        for case in CASES:
            home = a_file / "home" if case.setting == "bad-dir" else tmp / "home"
            env: dict[str, str | None] = {"XAI_HOME": str(home)}
            if case.model:
                env |= {"LLM_BASE_URL": "http://127.0.0.1:9/v1", "LLM_MODEL": "scripted"}
            else:
                env |= {"LLM_BASE_URL": None, "LLM_MODEL": None, "LLM_API_KEY": None}
            argv = [arg.format(**names) for arg in case.argv]
            cases.append({"id": case.id, "argv": argv, "env": env})
        # The whole table took 5 s at load 4 and 10 s at load 9.7 on 2 cores (--durations):
        # ~20 s at load 20. 120 s before the child kills what still runs is 5x that and
        # more; a killed case fails its test below with its output.
        done = subprocess.run(
            [sys.executable, "-m", "tests.cli_failures_child", "120"],
            input=json.dumps(cases),
            capture_output=True,
            text=True,
            env=clean_env(),
            cwd=ROOT,
            timeout=150,
        )
    assert done.returncode == 0, done.stderr
    results = {r["id"]: r for r in json.loads(done.stdout)}
    return {"results": results, "a_file": a_file, "port": port, "tmp": tmp}


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_a_command_that_cannot_work_says_what_to_fix_in_one_line(
    case: Case, ran: dict[str, Any]
) -> None:
    result = ran["results"][case.id]
    stderr: str = result["stderr"]
    assert "Traceback" not in stderr, stderr
    lines = [line for line in stderr.splitlines() if line.startswith("xai: ")]
    assert len(lines) == 1, stderr
    (line,) = lines
    assert result["code"] == 2, stderr
    assert "listening" not in stderr  # nothing serves
    if case.setting == "bad-dir":
        assert f"{ran['a_file']} is a file, not a directory" in line
    elif case.setting == "busy-port":
        assert f"127.0.0.1:{ran['port']} is in use" in line
        assert ("--port" if case.argv[0] == "serve" else "--http") in line
    else:
        assert all(name in line for name in ("LLM_BASE_URL", "LLM_MODEL", "LLM_API_KEY")), line
        assert line.startswith("xai: no model configured")


def test_a_run_without_a_model_leaves_no_output_folder(ran: dict[str, Any]) -> None:
    assert ran["results"]["run-no-model"]["code"] == 2
    assert not (ran["tmp"] / "run").exists()
    assert not (ran["tmp"] / "batch").exists()
