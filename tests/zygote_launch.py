"""``python -S tests/zygote_launch.py SOCKET ARGS...``: stands in for ``python
tests/mcp_server_fixture.py ARGS...`` as a real process, at a fraction of its start-up.

The fixture server's process is forked by the zygote (``tests/mcp_zygote.py``, which has
imported the MCP SDK once) and handed this process's standard streams, environment and
folder; this process then only relays: a signal it gets goes to the server, and it ends as
the server ended (same exit code, or killed by the same signal). If it is killed itself
(SIGKILL), the zygote kills the server. Standard library only: it starts in milliseconds.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import sys


def main() -> int:
    path, *argv = sys.argv[1:]
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    conn.connect(path)
    request = {"argv": argv, "env": dict(os.environ), "cwd": os.getcwd()}
    socket.send_fds(conn, [json.dumps(request).encode() + b"\n"], [0, 1, 2])
    # This process keeps its own copies of the streams until it ends, so whoever reads them
    # sees their end (EOF, a pseudo-terminal's hang-up) only once this process has ended too.
    replies = conn.makefile("r")
    pid = int(replies.readline())

    def forward(signum: int, _frame: object) -> None:
        with contextlib.suppress(ProcessLookupError):  # it ended: its code is on its way
            os.kill(pid, signum)

    for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(signum, forward)
    line = replies.readline()  # the event: the server ended
    code = int(line) if line.strip() else 1
    if code < 0:
        signal.signal(-code, signal.SIG_DFL)
        os.kill(os.getpid(), -code)
    return code


if __name__ == "__main__":
    sys.exit(main())
