"""What the bench scripts share: the test server in a subprocess, child processes that
report one JSON line, SIGTERM handling, and the weather tool of the measured exchange.

The scripts run as ``python bench/NAME.py``, so this folder is first on ``sys.path``
and ``from _common import ...`` finds this module.
"""

from __future__ import annotations

import contextlib
import math
import os
import queue
import subprocess
import sys
import tempfile
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import NoReturn, TypeVar

import msgspec

__all__ = ["LineChild", "Server", "exit_on_sigterm", "lookup", "lookup_calls", "run_child"]

T = TypeVar("T")


class Server:
    """The OpenAI-wire test server (``python -m xai.testing serve``) in a subprocess of its
    own, so its CPU is not counted as the client's."""

    def __init__(self, script: bytes) -> None:
        handle, name = tempfile.mkstemp(prefix="xai-bench-", suffix=".json")
        with os.fdopen(handle, "wb") as file:
            file.write(script)
        self.script_path = Path(name)
        self.process: subprocess.Popen[str] | None = None

    def start(self, timeout: float = 30.0) -> str:
        """Start it; returns its base URL."""
        self.process = subprocess.Popen(
            [sys.executable, "-m", "xai.testing", "serve", "--script", str(self.script_path)],
            stdout=subprocess.PIPE,
            text=True,
        )
        stdout = self.process.stdout
        assert stdout is not None
        lines: queue.Queue[str] = queue.Queue()
        threading.Thread(target=lambda: lines.put(stdout.readline()), daemon=True).start()
        try:
            line = lines.get(timeout=timeout)
        except queue.Empty:
            raise RuntimeError(f"the test server did not start within {timeout}s") from None
        prefix = "listening on "
        if not line.startswith(prefix):
            raise RuntimeError(f"the test server did not start (said {line!r})")
        return line[len(prefix) :].strip()

    def stop(self) -> None:
        if self.process is not None:
            if self.process.poll() is None:
                self.process.terminate()
                try:
                    self.process.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    self.process.kill()
                    self.process.wait()
            if self.process.stdout is not None:
                self.process.stdout.close()
        self.script_path.unlink(missing_ok=True)


def run_child(
    script: str,
    args: Sequence[str],
    type_: type[T],
    *,
    what: str,
    timeout: float = 600,
    env: Mapping[str, str] | None = None,
) -> T:
    """Run ``script`` with ``args`` in a fresh interpreter (with ``env`` if given); its last
    stdout line is ``type_`` as JSON. A failure shows the child's stderr and raises
    ``RuntimeError``."""
    command = [sys.executable, str(Path(script).resolve()), *args]
    done = subprocess.run(
        command, capture_output=True, text=True, timeout=timeout, check=False, env=env
    )
    lines = done.stdout.strip().splitlines()
    if done.returncode != 0 or not lines:
        sys.stderr.write(done.stderr)
        raise RuntimeError(f"the {what} failed (exit code {done.returncode})")
    return msgspec.json.decode(lines[-1], type=type_)


def exit_on_sigterm(signum: int, frame: object) -> None:
    """A SIGTERM handler: unwind through the ``finally`` blocks that stop servers and
    delete temporary stores."""
    raise SystemExit(128 + signum)


_calls = [0]


def lookup_calls() -> int:
    """How many times ``lookup`` has run in this process (the benches check each run
    really called the tool)."""
    return _calls[0]


async def lookup(city: str, unit: str, days: int, detail: bool) -> str:
    """Look up the weather forecast for a city.

    Args:
        city: Name of the city.
        unit: Temperature unit, "celsius" or "fahrenheit".
        days: How many days ahead.
        detail: Whether to include hourly detail.
    """
    _calls[0] += 1
    level = "hourly" if detail else "daily"
    return f"{city}: {days} days, {level} forecast in {unit}: 6, 8, 7"


def median_ci(values: Sequence[float]) -> tuple[float, float]:
    """A 95 % confidence interval of the median of ``values`` (order statistics, no
    assumption about their distribution): how far the median of another run of as many
    samples may land."""
    ordered = sorted(values)
    n = len(ordered)
    half = 1.96 * math.sqrt(n) / 2
    low, high = max(0, math.floor(n / 2 - half)), min(n - 1, math.ceil(n / 2 + half) - 1)
    return ordered[low], ordered[high]


class LineChild:
    """A child process spoken to one line at a time: it says ``ready``, then answers each
    command with one JSON line (anything else it prints is kept aside and shown if it
    fails). ``name`` says which child in errors ("the base worker")."""

    def __init__(
        self,
        name: str,
        argv: Sequence[str],
        *,
        timeout: float,
        env: Mapping[str, str] | None = None,
    ) -> None:
        self.name = name
        self.timeout = timeout
        self.stderr = tempfile.TemporaryFile()  # noqa: SIM115 (closed in close())
        self.process = subprocess.Popen(
            [sys.executable, *argv],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.stderr,
            text=True,
            env=None if env is None else dict(env),
        )
        self.lines: queue.Queue[str] = queue.Queue()
        self.other: list[str] = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.put(line)
        self.lines.put("")  # the end

    def line(self) -> str:
        """The child's next line of the protocol (``ready`` or JSON)."""
        while True:
            try:
                line = self.lines.get(timeout=self.timeout)
            except queue.Empty:
                self.fail(f"said nothing for {self.timeout:g}s")
            if not line:
                self.fail("ended early")
            if line.startswith(("ready", "{")):
                return line
            self.other.append(line)

    def say(self, line: str) -> None:
        assert self.process.stdin is not None
        try:
            self.process.stdin.write(line + "\n")
            self.process.stdin.flush()
        except BrokenPipeError:
            self.fail("ended early")

    def ask(self, command: str, kind: type[T]) -> T:
        """Send ``command``; its answer, decoded as ``kind``."""
        self.say(command)
        line = self.line()
        try:
            return msgspec.json.decode(line, type=kind)
        except msgspec.DecodeError:
            self.fail(f"said {line!r} instead of its figures")

    def ready(self) -> None:
        line = self.line()
        if line.strip() != "ready":
            self.fail(f"said {line!r} instead of ready")

    def stop(self) -> None:
        self.say("stop")
        try:
            code = self.process.wait(timeout=self.timeout)
        except subprocess.TimeoutExpired:
            self.fail("did not stop")
        if code != 0:
            self.fail("failed")

    def fail(self, what: str) -> NoReturn:
        self.close(keep_stderr=True)
        self.stderr.seek(0)
        sys.stderr.write("".join(self.other) + self.stderr.read().decode(errors="replace"))
        self.stderr.close()
        raise RuntimeError(f"the {self.name} {what} (exit code {self.process.returncode})")

    def close(self, *, keep_stderr: bool = False) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        for stream in (self.process.stdin, self.process.stdout):
            if stream is not None and not stream.closed:
                with contextlib.suppress(BrokenPipeError):
                    stream.close()
        if not keep_stderr:
            self.stderr.close()
