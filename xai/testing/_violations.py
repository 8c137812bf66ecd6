"""Where the test doubles report the invalid requests they received, so a test can fail on them.

A double may be created anywhere: in the test, deep inside the code under
test, or in a child process the test started (a CLI run, a ``python -m
xai.testing serve`` server). So reports do not travel through the double's
owner but through one channel per process:

- in the process that collects (the pytest process, once the plugin called
  ``start_collecting``), reports are kept in memory until ``drain``;
- in any other process whose environment names a report directory
  (``XAI_TESTING_VIOLATIONS_DIR``, set by the plugin and inherited by children),
  each report is appended as one JSON line to ``<dir>/<pid>.jsonl``;
  ``drain`` in the collecting process reads what was added since it last looked.

A report written by a child that is killed right after is not lost: one
``write`` of an ``O_APPEND`` file is in the kernel once it returns.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

import msgspec

from xai.testing._validate import Violation, check_chat_request, outline

__all__ = [
    "ENV_VAR",
    "InvalidRequest",
    "drain",
    "report",
    "screen",
    "start_collecting",
    "stop_collecting",
]

ENV_VAR = "XAI_TESTING_VIOLATIONS_DIR"


class InvalidRequest(msgspec.Struct, frozen=True, kw_only=True):
    """A request a double refused: who got it, the roles it carried, the rules it broke."""

    double: str
    outline: str
    violations: tuple[Violation, ...]
    pid: int = msgspec.field(default_factory=os.getpid)

    def describe(self) -> str:
        lines = [f"{self.double} (pid {self.pid}) got an invalid request: {self.outline}"]
        lines.extend(f"  - {violation}" for violation in self.violations)
        return "\n".join(lines)

    def error_message(self) -> str:
        """What the double answers, like a real endpoint's 400."""
        rules = "; ".join(str(violation) for violation in self.violations)
        return f"Invalid request (checked by xai.testing): {rules}"


_decode = msgspec.json.Decoder(InvalidRequest).decode


class _Collector:
    """The per-process channel. One instance, module-level: a double created anywhere in a
    test must reach the plugin without being handed to it."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._collecting = False
        self._kept: list[InvalidRequest] = []
        self._offsets: dict[Path, int] = {}

    def start(self) -> None:
        with self._lock:
            self._collecting = True

    def stop(self) -> None:
        with self._lock:
            self._collecting = False
            self._kept.clear()
            self._offsets.clear()

    def report(self, invalid: InvalidRequest) -> None:
        with self._lock:
            if self._collecting:
                self._kept.append(invalid)
                return
        directory = os.environ.get(ENV_VAR)
        if not directory:
            return
        line = msgspec.json.encode(invalid) + b"\n"
        try:
            fd = os.open(
                Path(directory) / f"{os.getpid()}.jsonl", os.O_WRONLY | os.O_CREAT | os.O_APPEND
            )
        except OSError:
            return  # the collecting process is gone: nobody is left to fail
        try:
            os.write(fd, line)
        finally:
            os.close(fd)

    def drain(self) -> list[InvalidRequest]:
        with self._lock:
            found, self._kept = self._kept, []
            directory = os.environ.get(ENV_VAR)
            if directory:
                found.extend(self._read_children(Path(directory)))
        return found

    def _read_children(self, directory: Path) -> list[InvalidRequest]:
        found: list[InvalidRequest] = []
        for path in sorted(directory.glob("*.jsonl")):
            start = self._offsets.get(path, 0)
            with path.open("rb") as handle:
                handle.seek(start)
                data = handle.read()
            whole = data[: data.rfind(b"\n") + 1]  # a line still being written waits
            self._offsets[path] = start + len(whole)
            for line in whole.splitlines():
                try:
                    found.append(_decode(line))
                except msgspec.DecodeError:
                    found.append(
                        InvalidRequest(
                            double=f"a child process ({path.name})",
                            outline="(unreadable report)",
                            violations=(),
                        )
                    )
        return found


_collector = _Collector()
report = _collector.report
drain = _collector.drain
start_collecting = _collector.start
stop_collecting = _collector.stop


def screen(double: str, body: object) -> InvalidRequest | None:
    """Check a chat request body; report and return it if it breaks a rule, else ``None``."""
    violations = check_chat_request(body)
    if not violations:
        return None
    invalid = InvalidRequest(double=double, outline=outline(body), violations=tuple(violations))
    report(invalid)
    return invalid
