"""A snapshot of the indexes' vectors on disk, so a large memory opens without reading chromadb.

Opening a memory reads what its indexes hold: every fact's version and vector and
every episode's vector. At 100,000 facts and 100,000 episodes, chromadb's ``get`` of
them took some 9 s of a 12-14 s open (its conversion holds the GIL, so reading pages
in parallel does not help). The snapshot (``index.snapshot`` in the memory's
directory) keeps the same, as the memory held it when it last closed (or finished a
full read): the facts' ids, versions and packed vectors (``_held.pack``) and the
episodes' ids and packed vectors, in one file.

It is derived data, never trusted blindly:

- **Written whole or not at all**: a temporary file, fsynced, renamed over the old
  one, the directory fsynced. A kill mid-write leaves the old snapshot (or none) and a
  temporary file the next write replaces.
- **Checked on read**: a CRC-32 of the header and of each array; any mismatch, a
  short file, another embedder, store or collection name: no snapshot (a full read).
- **Checked against the truth**: it records the ledger's and the episodes file's
  length and the CRC-32 of those bytes. Those files only grow; if their first bytes
  are no longer what the snapshot saw (rewritten: pruned, erased, restored from a
  backup), that part of the snapshot is not used.
- **Brought up to date, not believed**: every change to the facts' index follows a
  ledger decision that gives the fact a new version, so a fact whose version in the
  replayed ledger differs from the snapshot's, or that is active and not in it, is
  read from chromadb by id; likewise episodes recorded since (or no longer wanted).
  At the end the index's count must equal what the snapshot and those reads add up
  to, or the memory reads the whole index as it did without a snapshot.
"""

from __future__ import annotations

import os
import struct
import zlib
from pathlib import Path

import msgspec
import numpy as np

from xai.logs import get_logger
from xai.memory._held import PACKED
from xai.memory._lexical import TOKENS_VERSION, Terms

__all__ = ["SNAPSHOT_FILE", "FileMark", "IndexSnapshot", "Part", "mark", "read", "write"]

_log = get_logger(__name__)

SNAPSHOT_FILE = "index.snapshot"
_MAGIC = b"XAISNAP1"
_PREFIX = struct.Struct("<8sQI")  # magic, header length, header CRC-32
MIN_ITEMS = 2_000
"""Below this many facts and episodes together, no snapshot is written: reading them
from chromadb takes a few milliseconds."""


class FileMark(msgspec.Struct, frozen=True):
    """The first ``size`` bytes of a file and their CRC-32."""

    size: int
    crc: int


class _Header(msgspec.Struct, frozen=True, kw_only=True):
    format: int = 1
    embedder: str
    where: str
    names: tuple[str, str]
    dimension: int
    ledger: FileMark
    episodes_file: FileMark
    fact_ids: list[str]
    fact_versions: list[int]
    fact_crc: int
    episode_ids: list[str]
    episode_crc: int
    tokens_version: int
    vocabulary: list[str]
    postings: int
    """How many (episode, term) pairs the episodes' terms hold."""
    terms_crc: int


class Part(msgspec.Struct, frozen=True):
    """One index's part of a snapshot: ids, (versions) and packed rows, in one order."""

    ids: list[str]
    rows: np.ndarray
    versions: list[int] | None = None
    terms: Terms | None = None
    """The episodes' BM25 terms (``lexical_text``), one document per id."""


class IndexSnapshot(msgspec.Struct, frozen=True, kw_only=True):
    """What the snapshot holds; a part is ``None`` when its truth was rewritten since."""

    facts: Part | None
    episodes: Part | None


def _bytes(rows: np.ndarray) -> memoryview:
    if not rows.size:  # (memoryview cannot cast a shape with a zero in it)
        return memoryview(b"")
    return memoryview(rows.data).cast("B")


def _crc(rows: np.ndarray) -> int:
    return zlib.crc32(_bytes(rows))


def mark(path: Path, size: int | None = None) -> FileMark:
    """The mark of ``path``'s first ``size`` bytes (all of it by default; an absent file
    is empty). Blocking."""
    crc, read = 0, 0
    try:
        with open(path, "rb") as f:
            while size is None or read < size:
                chunk = f.read(1 << 22 if size is None else min(1 << 22, size - read))
                if not chunk:
                    break
                crc = zlib.crc32(chunk, crc)
                read += len(chunk)
    except FileNotFoundError:
        pass
    return FileMark(read, crc)


def _still(path: Path, seen: FileMark) -> bool:
    """Whether ``path`` still starts with the bytes ``seen`` marked."""
    return mark(path, seen.size) == seen


