"""A real two-node Ray cluster on this machine (127.0.0.1 only), for the ``cluster``
fixture of tests/conftest.py (``shared_cluster``: started by the first test that asks for
it and stopped after the last of the tests next to it that do), and the check that
nothing the tests started listens beyond loopback.

Importing this module skips the importing test module when Ray is not installed.
"""

from __future__ import annotations

import atexit
import ipaddress
import os
import tempfile
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from typing import Any

import pytest

# (tests/conftest.py sets Ray's environment before any test module imports Ray.)
ray = pytest.importorskip("ray", reason="Ray is not installed (the xai[ray] extra)")
psutil = pytest.importorskip("psutil", reason="psutil (a Ray dependency) is not installed")

from ray.cluster_utils import Cluster  # noqa: E402

__all__ = [
    "Cluster",
    "listening_beyond_loopback",
    "node_pin",
    "shared_cluster",
    "started_cluster",
    "stop_shared_cluster",
]

_shared: list[tuple[Cluster, ExitStack]] = []


def shared_cluster() -> Cluster:
    """The running cluster, started if there is none."""
    if not _shared:
        stack = ExitStack()
        _shared.append((stack.enter_context(started_cluster()), stack))
        atexit.register(stop_shared_cluster)  # (a run cut short stops it too)
    return _shared[0][0]


def stop_shared_cluster() -> None:
    """Stop the cluster if it runs (the next ``shared_cluster`` starts another)."""
    if _shared:
        _, stack = _shared.pop()
        stack.close()


@contextmanager
def started_cluster() -> Iterator[Cluster]:
    """A head node and a second node, one CPU each, in a temp dir of their own, the driver
    (this process) connected. Node ``i`` has the custom resource ``xai-node-{i}``
    (``node_pin``)."""
    saved = {"RAY_TMPDIR": os.environ.get("RAY_TMPDIR")}
    with tempfile.TemporaryDirectory(prefix="xr", dir="/tmp") as temp:  # (socket paths are short)
        os.environ["RAY_TMPDIR"] = temp
        node: dict[str, Any] = {"num_cpus": 1, "node_ip_address": "127.0.0.1"}
        made = Cluster(
            initialize_head=True,
            head_node_args={**node, "include_dashboard": False, "resources": {"xai-node-0": 1}},
        )
        try:
            made.add_node(**node, resources={"xai-node-1": 1})
            made.wait_for_nodes()
            ray.init(address=made.address, namespace="xai", _node_ip_address="127.0.0.1")
            yield made
        finally:
            ray.shutdown()
            made.shutdown()  # type: ignore[no-untyped-call]
            for key, value in saved.items():
                if value is None:
                    os.environ.pop(key, None)
                else:
                    os.environ[key] = value


def node_pin(node: int) -> dict[str, Any]:
    """Ray actor options placing an actor on node ``node`` of the cluster (SPREAD alone is
    best effort). ``num_cpus=0``: an actor asking for a resource otherwise holds a CPU for
    as long as it lives, and each node has one."""
    return {"resources": {f"xai-node-{node}": 0.01}, "num_cpus": 0}


def _loopback(address: str) -> bool:
    ip = ipaddress.ip_address(address.split("%")[0])
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return ip.is_loopback


def listening_beyond_loopback(*, expect: set[str]) -> list[tuple[int, str, Any]]:
    """The listening sockets of this process's children (the Ray nodes and their
    workers, any server a test started) that are not on loopback; ``expect`` names
    processes that must be among the children, and more than 4 sockets must listen (so
    an empty answer is not a look at nothing)."""
    processes = psutil.Process(os.getpid()).children(recursive=True)
    names = {p.name() for p in processes}
    assert expect <= names, names
    listening = [
        (p.pid, p.name(), c.laddr)
        for p in processes
        for c in p.net_connections(kind="inet")
        if c.status == psutil.CONN_LISTEN
    ]
    assert len(listening) > 4
    return [(pid, name, addr) for pid, name, addr in listening if not _loopback(addr.ip)]
