"""A guard that makes any attempt to reach a real model (or any non-local host) fail loudly."""

from __future__ import annotations

import ipaddress
import os
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

__all__ = ["NetworkBlockedError", "block_network"]

_ENV_PREFIXES = ("LLM_", "EMBEDDING_", "OPENAI_")


class NetworkBlockedError(OSError):
    """A test tried to reach a host that is not on this machine."""


def _is_local_host(host: Any) -> bool:
    if not isinstance(host, str):
        return False
    if host in ("localhost", "", "::1"):
        return True
    try:
        return ipaddress.ip_address(host.split("%", 1)[0]).is_loopback
    except ValueError:
        return False


def _check_address(address: Any) -> None:
    if isinstance(address, tuple) and address and not _is_local_host(address[0]):
        raise NetworkBlockedError(
            f"xai tests never reach a real model or any remote host (tried {address[0]!r}); "
            "use xai.testing.OpenAIWireServer or ScriptedProvider"
        )


@contextmanager
def block_network(*, clear_env: bool = True) -> Iterator[None]:
    """Refuse DNS look-ups and connections to anything but loopback while active.

    With ``clear_env`` the ``LLM_*`` / ``EMBEDDING_*`` / ``OPENAI_*`` variables
    are hidden too, so code that reads its endpoint from the environment can
    only find the one a test gives it.
    """
    real_connect = socket.socket.connect
    real_connect_ex = socket.socket.connect_ex
    real_getaddrinfo = socket.getaddrinfo

    def connect(self: socket.socket, address: Any) -> None:
        if self.family in (socket.AF_INET, socket.AF_INET6):
            _check_address(address)
        real_connect(self, address)

    def connect_ex(self: socket.socket, address: Any) -> int:
        if self.family in (socket.AF_INET, socket.AF_INET6):
            _check_address(address)
        return real_connect_ex(self, address)

    def getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
        if isinstance(host, bytes):
            host = host.decode()
        if host is not None and not _is_local_host(host):
            _check_address((host,))
        return real_getaddrinfo(host, *args, **kwargs)

    saved_env = {k: v for k, v in os.environ.items() if k.startswith(_ENV_PREFIXES)}
    socket.socket.connect = connect  # type: ignore[method-assign, assignment]
    socket.socket.connect_ex = connect_ex  # type: ignore[method-assign, assignment]
    socket.getaddrinfo = getaddrinfo
    if clear_env:
        for key in saved_env:
            del os.environ[key]
    try:
        yield
    finally:
        socket.socket.connect = real_connect  # type: ignore[method-assign]
        socket.socket.connect_ex = real_connect_ex  # type: ignore[method-assign]
        socket.getaddrinfo = real_getaddrinfo
        if clear_env:
            os.environ.update(saved_env)
