"""Placement: which of N host actors owns an Agent id (the same answer in every process)."""

from __future__ import annotations

import hashlib

__all__ = ["host_index"]


def host_index(agent_id: str, hosts: int) -> int:
    """The host actor of ``agent_id`` among ``hosts``: the same in every process and run
    (blake2b of the id; Python's ``hash`` of a str differs per process)."""
    digest = hashlib.blake2b(agent_id.encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") % hosts
