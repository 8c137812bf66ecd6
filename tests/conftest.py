from __future__ import annotations

import sys
from collections.abc import AsyncIterator, Iterator

import pytest

from xai.logs import configure_logging
from xai.providers import OpenAIProvider, RetryPolicy
from xai.testing import OpenAIWireServer, block_network

pytest_plugins = ["xai.testing.pytest_plugin", "pytester"]

configure_logging("console", level="warning", stream=sys.stderr)


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


@pytest.fixture(scope="session", autouse=True)
def _no_real_models() -> Iterator[None]:
    """Tests never reach a real model: any non-loopback connection fails."""
    with block_network():
        yield


FAST_RETRY = RetryPolicy(max_retries=2, initial_delay=0.01, max_delay=0.05)


@pytest.fixture
async def provider(openai_server: OpenAIWireServer) -> AsyncIterator[OpenAIProvider]:
    """The real OpenAI provider (real ``openai`` client) against the local wire server."""
    p = openai_server.provider(retry=FAST_RETRY, timeout=5.0)
    yield p
    await p.aclose()
