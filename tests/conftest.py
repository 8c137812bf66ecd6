from __future__ import annotations

import functools
import importlib
import os
import sys
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.chroma_server import ChromaServer
from xai.logs import configure_logging
from xai.providers import OpenAIProvider, RetryPolicy
from xai.testing import OpenAIWireServer, block_network

pytest_plugins = ["xai.testing.pytest_plugin", "pytester"]

# Ray reads these when it is first imported (by whichever test module imports it first):
# no usage stats, and 127.0.0.1 as every node's address, not the address of the route out.
os.environ.update({"RAY_USAGE_STATS_ENABLED": "0", "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0"})

configure_logging("console", level="warning", stream=sys.stderr)


def _one_default_ssl_context() -> None:
    """Every HTTP client this process builds (the openai SDK's in each provider, each httpx
    client of a test) shares one default SSL context instead of building its own: building one
    reads the CA bundle, ~45 ms of CPU, and the suite builds well over a thousand clients.
    A context with other settings (``verify=False``, a CA file, a client certificate) is built
    as before; nothing in the suite connects over TLS (``block_network``), so sharing changes
    nothing a test checks."""
    for name in ("httpx._transports.default", "httpx2._transports.default"):
        try:
            module = importlib.import_module(name)
        except ImportError:  # pragma: no cover - the SDK's HTTP library is one of them
            continue
        build: Callable[..., Any] = module.create_ssl_context
        shared = functools.cache(lambda trust_env, build=build: build(trust_env=trust_env))

        def create_ssl_context(
            verify: Any = True,
            cert: Any = None,
            trust_env: bool = True,
            *,
            build: Callable[..., Any] = build,
            shared: Callable[[bool], Any] = shared,
        ) -> Any:
            if verify is True and cert is None:
                return shared(trust_env)
            return build(verify=verify, cert=cert, trust_env=trust_env)

        setattr(module, "create_ssl_context", create_ssl_context)  # noqa: B010


_one_default_ssl_context()


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.hookimpl(tryfirst=True)
def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """``@pytest.mark.backend_agnostic`` tests run on asyncio alone.

    The actor layers (Query, Session, Agent, tools, providers) run on both backends because
    cancellation and task groups differ between them. A test whose subject is computation, files
    or a facade over those layers (policy tables, eval harnesses, crash recovery read from disk)
    would only run the same code twice, so it is marked and runs once: CI time is spent where
    the backends can differ.
    """
    if "anyio_backend" in metafunc.fixturenames and metafunc.definition.get_closest_marker(
        "backend_agnostic"
    ):
        # As a parametrize mark, so pytest's own hooks (which run after this one) give it
        # precedence over the fixture's two params.
        metafunc.definition.add_marker(pytest.mark.parametrize("anyio_backend", ["asyncio"]))


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """Under pytest-xdist (``make check`` runs ``pytest -n 3``): a test module per worker at
    a time, the longest first (tests/parallel.py)."""
    from tests.parallel import ModuleScheduling

    return ModuleScheduling(config, log)


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if hasattr(config, "workerinput"):  # a pytest-xdist worker: the order work is handed out
        from tests.parallel import longest_first

        items.sort(key=longest_first)  # (stable: a module's tests keep their order)


@pytest.fixture(scope="session", autouse=True)
def _no_real_models() -> Iterator[None]:
    """Tests never reach a real model: any non-loopback connection fails."""
    with block_network():
        yield


@pytest.fixture
def cluster() -> Any:
    """A two-node Ray cluster on 127.0.0.1 (tests/ray_cluster.py), shared by the tests that
    run one after another with it: stopped after the last of them (below)."""
    from tests.ray_cluster import shared_cluster

    return shared_cluster()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    try:
        yield
    finally:
        if "cluster" in getattr(item, "fixturenames", ()) and "cluster" not in getattr(
            nextitem, "fixturenames", ()
        ):
            from tests.ray_cluster import stop_shared_cluster

            stop_shared_cluster()


FAST_RETRY = RetryPolicy(max_retries=2, initial_delay=0.01, max_delay=0.05)


@pytest.fixture
async def provider(openai_server: OpenAIWireServer) -> AsyncIterator[OpenAIProvider]:
    """The real OpenAI provider (real ``openai`` client) against the local wire server."""
    p = openai_server.provider(retry=FAST_RETRY, timeout=5.0)
    yield p
    await p.aclose()


@pytest.fixture
def chroma(tmp_path: Path) -> Iterator[ChromaServer]:
    """A Chroma server (``chroma run``) on 127.0.0.1 for one test, stopped after it."""
    server = ChromaServer(tmp_path / "chroma")
    server.start()
    try:
        yield server
    finally:
        server.stop()
