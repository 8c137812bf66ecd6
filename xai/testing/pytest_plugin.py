"""pytest fixtures for code built on xai. Enable with ``pytest_plugins = ["xai.testing.pytest_plugin"]``.

- ``openai_server``: a started ``OpenAIWireServer``, shared by the session and
  reset (script and recorded requests) before each test that uses it.
- ``scripted_provider``: a fresh in-process ``ScriptedProvider``.
- ``no_network``: the network guard for one test (``block_network``).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from xai.testing._guard import block_network
from xai.testing._scripted_provider import ScriptedProvider
from xai.testing._server import OpenAIWireServer


@pytest.fixture(scope="session")
def _xai_wire_server() -> Iterator[OpenAIWireServer]:
    with OpenAIWireServer() as server:
        yield server


@pytest.fixture
def openai_server(_xai_wire_server: OpenAIWireServer) -> Iterator[OpenAIWireServer]:
    _xai_wire_server.reset()
    _xai_wire_server.api_key = None
    _xai_wire_server.send_usage = True
    yield _xai_wire_server
    _xai_wire_server.reset()


@pytest.fixture
def scripted_provider() -> ScriptedProvider:
    return ScriptedProvider()


@pytest.fixture
def no_network() -> Iterator[None]:
    with block_network():
        yield
