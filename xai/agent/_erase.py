"""Erasing a fact from everything an Agent keeps (``Agent.forget(scope="erase")``).

The memory erases the fact from its own files (``xai.memory._erase``: the ledger, the
episodes, the index and chromadb's sqlite) and hands back the texts it erased; here those
texts are scrubbed from every other file under the Agent's directory that holds one: the
journals and totals of closed Sessions, the streams' event logs, and any other JSON or
JSON-lines file (a snapshot, schedules). A file that is neither and still holds the text
is named in a ``memory.erase_left`` warning (nothing here can rewrite it safely), and so
is an open Session's journal: its writer is live, so it is left alone (close the Sessions
that heard the text before erasing it).
"""

from __future__ import annotations

import json
from collections.abc import Collection, Sequence
from pathlib import Path

import anyio
import msgspec

from xai._files import scrub_file
from xai.agent._eventlog import STREAMS_DIR
from xai.logs import get_logger
from xai.memory import Decision, LongTermMemory

__all__ = ["erase_everywhere", "holding"]

_log = get_logger(__name__)

_TEXT_FILES = (".json", ".jsonl", ".quarantined")


def _forms(needle: str) -> list[bytes]:
    """How a needle may be written in a file: as it is, JSON-escaped, escaped to ASCII."""
    forms = [
        needle.encode(),
        msgspec.json.encode(needle)[1:-1],
        json.dumps(needle)[1:-1].encode(),
    ]
    return list(dict.fromkeys(f for f in forms if f))


def holding(directory: Path, needles: Sequence[str]) -> list[Path]:
    """Every file under ``directory`` whose bytes hold one of the needles (binary files
    too). Blocking."""
    forms = [f for n in needles for f in _forms(n)]
    found: list[Path] = []
    for path in sorted(directory.rglob("*")):
        if path.is_file() and not path.is_symlink():
            try:
                data = path.read_bytes()
            except OSError:
                continue
            if any(f in data for f in forms):
                found.append(path)
    return found


def _scrub_tree(directory: Path, needles: Sequence[str], live: Collection[str]) -> list[Path]:
    """Scrub the needles from the JSON files under ``directory`` but the memory's index and
    the live Sessions' files; the files still holding one afterwards. Blocking."""
    index = directory / "memory" / "index"
    left: list[Path] = []
    for path in holding(directory, needles):
        if index in path.parents:
            left.append(path)  # scrubbed by the memory already, if it could be
            continue
        session = path.parent.name if path.parent.parent.name == "sessions" else None
        stream = path.stem if path.parent.name == STREAMS_DIR else None
        if (session or stream) in live:
            left.append(path)
            continue
        if path.name.endswith(_TEXT_FILES):
            scrub_file(path, needles)
    left.extend(p for p in holding(directory, needles) if p not in left)
    return left


async def erase_everywhere(
    memory: LongTermMemory, directory: Path, live: Collection[str], fact_id: str, reason: str
) -> Decision:
    """Erase the fact from the memory, then its text from every file of the Agent at
    ``directory`` (``live``: the ids of the Sessions still open, whose files are left)."""
    erasure = await memory.erase(fact_id, reason)
    left = await anyio.to_thread.run_sync(_scrub_tree, directory, erasure.needles, live)
    if left:
        _log.warning(
            "memory.erase_left",
            fact_id=fact_id,
            files=[str(p.relative_to(directory)) for p in left],
            advice="an open Session's files are not rewritten under its writer",
        )
    return erasure.decision
