"""Erasing a fact (``forget(scope="erase")``): its text leaves every store of the memory.

The fact is forgotten with one ``forget`` decision whose fact carries, in place of its
text, the text's SHA-256 (``erased_mark``); then the text of the fact and of its
evidence episodes (the *needles*) is scrubbed from what the memory keeps on disk:

- ``ledger.jsonl`` is rewritten with every string that held a needle scrubbed (older
  versions of the fact, the candidates it came from, reasons that quoted it); the
  decisions stay, so the ledger replays to the same facts, the erased one as its hash;
- ``episodes.jsonl``: the evidence episodes and any episode quoting a needle are rewritten
  with the needle scrubbed, and leave the episodes' index (the evidence ones for good,
  the others are indexed again as scrubbed);
- the vector index: the fact and the episodes are deleted from their collections; for an
  embedded chromadb, its sqlite file is scrubbed too (chromadb keeps every write in its
  ``embeddings_queue``, document included, after the record is deleted) and vacuumed, so
  no freed page keeps the text. A Chroma server's files are out of reach: its log keeps
  what was written until the server purges it (docs/memory.md).

The needles are returned to the caller (an Agent scrubs its Sessions' files with them)
and kept nowhere.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
from collections.abc import Sequence
from pathlib import Path

import anyio
import msgspec

from xai._files import QUOTED_LENGTH, erased_mark, scrub_file, scrub_value
from xai.exceptions import FactForgottenError, FactNotFoundError
from xai.logs import get_logger
from xai.memory._episode_index import EpisodeIndex
from xai.memory._episodes import EpisodeStore
from xai.memory._types import Decision
from xai.memory._writer import FactStore

__all__ = ["Erasure", "erase_fact", "erased_here", "scrub_index_files", "scrub_sqlite"]

_log = get_logger(__name__)


class Erasure(msgspec.Struct, frozen=True, kw_only=True):
    """An erasure done: the decision (with the hash, not the text) and the texts erased
    (to scrub other stores with; never written anywhere)."""

    decision: Decision
    needles: tuple[str, ...]
    episodes: tuple[str, ...] = ()
    """The ids of the episodes scrubbed."""


async def erase_fact(
    store: FactStore,
    episodes: EpisodeStore,
    episode_index: EpisodeIndex | None,
    index_path: Path | None,
    fact_id: str,
    reason: str,
) -> Erasure:
    """Forget ``fact_id`` and scrub its text and its evidence's from the memory's files."""
    lock = store.require_lock()
    await store.ensure_index()
    async with lock:
        async with store.batch():
            fact = store.state.facts.get(fact_id)
            if fact is None:
                raise FactNotFoundError(fact_id)
            if fact.forget_scope == "erase":
                raise FactForgottenError(fact_id)
            said = [e for e in (episodes.get(i) for i in fact.evidence) if e is not None]
            needles = tuple(dict.fromkeys(t for t in (fact.text, *(e.text for e in said)) if t))
            gone = msgspec.structs.replace(
                fact,
                text=erased_mark(fact.text),
                status="forgotten",
                forget_scope="erase",
                version=fact.version + 1,
            )
            decision = await store.write("forget", reason, (gone,))
        ledger = store.ledger
        if ledger is not None:
            ledger.release()  # the file is replaced: the next append opens the new one
        await anyio.to_thread.run_sync(scrub_file, store.path, needles)
        for other in list(store.state.facts.values()):
            text = scrub_value(other.text, needles)
            if text is not other.text:
                store.state.facts[other.id] = msgspec.structs.replace(other, text=text)
                if store.lexical is not None and other.status == "active":
                    store.lexical.set(other.id, text)
        store.version += 1
        scrubbed = await episodes.scrub(needles, set(fact.evidence))
        if episode_index is not None and scrubbed:
            await episode_index.remove([e.id for e in scrubbed])
            episode_index.add([e for e in scrubbed if e.id not in fact.evidence])
            await episode_index.flush()
    if index_path is not None:
        await anyio.to_thread.run_sync(scrub_sqlite, index_path / "chroma.sqlite3", needles)
        await anyio.to_thread.run_sync(scrub_index_files, index_path, needles)
    _log.info("memory.erased", fact_id=fact_id, episodes=len(scrubbed))
    return Erasure(decision=decision, needles=needles, episodes=tuple(e.id for e in scrubbed))


def scrub_sqlite(path: Path, needles: Sequence[str]) -> None:
    """Scrub the needles from every text value of an embedded chromadb's sqlite file
    (deleted records linger in its write log), then vacuum it and truncate its WAL so no
    freed page or old frame keeps them. Blocking."""
    if not path.exists():
        return
    connection = sqlite3.connect(path, timeout=60.0)
    try:
        tables = [
            name
            for (name,) in connection.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' AND sql NOT LIKE "
                "'%VIRTUAL TABLE%' AND name NOT LIKE 'embedding_fulltext_search_%'"
            )
        ]
        variants = {v: erased_mark(n) for n in needles for v in _written(n)}
        for table in tables:
            try:
                _scrub_table(connection, table, variants)
            except sqlite3.OperationalError as exc:  # a table without rowid: not chromadb's
                _log.warning("memory.erase_table_skipped", table=table, error=str(exc))
        connection.commit()
        with contextlib.suppress(sqlite3.OperationalError):  # the FTS index, if any
            connection.execute(
                "INSERT INTO embedding_fulltext_search(embedding_fulltext_search) "
                "VALUES('optimize')"
            )
            connection.commit()
        connection.execute("VACUUM")
        connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        connection.close()


def _written(needle: str) -> list[str]:
    """The needle as a JSON writer may have put it in a text column: as it is, escaped,
    escaped to ASCII."""
    import json

    forms = [needle, msgspec.json.encode(needle).decode()[1:-1], json.dumps(needle)[1:-1]]
    return list(dict.fromkeys(f for f in forms if f))


def _scrub_table(connection: sqlite3.Connection, table: str, variants: dict[str, str]) -> None:
    columns = [
        row[1]
        for row in connection.execute(f'PRAGMA table_info("{table}")')
        if row[2].upper() in ("TEXT", "", "BLOB", "STRING", "VARCHAR")
    ]
    for column in columns:
        for variant in variants:
            if len(variant) < QUOTED_LENGTH:
                continue  # a short text is not looked for inside others
            rows = connection.execute(
                f'SELECT rowid, "{column}" FROM "{table}" WHERE '
                f'instr(CAST("{column}" AS TEXT), ?) > 0',
                (variant,),
            ).fetchall()
            for rowid, value in rows:
                text = value.decode() if isinstance(value, bytes) else str(value)
                for form, mark in variants.items():
                    if len(form) >= QUOTED_LENGTH:
                        text = text.replace(form, mark)
                stored = text.encode() if isinstance(value, bytes) else text
                connection.execute(
                    f'UPDATE "{table}" SET "{column}" = ? WHERE rowid = ?', (stored, rowid)
                )


def scrub_index_files(path: Path, needles: Sequence[str]) -> int:
    """Overwrite the needles with zero bytes in chromadb's binary index files under
    ``path`` (its HNSW segments write their whole capacity, and the unused part is
    whatever the process's heap held, the erased text included). Same length, so the
    files keep their layout; a needle this long never matches a vector's bytes. Returns
    how many files changed. Blocking."""
    wanted = [n.encode() for n in needles if len(n) >= QUOTED_LENGTH]
    changed = 0
    if not wanted or not path.is_dir():
        return 0
    for file in path.rglob("*.bin"):
        data = file.read_bytes()
        scrubbed = data
        for needle in wanted:
            scrubbed = scrubbed.replace(needle, bytes(len(needle)))
        if scrubbed != data:
            with open(file, "r+b") as f:
                f.write(scrubbed)
                f.flush()
                os.fsync(f.fileno())
            changed += 1
    return changed


_ERASED: dict[Path, set[str]] = {}
"""The texts erased in this process, per chromadb directory: any later write of its
binary files here may hold them in heap leftovers, so every close of a memory on that
directory scrubs them again. (Held in RAM only, where the process held them anyway.)"""


def erased_here(index_path: Path, needles: Sequence[str] = ()) -> tuple[str, ...]:
    """Note ``needles`` as erased from ``index_path`` in this process; all noted so far."""
    noted = _ERASED.setdefault(index_path.resolve(), set())
    noted.update(needles)
    return tuple(noted)
