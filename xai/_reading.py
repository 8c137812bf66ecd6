"""Reading files a user names (inputs, prompts, scenarios, fixtures): capped, regular files
only, and every way one can be bad reported as one ``ConfigurationError`` naming the file.

``/dev/zero``, a FIFO, a 10 GB log, a non-UTF-8 file or JSON nested 100,000 deep each end
in a one-line error instead of a hang, a ``MemoryError`` or a traceback.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

import msgspec

from xai.exceptions import ConfigurationError

__all__ = ["MiB", "decode_json", "decode_yaml", "read_capped", "read_text_capped"]

MiB = 1024 * 1024


def _size(limit: int) -> str:
    return f"{limit // MiB} MiB" if limit % MiB == 0 else f"{limit:,} bytes"


def read_capped(path: Path, limit: int, *, what: str = "the file") -> bytes:
    """The bytes of a regular file of at most ``limit`` bytes.

    Anything else — missing, unreadable, a device, a FIFO, a folder, or bigger than
    ``limit`` — raises ``ConfigurationError`` saying which and why (``what`` names the
    file's role, e.g. "the system prompt")."""
    try:
        info = os.stat(path)  # follows links: a link to /dev/zero is a device
    except OSError as exc:
        raise ConfigurationError(f"{path}: cannot read {what} ({exc.strerror})") from None
    if not stat.S_ISREG(info.st_mode):
        kind = "a folder" if stat.S_ISDIR(info.st_mode) else "not a regular file"
        raise ConfigurationError(f"{path}: {what} is {kind}")
    if info.st_size > limit:
        raise ConfigurationError(f"{path}: {what} is larger than {_size(limit)} (the limit)")
    try:
        with open(path, "rb") as f:
            data = f.read(limit + 1)  # the file may have grown since the stat
    except OSError as exc:
        raise ConfigurationError(f"{path}: cannot read {what} ({exc.strerror})") from None
    if len(data) > limit:
        raise ConfigurationError(f"{path}: {what} is larger than {_size(limit)} (the limit)")
    return data


def _text(data: bytes, path: Path | str, what: str) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigurationError(
            f"{path}: {what} is not UTF-8 text (byte {data[exc.start]:#04x} at offset {exc.start})"
        ) from None


def read_text_capped(path: Path, limit: int, *, what: str = "the file") -> str:
    """``read_capped`` decoded as UTF-8 (a decoding error is a ``ConfigurationError`` too)."""
    return _text(read_capped(path, limit, what=what), path, what)


def decode_json(data: bytes, path: Path | str, *, what: str = "the file") -> Any:
    """Parse JSON; invalid text, bad UTF-8 and nesting too deep to parse are one error."""
    try:
        return msgspec.json.decode(data)
    except msgspec.DecodeError as exc:
        raise ConfigurationError(f"{path}: {what} is not valid JSON ({exc})") from None
    except RecursionError:
        raise ConfigurationError(f"{path}: {what} is nested too deeply to read") from None


def decode_yaml(data: bytes, path: Path | str, *, what: str = "the file") -> Any:
    """Parse YAML (safe loader) with the same guarantees as ``decode_json``."""
    import yaml

    text = _text(data, path, what)
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        detail = " ".join(str(exc).split())
        raise ConfigurationError(f"{path}: {what} is not valid YAML ({detail})") from None
    except RecursionError:
        raise ConfigurationError(f"{path}: {what} is nested too deeply to read") from None
