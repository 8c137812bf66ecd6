"""A Chroma server (``chroma run``) in a subprocess on 127.0.0.1, for the tests that need one."""

from __future__ import annotations

import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx

__all__ = ["ChromaServer"]


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class ChromaServer:
    """``start()`` runs it (same data directory and port on every start), ``kill()`` kills
    it with SIGKILL; ``stop()`` ends it for good."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.port = _free_port()
        self.process: subprocess.Popen[bytes] | None = None
        found = shutil.which("chroma", path=str(Path(sys.executable).parent))
        if found is None:
            raise RuntimeError("the `chroma` command of the chromadb package is not installed")
        self.command = [found, "run", "--path", str(path), "--host", "127.0.0.1"]

    def start(self, timeout: float = 60.0) -> None:
        self.process = subprocess.Popen(
            [*self.command, "--port", str(self.port)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + timeout
        url = f"http://127.0.0.1:{self.port}/api/v2/heartbeat"
        while True:  # an external process: its readiness can only be asked for
            if self.process.poll() is not None:
                raise RuntimeError(f"chroma run exited with {self.process.returncode}")
            try:
                if httpx.get(url, timeout=1.0).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"chroma run did not answer within {timeout}s")
            time.sleep(0.1)

    def kill(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait()

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.kill()
