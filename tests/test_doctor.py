"""``xai doctor DIR``: an offline check of an Agent directory that says what it would
change, changes it only with ``--repair``, and exits non-zero while problems remain."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.test_damaged_state import garble_first_line, lived, lock_is_a_directory
from tests.test_serve import anyio_backend, gateway, open_session, scripted
from xai.agent import Agent
from xai.cli import main
from xai.memory import ScoredFact
from xai.providers import OpenAIProvider
from xai.testing import OpenAIWireServer

__all__ = ["anyio_backend", "scripted"]  # fixtures

pytestmark = pytest.mark.anyio


def doctor(directory: Path, capsys: pytest.CaptureFixture[str], *more: str) -> tuple[int, str]:
    code = main(["doctor", str(directory), *more])
    return code, capsys.readouterr().out


def files(directory: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(directory)): p.read_bytes() for p in directory.rglob("*") if p.is_file()
    }


async def test_a_healthy_directory_has_nothing_to_fix(
    tmp_path: Path,
    scripted: OpenAIWireServer,
    provider: OpenAIProvider,
    capsys: pytest.CaptureFixture[str],
) -> None:
    await lived(tmp_path, provider)
    code, out = doctor(tmp_path / "ada", capsys)
    assert code == 0, out
    assert "ok       memory/ledger.jsonl" in out and out.rstrip().endswith("nothing left to fix")


async def test_torn_tails_are_reported_then_cut_and_the_agent_starts_with_its_facts(
    tmp_path: Path,
    scripted: OpenAIWireServer,
    provider: OpenAIProvider,
    capsys: pytest.CaptureFixture[str],
) -> None:
    session = await lived(tmp_path, provider)
    agent = tmp_path / "ada"
    torn = [
        agent / "memory" / "ledger.jsonl",
        agent / "memory" / "episodes.jsonl",
        agent / "sessions" / session / "journal.jsonl",
    ]
    for path in torn:
        with path.open("ab") as tail:
            tail.write(b'{"seq": 99, "kind": "ad')
    before = files(agent)
    code, out = doctor(agent, capsys)
    assert code == 1 and out.count("--repair would: cut it off") == 3, out
    assert files(agent) == before  # a dry run changes nothing
    code, out = doctor(agent, capsys, "--repair")
    assert code == 0 and out.count("fixed") == 3, out
    assert all(path.read_bytes().endswith(b"}\n") for path in torn)
    assert doctor(agent, capsys)[0] == 0
    async with gateway(tmp_path, provider) as (client, _):
        facts = await client.get("/agents/ada/facts")
    assert facts.status_code == 200 and facts.json(), facts.text


@pytest.mark.parametrize("name", ["ledger.jsonl", "episodes.jsonl"])
async def test_damage_before_the_last_line_is_reported_and_never_guessed_at(
    name: str,
    tmp_path: Path,
    scripted: OpenAIWireServer,
    provider: OpenAIProvider,
    capsys: pytest.CaptureFixture[str],
) -> None:
    await lived(tmp_path, provider)
    agent = tmp_path / "ada"
    garble_first_line(agent / "memory" / name)
    before = files(agent)
    for more in ((), ("--repair",)):
        code, out = doctor(agent, capsys, *more)
        assert code == 1 and f"memory/{name}: damaged at line 1" in out, out
        assert "backup" in out
    assert {k: v for k, v in files(agent).items() if k != "agent.lock"} == {
        k: v for k, v in before.items() if k != "agent.lock"
    }


def test_a_missing_decision_is_reported_beside_a_torn_tail(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ledger = tmp_path / "memory" / "ledger.jsonl"
    ledger.parent.mkdir()
    ledger.write_bytes(b'{"seq":1}\n{"seq":3}\n{"se')
    code, out = doctor(tmp_path, capsys)
    assert code == 1, out
    assert "decision 2 is missing" in out and "backup" in out and "torn last line" in out
    code, out = doctor(tmp_path, capsys, "--repair")
    assert code == 1 and "fixed" in out and "decision 2 is missing" in out, out


async def test_a_lock_that_is_a_directory_and_a_damaged_journal_are_repaired(
    tmp_path: Path,
    scripted: OpenAIWireServer,
    provider: OpenAIProvider,
    capsys: pytest.CaptureFixture[str],
) -> None:
    session = await lived(tmp_path, provider)
    agent = tmp_path / "ada"
    lock_is_a_directory(agent)
    journal = agent / "sessions" / session / "journal.jsonl"
    lines = journal.read_bytes().splitlines(keepends=True)
    journal.write_bytes(lines[0] + b'{"kind":"message","tu\n' + b"".join(lines[1:]))
    code, out = doctor(agent, capsys)
    assert code == 1 and "agent.lock: a directory" in out and "journal.jsonl: damaged" in out
    code, out = doctor(agent, capsys, "--repair")
    assert code == 0, out
    assert (agent / "agent.lock").is_file() or not (agent / "agent.lock").exists()
    assert not journal.exists() and journal.with_name("journal.jsonl.quarantined").exists()
    async with gateway(tmp_path, provider) as (client, _):
        assert await open_session(client, "ada")


async def test_a_damaged_index_is_moved_aside_and_rebuilt_from_the_ledger(
    tmp_path: Path,
    scripted: OpenAIWireServer,
    provider: OpenAIProvider,
    capsys: pytest.CaptureFixture[str],
) -> None:
    async with Agent(tmp_path, provider) as agent:
        session = await agent.open_session("a test")
        await session.send("I grow basil").result()
        await session.close()
        facts = [f.id for f in agent.memory.facts()]
    assert facts
    database = tmp_path / "memory" / "index" / "chroma.sqlite3"
    assert doctor(tmp_path, capsys)[0] == 0
    database.write_bytes(b"this is not a database " * 200)
    code, out = doctor(tmp_path, capsys)
    assert code == 1 and "memory/index/chroma.sqlite3: cannot be read" in out, out
    code, out = doctor(tmp_path, capsys, "--repair")
    assert code == 0, out
    async with Agent(tmp_path, provider) as agent:
        hits = await agent.memory.search("basil", k=3, tiers=("L1", "L2"))
        assert {h.fact.id for h in hits if isinstance(h, ScoredFact)} & set(facts)
    shutil.rmtree(next((tmp_path / "memory").glob("index.set-aside-*")))
    assert doctor(tmp_path, capsys)[0] == 0


async def test_a_running_agent_is_never_repaired_under_it(
    tmp_path: Path,
    scripted: OpenAIWireServer,
    provider: OpenAIProvider,
    capsys: pytest.CaptureFixture[str],
) -> None:
    async with Agent(tmp_path, provider):
        code, out = doctor(tmp_path, capsys)
        assert code == 0 and "held by a running process" in out, out
        assert main(["doctor", str(tmp_path), "--repair"]) == 2
        assert "in use by" in capsys.readouterr().err
