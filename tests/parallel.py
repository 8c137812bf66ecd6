"""How ``make check`` shares the suite among pytest-xdist workers (``pytest -n 3``).

A test module is one unit of work: its tests run in one worker, one after another, in
their order, so what a module shares (its module-scoped servers, host actors and browser,
the Ray cluster its tests hand on to each other) is made once, as in a run in one process.
The modules that start a Ray cluster are one unit together (``GROUPS``): two clusters at
once would double the busiest processes of the suite for no test. Units are handed out
longest first (``LONGEST``, then by number of tests), so that no long one starts last
while the other workers run out of work. Only the order depends on these lists, never a
result: a module left out of them is a unit of its own, handed out after them.

(pytest-xdist's own ``--dist loadgroup`` does the grouping with marks, but it renames the
tests' node ids, which pytest 9.2 no longer lets it do: it silently runs each test alone.)
"""

from __future__ import annotations

import pytest
from xdist.scheduler import LoadScopeScheduling

__all__ = ["GROUPS", "LONGEST", "ModuleScheduling", "longest_first", "unit"]

GROUPS = {
    "test_cluster_approvals.py": "ray",
    "test_cluster_ray.py": "ray",
    "test_cluster_ray_chroma.py": "ray",
}

LONGEST = (
    # The units that take longest in a parallel run (pytest --durations, 2026-12-02).
    "ray",
    "test_docs_snippets.py",
    "test_agent_stream_replay.py",
    "test_kill_campaign.py",
    "test_cli_failures.py",
    "test_mcp_serve.py",
    "test_cli_errors.py",
    "test_adapters.py",
    "test_memory_chromadb_import.py",
    "test_offline_chat.py",
)


def unit(nodeid: str) -> str:
    """The unit of work of a test: its module's file name, or the group the module is in."""
    name = nodeid.split("::", 1)[0].rsplit("/", 1)[-1]
    return GROUPS.get(name, name)


def longest_first(item: pytest.Item) -> int:
    """A sort key putting the tests of ``LONGEST``'s units first, in that order."""
    name = unit(item.nodeid)
    return LONGEST.index(name) if name in LONGEST else len(LONGEST)


class ModuleScheduling(LoadScopeScheduling):  # type: ignore[misc]  # (xdist is untyped)
    """pytest-xdist's scope scheduling with a module (or group of modules) as the scope,
    handed out in the collection's order (which ``longest_first`` sorted in each worker)
    rather than by number of tests alone."""

    def __init__(self, config: pytest.Config, log: object = None) -> None:
        super().__init__(config, log)
        config.option.loadscopereorder = False

    def _split_scope(self, nodeid: str) -> str:
        return unit(nodeid)
