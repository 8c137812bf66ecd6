"""One process owns an Agent directory at a time: an OS lock on ``agent.lock``.

The lock is ``flock`` on an open file: the kernel releases it when the holder
closes the file or dies (a kill -9 included), so a crash never leaves a stale
lock behind. It belongs to the open file, not to the process, so a second
``Agent`` on the same directory in the same process is refused too. The file
holds the holder's pid, for the error message of whoever is refused.
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

from xai.exceptions import AgentLockedError, StateFileError

__all__ = ["LOCK_FILE", "DirectoryLock"]

LOCK_FILE = "agent.lock"


class DirectoryLock:
    """The exclusive lock of one Agent directory. Blocking calls: use a worker thread."""

    __slots__ = ("_fd", "directory")

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self._fd: int | None = None

    @property
    def held(self) -> bool:
        return self._fd is not None

    def acquire(self) -> None:
        """Take the lock now or raise ``AgentLockedError`` naming the holder's pid."""
        if self._fd is not None:
            return
        self.directory.mkdir(parents=True, exist_ok=True)
        path = self.directory / LOCK_FILE
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        except (IsADirectoryError, NotADirectoryError, PermissionError) as exc:
            raise StateFileError(
                f"{path} cannot be the Agent's lock file ({exc.strerror})",
                path=str(path),
                advice="remove it or make it a writable file (`xai doctor DIR --repair` "
                "removes an empty directory in its place)",
            ) from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            pid = _holder(fd)
            os.close(fd)
            raise AgentLockedError(str(self.directory), pid) from None
        except BaseException:
            os.close(fd)
            raise
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        self._fd = fd

    def release(self) -> None:
        if self._fd is not None:
            fd, self._fd = self._fd, None
            try:
                os.ftruncate(fd, 0)  # while still held: the next holder writes its own pid
            finally:
                os.close(fd)  # releases the lock


def _holder(fd: int) -> int | None:
    """The pid the holder wrote (``None`` if it has not yet, or the file is not ours)."""
    try:
        text = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None
