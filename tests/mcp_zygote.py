"""``python -m tests.mcp_zygote SOCKET``: forks MCP servers from one interpreter that imported
the MCP SDK and xai once (~1.3-2.5 s of CPU per server otherwise; the MCP tests start ~25).

Each connection on the Unix socket ``SOCKET`` comes from ``tests/zygote_launch.py`` with its
standard streams (as file descriptors), environment, folder and arguments: the zygote forks
a child that takes them and runs ``tests/mcp_server_fixture.py``'s ``main`` with those
arguments, or, for ``-m xai ARGS``, ``python -m xai ARGS`` (``xai mcp serve``); answers the
child's pid, and once the child ends, its exit code (negative: the signal that killed it).
A launcher that goes away first (killed) gets its server killed. One thread: nothing is
running in another thread when the zygote forks. Prints ``ready`` once it listens; ends when
its standard input does (the test run that started it ended, however it ended).
"""

from __future__ import annotations

import contextlib
import json
import os
import runpy
import select
import signal
import socket
import sys
import traceback

import mcp.server.mcpserver  # noqa: F401 - imported once, before any fork
import openai  # noqa: F401 - what ``xai mcp serve`` and ``xai chat`` load when they start
import prompt_toolkit.shortcuts  # noqa: F401 - ``xai chat``'s terminal
import uvicorn  # noqa: F401 - the HTTP transport's server

import xai.cli._mcp
import xai.mcp
import xai.memory  # noqa: F401
from tests import mcp_server_fixture


def _child(request: dict[str, object], fds: list[int]) -> None:
    code = 1
    try:
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
            os.close(fd)
        os.environ.clear()
        os.environ.update(dict(request["env"]))  # type: ignore[call-overload]
        os.chdir(str(request["cwd"]))
        sys.stdin = open(0, encoding="utf-8", closefd=False)  # noqa: SIM115 - the process's own
        sys.stdout = open(1, "w", encoding="utf-8", closefd=False)  # noqa: SIM115
        sys.stderr = open(2, "w", encoding="utf-8", closefd=False)  # noqa: SIM115
        argv: list[str] = list(request["argv"])  # type: ignore[call-overload]
        try:
            if argv[:1] == ["-m"]:  # python -m MODULE ARGS
                sys.argv = [argv[1], *argv[2:]]
                runpy.run_module(argv[1], run_name="__main__", alter_sys=True)
            else:
                sys.argv = [str(mcp_server_fixture.__file__), *argv]
                mcp_server_fixture.main()
            code = 0
        except SystemExit as stop:
            code = stop.code if isinstance(stop.code, int) else (0 if stop.code is None else 1)
        except BaseException:
            traceback.print_exc()
    finally:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()
        os._exit(code)


def _receive(conn: socket.socket) -> tuple[dict[str, object], list[int]]:
    data, fds, _, _ = socket.recv_fds(conn, 1 << 16, 3)
    while not data.endswith(b"\n"):
        more = conn.recv(1 << 16)
        if not more:
            raise EOFError("the launcher went away")
        data += more
    return json.loads(data), list(fds)


def serve(path: str) -> None:
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(64)
    print("ready", flush=True)
    launchers: dict[int, tuple[socket.socket, int]] = {}  # pidfd -> (connection, pid)
    watched: dict[socket.socket, int] = {}  # connection -> pid, until it closes
    while True:
        waiting: list[socket.socket | int] = [listener, 0, *watched, *launchers]
        ready, _, _ = select.select(waiting, [], [])
        for item in ready:
            if item == 0 and not os.read(0, 1 << 12):  # the test run ended (even if killed)
                for pid in watched.values():
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(pid, signal.SIGKILL)
                return
            if item == 0:
                continue
            if item is listener:
                conn, _ = listener.accept()
                try:
                    request, fds = _receive(conn)
                except (OSError, ValueError, EOFError):
                    conn.close()
                    continue
                pid = os.fork()
                if pid == 0:
                    listener.close()
                    conn.close()
                    _child(request, fds)
                for fd in fds:
                    os.close(fd)
                launchers[os.pidfd_open(pid)] = (conn, pid)
                watched[conn] = pid
                with contextlib.suppress(OSError):
                    conn.sendall(f"{pid}\n".encode())
            elif isinstance(item, socket.socket):  # the launcher is gone: so is its server
                with contextlib.suppress(ProcessLookupError):
                    os.kill(watched.pop(item), signal.SIGKILL)
            else:  # a server ended (its pidfd)
                assert isinstance(item, int)
                conn, pid = launchers.pop(item)
                os.close(item)
                _, status = os.waitpid(pid, 0)
                watched.pop(conn, None)
                with contextlib.suppress(OSError):
                    conn.sendall(f"{os.waitstatus_to_exitcode(status)}\n".encode())
                conn.close()


if __name__ == "__main__":
    serve(sys.argv[1])
