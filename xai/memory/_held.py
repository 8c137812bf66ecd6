"""Unit vectors held in memory, packed as 16-bit fixed point.

Search needs the vectors of its candidates (a few hundred a query) without a trip
to chromadb: the episodes' corpus and the facts' index hold them in memory. A
component of a unit vector lies in [-1, 1], so it is kept as an ``int16`` of
``round(x * 32767)``: 768 bytes a 384-number vector (77 MB at 100k), an error of at
most 1.5e-5 a component (float16 keeps 11 bits: up to 2.4e-4 near 1), and widened
back to float32 by one SIMD cast (numpy widens float16 element by element: 0.32 ms
for a search's 500 candidates, against 0.02 ms).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

__all__ = ["PACKED", "HeldVectors", "pack", "unpack"]

PACKED = np.int16
_SCALE = 32767.0


def pack(vectors: np.ndarray) -> np.ndarray:
    """Rows of ``vectors`` (any length) as packed unit rows."""
    matrix = np.asarray(vectors, dtype=np.float32)
    unit = matrix / np.clip(np.linalg.norm(matrix, axis=1, keepdims=True), 1e-12, None)
    return np.asarray(np.rint(unit * _SCALE), dtype=PACKED)


def unpack(rows: np.ndarray) -> np.ndarray:
    """Packed rows as float32 unit rows."""
    return np.asarray(rows.astype(np.float32) * np.float32(1 / _SCALE))


class HeldVectors:
    """Unit vectors by id, packed rows of one matrix (freed rows are reused)."""

    def __init__(
        self, capacity: int = 0, *, ids: Sequence[str] = (), rows: np.ndarray | None = None
    ) -> None:
        self._capacity = capacity
        """Rows to make room for at the first write (a whole index read on open)."""
        self._row: dict[str, int] = dict(zip(ids, range(len(ids)), strict=True))
        self._matrix = rows if rows is not None else np.zeros((0, 0), dtype=PACKED)
        self._used = len(self._row)
        self._free: list[int] = []

    def put(self, ids: Sequence[str], vectors: Any) -> None:
        if not len(ids):
            return
        matrix = np.asarray(vectors, dtype=np.float32)
        if self._matrix.shape[1] != matrix.shape[1]:
            if self._row:
                raise ValueError("every vector of an index must have the same length")
            self._matrix = np.zeros((self._capacity, matrix.shape[1]), dtype=PACKED)
        rows = []
        for i in ids:
            row = self._row.get(i)
            if row is None:
                row = self._row[i] = self._take()
            rows.append(row)
        self._matrix[rows] = pack(matrix)

    def _take(self) -> int:
        if self._free:
            return self._free.pop()
        if self._used == len(self._matrix):
            grown = np.zeros((max(64, 2 * self._used), self._matrix.shape[1]), PACKED)
            grown[: self._used] = self._matrix[: self._used]
            self._matrix = grown
        self._used += 1
        return self._used - 1

    @classmethod
    def of(cls, ids: Sequence[str], rows: np.ndarray) -> HeldVectors:
        """Held vectors made of packed ``rows`` (taken, not copied), one per id."""
        if len(rows) != len(ids):
            raise ValueError("one packed row for each id")
        return cls(ids=ids, rows=rows)

    def packed(self) -> tuple[list[str], np.ndarray]:
        """Every id held and its packed row (a copy), in row order."""
        by_row = sorted(self._row.items(), key=lambda item: item[1])
        return [i for i, _ in by_row], self._matrix[[r for _, r in by_row]]

    def __len__(self) -> int:
        return len(self._row)

    def drop(self, ids: Sequence[str]) -> None:
        for i in ids:
            row = self._row.pop(i, None)
            if row is not None:
                self._free.append(row)

    def rows(self, ids: Sequence[str]) -> tuple[list[str], np.ndarray]:
        held = [i for i in ids if i in self._row]
        rows = [self._row[i] for i in held]
        return held, unpack(self._matrix[rows])