def read(
    path: Path,
    *,
    embedder: str,
    where: str,
    names: tuple[str, str],
    ledger: Path,
    episodes_file: Path,
) -> IndexSnapshot | None:
    """The snapshot at ``path`` if it is whole and made for this memory, else ``None``.
    Blocking."""
    try:
        with open(path, "rb") as f:
            head = f.read(_PREFIX.size)
            if len(head) < _PREFIX.size:
                return None
            magic, length, crc = _PREFIX.unpack(head)
            encoded = f.read(length)
            if magic != _MAGIC or len(encoded) != length or zlib.crc32(encoded) != crc:
                return _unusable(path, "damaged header")
            header = msgspec.json.decode(encoded, type=_Header)
            if (header.embedder, header.where, tuple(header.names)) != (
                embedder,
                where,
                names,
            ):
                return _unusable(path, "made for another index")
            facts = _rows(f, len(header.fact_ids), header.dimension)
            episodes = _rows(f, len(header.episode_ids), header.dimension)
            offsets = _array(f, len(header.episode_ids) + 1, np.int64)
            codes = _array(f, header.postings, np.int32)
            counts = _array(f, header.postings, np.int32)
            if f.read(1):
                return _unusable(path, "trailing bytes")
    except FileNotFoundError:
        return None
    except (OSError, msgspec.DecodeError, msgspec.ValidationError, ValueError) as exc:
        return _unusable(path, f"{type(exc).__name__}: {exc}")
    if facts is None or episodes is None or offsets is None or codes is None or counts is None:
        return _unusable(path, "short file")
    if _crc(facts) != header.fact_crc or _crc(episodes) != header.episode_crc:
        return _unusable(path, "damaged vectors")
    if zlib.crc32(_bytes(counts), zlib.crc32(_bytes(codes), _crc(offsets))) != header.terms_crc:
        return _unusable(path, "damaged terms")
    terms = None
    if header.tokens_version == TOKENS_VERSION:
        terms = Terms(header.vocabulary, offsets, codes, counts)
    if len(header.fact_versions) != len(header.fact_ids):
        return _unusable(path, "damaged header")
    fact_part = episode_part = None
    if _still(ledger, header.ledger):
        fact_part = Part(header.fact_ids, facts, header.fact_versions)
    else:
        _unusable(path, f"{ledger.name} was rewritten since (facts read from the index)")
    if _still(episodes_file, header.episodes_file):
        episode_part = Part(header.episode_ids, episodes, terms=terms)
    else:
        _unusable(path, f"{episodes_file.name} was rewritten since (episodes read from the index)")
    return IndexSnapshot(facts=fact_part, episodes=episode_part)


def _rows(f: object, count: int, dimension: int) -> np.ndarray | None:
    return _array(f, (count, dimension), PACKED)


def _array(f: object, shape: int | tuple[int, int], dtype: type[np.generic]) -> np.ndarray | None:
    rows = np.empty(shape, dtype=dtype)
    view = _bytes(rows)
    got = f.readinto(view) if view.nbytes else 0  # type: ignore[attr-defined]
    return rows if got == view.nbytes else None


def _unusable(path: Path, why: str) -> IndexSnapshot | None:
    """Not used: damaged (a warning), or made for another state (a note)."""
    if why.startswith(_DAMAGE):
        _log.warning("memory.snapshot_damaged", path=str(path), reason=why)
    else:
        _log.info("memory.snapshot_unused", path=str(path), reason=why)
    return None


_DAMAGE = ("damaged", "short file", "trailing bytes", "OSError", "DecodeError", "Validation")


def write(
    path: Path,
    *,
    embedder: str,
    where: str,
    names: tuple[str, str],
    ledger: FileMark,
    episodes_file: FileMark,
    facts: Part,
    episodes: Part,
    sync: bool = True,
) -> None:
    """Write a snapshot whole (temporary file, fsync, rename, directory fsync): a kill at
    any point leaves the old one or the new one. Blocking."""
    dimension = max(facts.rows.shape[1], episodes.rows.shape[1]) if facts.ids or episodes.ids else 0
    fact_rows = _shaped(facts.rows, dimension)
    episode_rows = _shaped(episodes.rows, dimension)
    terms = episodes.terms
    if terms is None or len(terms) != len(episodes.ids):
        raise ValueError("a snapshot needs the terms of every episode")
    offsets = np.ascontiguousarray(terms.offsets, dtype=np.int64)
    codes = np.ascontiguousarray(terms.codes, dtype=np.int32)
    counts = np.ascontiguousarray(terms.counts, dtype=np.int32)
    header = msgspec.json.encode(
        _Header(
            embedder=embedder,
            where=where,
            names=names,
            dimension=dimension,
            ledger=ledger,
            episodes_file=episodes_file,
            fact_ids=facts.ids,
            fact_versions=list(facts.versions or ()),
            fact_crc=_crc(fact_rows),
            episode_ids=episodes.ids,
            episode_crc=_crc(episode_rows),
            tokens_version=TOKENS_VERSION,
            vocabulary=terms.vocabulary,
            postings=len(codes),
            terms_crc=zlib.crc32(_bytes(counts), zlib.crc32(_bytes(codes), _crc(offsets))),
        )
    )
    temporary = path.with_name(f".{path.name}.tmp")
    try:
        with open(temporary, "wb") as out:
            out.write(_PREFIX.pack(_MAGIC, len(header), zlib.crc32(header)))
            out.write(header)
            out.write(_bytes(fact_rows))
            out.write(_bytes(episode_rows))
            for array in (offsets, codes, counts):
                out.write(_bytes(array))
            out.flush()
            if sync:
                os.fsync(out.fileno())
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
    os.replace(temporary, path)
    if sync and hasattr(os, "O_DIRECTORY"):
        directory = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY)
        try:
            os.fsync(directory)
        finally:
            os.close(directory)


def _shaped(rows: np.ndarray, dimension: int) -> np.ndarray:
    if not len(rows):
        return np.zeros((0, dimension), dtype=PACKED)
    return np.ascontiguousarray(rows, dtype=PACKED)
