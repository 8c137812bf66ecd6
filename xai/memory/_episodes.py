"""The Agent's episodes: what was said in its Sessions, turn by turn, kept as evidence.

``episodes.jsonl`` under the memory directory is the truth: append-only, one
episode per line, written (and synced) before ``record`` returns. Episodes are
never changed by adjudication; facts point at them by id.
"""

from __future__ import annotations

import contextlib
import functools
import os
from collections.abc import Container, Iterator, Sequence
from pathlib import Path

import anyio
import msgspec

from xai._files import read_jsonl, scrub_value, space_checked
from xai.messages import Episode

__all__ = ["EPISODES_FILE", "EpisodeStore"]

EPISODES_FILE = "episodes.jsonl"

_encode = msgspec.json.Encoder().encode
_decode = msgspec.json.Decoder(Episode).decode


class EpisodeStore:
    """Episodes by id and by Session, in the order they were said."""

    __slots__ = ("_by_id", "_by_session", "_fd", "_sync", "path")

    def __init__(self, path: Path, episodes: Sequence[Episode] = (), *, sync: bool = True) -> None:
        self.path = path
        self._sync = sync
        self._by_id: dict[str, Episode] = {}
        self._by_session: dict[str, list[Episode]] = {}
        for episode in episodes:
            self._keep(episode)
        self._fd: int | None = None

    @classmethod
    def load(cls, path: Path, *, sync: bool = True) -> EpisodeStore:
        """Read ``path`` (a torn last line is cut off). Blocking: call in a worker thread."""
        episodes = read_jsonl(path, _decode, repair=True, what="episodes") if path.exists() else []
        return cls(path, episodes, sync=sync)

    @classmethod
    async def open(cls, path: Path, *, sync: bool = True) -> EpisodeStore:
        """``load`` in a worker thread."""
        return await anyio.to_thread.run_sync(functools.partial(cls.load, path, sync=sync))

    def _keep(self, episode: Episode) -> bool:
        if episode.id in self._by_id:
            return False
        self._by_id[episode.id] = episode
        self._by_session.setdefault(episode.session_id, []).append(episode)
        return True

    # -- reading -------------------------------------------------------------------

    def get(self, episode_id: str) -> Episode | None:
        return self._by_id.get(episode_id)

    def in_session(self, session_id: str) -> list[Episode]:
        """The Session's episodes in the order they were said."""
        return sorted(self._by_session.get(session_id, ()), key=lambda e: e.seq)

    def sessions(self) -> list[str]:
        return list(self._by_session)

    def __len__(self) -> int:
        return len(self._by_id)

    def __iter__(self) -> Iterator[Episode]:
        return iter(list(self._by_id.values()))

    def __contains__(self, episode_id: object) -> bool:
        return episode_id in self._by_id

    # -- writing -------------------------------------------------------------------

    async def record(self, episodes: Sequence[Episode]) -> list[Episode]:
        """Keep the episodes not known yet (by id); on disk when this returns. Returns them."""
        fresh: list[Episode] = []
        seen: set[str] = set()
        for episode in episodes:
            if episode.id not in self._by_id and episode.id not in seen:
                seen.add(episode.id)
                fresh.append(episode)
        if not fresh:
            return []
        data = b"".join(_encode(e) + b"\n" for e in fresh)
        with anyio.CancelScope(shield=True):  # written means kept: no half-recorded batch
            await anyio.to_thread.run_sync(self._append, data)
        for episode in fresh:
            self._keep(episode)
        return fresh

    def _append(self, data: bytes) -> None:
        if self._fd is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        view = memoryview(data)
        start = os.lseek(self._fd, 0, os.SEEK_END)
        with space_checked(self.path):
            try:
                while view:
                    view = view[os.write(self._fd, view) :]
                if self._sync:
                    os.fsync(self._fd)
            except OSError:
                # A full disk: the batch is cut back off (not recorded: the caller keeps
                # it), so the file stays whole lines and the next append starts clean.
                with contextlib.suppress(OSError):
                    os.ftruncate(self._fd, start)
                raise

    async def prune(self, *, before: float | None = None, keep: int | None = None) -> list[Episode]:
        """Delete the episodes said before ``before`` and, beyond the newest ``keep``, the
        oldest ones (retention settings; adjudication never calls this). The file is
        rewritten (a new file, synced, renamed over the old one): a kill leaves either the
        old file or the new. Returns the episodes deleted."""
        ordered = sorted(self._by_id.values(), key=lambda e: (e.at, e.session_id, e.seq))
        cut = 0
        if before is not None:
            while cut < len(ordered) and ordered[cut].at < before:
                cut += 1
        if keep is not None:
            cut = max(cut, len(ordered) - keep)
        if cut <= 0:
            return []
        gone, kept = ordered[:cut], ordered[cut:]
        kept_ids = {e.id for e in kept}
        lines = b"".join(_encode(e) + b"\n" for e in self if e.id in kept_ids)
        with anyio.CancelScope(shield=True):
            await anyio.to_thread.run_sync(self._replace, lines)
        for episode in gone:
            del self._by_id[episode.id]
            session = self._by_session[episode.session_id]
            session.remove(episode)
            if not session:
                del self._by_session[episode.session_id]
        return gone

    async def scrub(self, needles: Sequence[str], ids: Container[str]) -> list[Episode]:
        """Erase the needles from the episodes ``ids`` (their whole text goes: what they
        said is what is erased) and from every episode that quotes one; the file is
        rewritten as ``prune`` does. Returns the episodes changed, as they now are."""
        changed: list[Episode] = []
        for episode in self._by_id.values():
            if episode.id in ids:
                text = scrub_value(episode.text, [episode.text])
            else:
                text = scrub_value(episode.text, needles)
            if text is not episode.text:
                changed.append(msgspec.structs.replace(episode, text=text))
        if not changed:
            return []
        for episode in changed:
            self._by_id[episode.id] = episode
            session = self._by_session[episode.session_id]
            session[:] = [episode if e.id == episode.id else e for e in session]
        lines = b"".join(_encode(e) + b"\n" for e in self._by_id.values())
        with anyio.CancelScope(shield=True):
            await anyio.to_thread.run_sync(self._replace, lines)
        return changed

    def _replace(self, data: bytes) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
        temporary = self.path.with_name(self.path.name + ".tmp")
        with space_checked(self.path):
            try:
                with open(temporary, "wb") as out:
                    out.write(data)
                    out.flush()
                    if self._sync:
                        os.fsync(out.fileno())
            except OSError:
                temporary.unlink(missing_ok=True)  # the old file stays as it was
                raise
        os.replace(temporary, self.path)
        if self._sync and hasattr(os, "O_DIRECTORY"):
            directory = os.open(self.path.parent, os.O_RDONLY | os.O_DIRECTORY)
            try:
                os.fsync(directory)
            finally:
                os.close(directory)

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
