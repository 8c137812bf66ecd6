"""Damaged state files answer a typed error naming the file and what to do (issue 33,
item 5), through the real gateway: never a bare 500 "internal", never a silent 0 facts."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from structlog.testing import capture_logs

from tests.test_serve import anyio_backend, gateway, open_session, read, scripted, turns_done
from xai.exceptions import JournalError, RunError, StateFileError
from xai.providers import OpenAIProvider
from xai.testing import OpenAIWireServer

__all__ = ["anyio_backend", "scripted"]  # fixtures

pytestmark = pytest.mark.anyio


async def lived(root: Path, provider: OpenAIProvider) -> str:
    """Agent ``ada`` under ``root`` with a Session that said something and was closed (so
    it has a ledger, episodes and a journal); the Session's id."""
    async with gateway(root, provider) as (client, _):
        session = await open_session(client, "ada")
        path = f"/agents/ada/sessions/{session}"
        sent = await client.post(path + "/messages", json={"text": "I grow basil"})
        assert sent.status_code == 202, sent.text
        await read(client, path + "/events", turns_done(1))
        closed = await client.delete(path)
        assert closed.status_code == 204, closed.text
    memory = root / "ada" / "memory"
    assert (memory / "ledger.jsonl").stat().st_size and (memory / "episodes.jsonl").stat().st_size
    return session


def garble_first_line(path: Path) -> None:
    """A bad line before good ones: damage, not a torn last write."""
    path.write_bytes(b"{garbled\n" + path.read_bytes())


def lock_is_a_directory(directory: Path) -> Path:
    lock = directory / "agent.lock"
    lock.unlink(missing_ok=True)
    lock.mkdir()
    return lock


DAMAGES: dict[str, tuple[Callable[[Path], object], str]] = {
    "ledger": (lambda d: garble_first_line(d / "memory" / "ledger.jsonl"), "ledger.jsonl"),
    "episodes": (lambda d: garble_first_line(d / "memory" / "episodes.jsonl"), "episodes.jsonl"),
    "lock": (lock_is_a_directory, "agent.lock"),
}


def test_the_errors_are_typed_and_name_the_file() -> None:
    error = JournalError("corrupt record", path="/a/ledger.jsonl", line=3)
    assert isinstance(error, StateFileError) and isinstance(error, RunError)
    assert error.path == "/a/ledger.jsonl" and "/a/ledger.jsonl:3" in str(error)
    assert "xai doctor" in str(error)


@pytest.mark.parametrize("damage", sorted(DAMAGES))
async def test_a_damaged_file_is_a_503_naming_it_and_what_to_do(
    damage: str, tmp_path: Path, scripted: OpenAIWireServer, provider: OpenAIProvider
) -> None:
    await lived(tmp_path, provider)
    do, name = DAMAGES[damage]
    do(tmp_path / "ada")
    async with gateway(tmp_path, provider) as (client, _):
        for response in (
            await client.get("/agents/ada/facts"),
            await client.post("/agents/ada/sessions", json={}),
        ):
            assert response.status_code == 503, response.text
            body = response.json()
            assert body["type"] == "damaged_state"
            assert str(tmp_path / "ada") in body["message"] and name in body["message"]
            assert "xai doctor" in body["message"] or "remove it" in body["message"]
        other = await open_session(client, "bob")  # another Agent is not affected
        assert other


async def test_a_quarantined_sessions_input_names_the_file_it_was_set_aside_as(
    tmp_path: Path, scripted: OpenAIWireServer, provider: OpenAIProvider
) -> None:
    session = await lived(tmp_path, provider)
    sessions = tmp_path / "ada" / "sessions"
    (sessions / "closed.list").unlink()  # scanned again at the next start
    journal = sessions / session / "journal.jsonl"
    lines = journal.read_bytes().splitlines(keepends=True)
    journal.write_bytes(lines[0] + b'{"kind":"message","tu\n' + b"".join(lines[1:]))
    async with gateway(tmp_path, provider) as (client, _):
        sent = await client.post(
            f"/agents/ada/sessions/{session}/messages", json={"text": "still there?"}
        )
    assert sent.status_code == 503, sent.text
    body = sent.json()
    assert body["type"] == "damaged_state" and "journal.jsonl.quarantined" in body["message"]


async def test_a_deleted_ledger_is_said_in_the_log_not_shown_as_no_facts(
    tmp_path: Path, scripted: OpenAIWireServer, provider: OpenAIProvider
) -> None:
    await lived(tmp_path, provider)
    ledger = tmp_path / "ada" / "memory" / "ledger.jsonl"
    ledger.unlink()
    with capture_logs() as logs:
        async with gateway(tmp_path, provider) as (client, _):
            facts = await client.get("/agents/ada/facts")
    missing = [e for e in logs if e["event"] == "memory.ledger_missing"]
    assert missing and missing[0]["path"] == str(ledger), facts.text


async def test_a_damaged_shared_index_names_its_file_and_is_rebuilt_once_set_aside(
    tmp_path: Path, scripted: OpenAIWireServer, provider: OpenAIProvider
) -> None:
    await lived(tmp_path, provider)
    store = tmp_path / ".index"  # the host's one store, shared by its Agents
    (store / "chroma.sqlite3").write_bytes(b"this is not a database " * 200)
    async with gateway(tmp_path, provider) as (client, _):
        opened = await client.post("/agents/ada/sessions", json={"purpose": "basil"})
        assert opened.status_code == 503, opened.text
        body = opened.json()
        assert body["type"] == "damaged_state"
        assert str(store / "chroma.sqlite3") in body["message"] and "aside" in body["message"]
    store.rename(tmp_path / "index-damaged")  # what the message says to do
    async with gateway(tmp_path, provider) as (client, _):
        assert await open_session(client, "ada")
        facts = await client.get("/agents/ada/facts")
        assert facts.status_code == 200 and facts.json(), facts.text
