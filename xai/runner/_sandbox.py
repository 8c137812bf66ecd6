"""The working folder the file tools are confined to.

Every path a model gives is resolved (symlinks followed) and must stay inside the
root; a symlink loop is an error for that path only (a listing skips it); a file
with hard links is read only if all of its links are inside the root (a link made
inside the root to a file outside it is refused); reads are capped. Errors name
paths relative to the root: the model never sees where the root is on the host.
"""

from __future__ import annotations

import codecs
import functools
import os
import stat
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, ParamSpec, TypeVar

from xai.exceptions import ToolError

__all__ = ["MAX_LINK_SCAN", "MAX_TOOL_FILE_BYTES", "Sandbox"]

MAX_TOOL_FILE_BYTES = 8 * 1024 * 1024
"""The most a tool reads of one file (``read_file`` reads only what it returns)."""
MAX_LINK_SCAN = 100_000
"""Entries looked at to find where a hard-linked file's other links are; past it, refused."""

P = ParamSpec("P")
T = TypeVar("T")


class Sandbox:
    """Resolves model-given paths inside ``root``, refusing anything that escapes it."""

    def __init__(self, root: str | Path) -> None:
        self.root = Path(root).expanduser().resolve(strict=True)
        self._given = str(Path(root).expanduser().absolute())

    # -- paths ------------------------------------------------------------------------

    def resolve(self, relative: str) -> Path:
        if not relative or "\x00" in relative:
            raise ToolError("give a path relative to the working folder")
        try:
            candidate = (self.root / relative).resolve(strict=False)  # follows symlinks
        except (OSError, RuntimeError):  # RuntimeError: a symlink loop (Python < 3.13)
            raise ToolError(f"{relative!r} cannot be resolved (a symlink loop?)") from None
        if not candidate.is_relative_to(self.root):
            raise ToolError(f"{relative!r} is outside the working folder")
        return candidate

    def file(self, relative: str) -> Path:
        """A regular file inside the root whose every hard link is inside it too."""
        path = self.resolve(relative)
        try:
            info = path.stat()
        except OSError:
            raise ToolError(f"no file {relative!r} in the working folder") from None
        if not stat.S_ISREG(info.st_mode):
            raise ToolError(f"{relative!r} is not a regular file")
        if info.st_nlink > 1 and self._links_inside(info) < info.st_nlink:
            raise ToolError(f"{relative!r} has hard links outside the working folder")
        return path

    def _links_inside(self, info: os.stat_result) -> int:
        """How many of the file's links are under the root (counting stops at enough)."""
        found = seen = 0
        for folder, dirs, files in os.walk(self.root):  # does not follow symlinked folders
            for name in (*dirs, *files):
                seen += 1
                if seen > MAX_LINK_SCAN:
                    return found
                try:
                    other = os.lstat(os.path.join(folder, name))
                except OSError:
                    continue
                if (other.st_dev, other.st_ino) == (info.st_dev, info.st_ino):
                    found += 1
                    if found >= info.st_nlink:
                        return found
        return found

    def show(self, path: Path) -> str:
        return path.relative_to(self.root).as_posix()

    def scrub(self, text: str) -> str:
        """``text`` with every mention of where the root is replaced by ``.``."""
        for prefix in sorted({str(self.root), self._given}, key=len, reverse=True):
            text = text.replace(prefix, ".")
        return text

    # -- reading ----------------------------------------------------------------------

    def read_text(self, relative: str, *, max_chars: int | None = None) -> tuple[str, bool]:
        """A UTF-8 file's text and whether it was cut: ``max_chars`` characters at most
        (reading only that much), else the whole file up to ``MAX_TOOL_FILE_BYTES``."""
        path = self.file(relative)
        budget = (
            MAX_TOOL_FILE_BYTES
            if max_chars is None
            else min(4 * max_chars + 4, MAX_TOOL_FILE_BYTES)
        )
        with path.open("rb") as f:
            data = f.read(budget + 1)
        more = len(data) > budget
        if more and max_chars is None:
            limit = MAX_TOOL_FILE_BYTES // (1024 * 1024)
            raise ToolError(f"{relative!r} is larger than {limit} MiB (the tools' limit)")
        decoder = codecs.getincrementaldecoder("utf-8")()
        try:
            text = decoder.decode(data[:budget], final=not more)
        except UnicodeDecodeError:
            raise ToolError(f"{relative!r} is not a UTF-8 text file") from None
        if max_chars is not None and len(text) > max_chars:
            return text[:max_chars], True
        return text, more

    def files(self, pattern: str) -> Iterator[str]:
        """Regular files under the root matching a glob, in order, as relative paths.
        Entries that escape the root, loop, or cannot be looked at are skipped."""
        if not pattern or pattern.startswith("/") or ".." in Path(pattern).parts:
            raise ToolError("the pattern must stay inside the working folder")
        try:
            matches = sorted(self.root.glob(pattern))
        except ValueError as exc:  # a malformed pattern
            raise ToolError(f"not a usable pattern ({exc})") from None
        for item in matches:
            try:
                resolved = item.resolve(strict=True)
                if resolved.is_relative_to(self.root) and resolved.is_file():
                    yield self.show(item)
            except (OSError, RuntimeError):  # a symlink loop, a dangling link, no access
                continue

    def guard(self, function: Callable[P, T]) -> Callable[P, T]:
        """``function`` (a tool) with any failure turned into a ``ToolError`` whose text
        names no host path."""

        @functools.wraps(function)
        def guarded(*args: P.args, **kwargs: P.kwargs) -> T:
            try:
                return function(*args, **kwargs)
            except ToolError as exc:
                raise ToolError(self.scrub(str(exc))) from None
            except (OSError, RuntimeError, ValueError) as exc:
                detail: Any = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
                raise ToolError(self.scrub(f"{type(exc).__name__}: {detail}")) from None

        return guarded
