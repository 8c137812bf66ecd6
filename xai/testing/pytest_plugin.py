"""pytest fixtures for code built on xai. Enable with ``pytest_plugins = ["xai.testing.pytest_plugin"]``.

- ``openai_server``: a started ``OpenAIWireServer``, shared by the session and
  reset (script, recorded requests, violations, settings) before each test that uses it.
- ``scripted_provider``: a fresh in-process ``ScriptedProvider``.
- ``no_network``: the network guard for one test (``block_network``).

And one check for every test: a chat request that breaks the Chat Completions
rules (``xai.testing._validate``), received by any ``OpenAIWireServer`` or
``ScriptedProvider`` during the test, in this process or in a child process the
test started (children find the report directory in ``XAI_TESTING_VIOLATIONS_DIR``),
fails that test at teardown with every violation listed. A test that sends bad
requests on purpose opts out with ``@pytest.mark.xai_allow_invalid_requests``
(the doubles still answer them with a 400); a double built with
``validate_requests=False`` takes anything and reports nothing.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Generator, Iterator

import pytest

from xai.testing._guard import block_network
from xai.testing._scripted_provider import ScriptedProvider
from xai.testing._server import OpenAIWireServer
from xai.testing._violations import ENV_VAR, drain, start_collecting, stop_collecting

ALLOW_MARKER = "xai_allow_invalid_requests"
_saved_env: list[str | None] = []


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        f"{ALLOW_MARKER}: the test sends chat requests that break the Chat Completions rules "
        "on purpose; the xai test doubles still answer them with a 400, but the test is not "
        "failed for them",
    )
    _saved_env.append(os.environ.get(ENV_VAR))
    os.environ[ENV_VAR] = tempfile.mkdtemp(prefix="xai-invalid-requests-")
    start_collecting()


def pytest_unconfigure(config: pytest.Config) -> None:
    stop_collecting()
    directory = os.environ.pop(ENV_VAR, None)
    if directory:
        shutil.rmtree(directory, ignore_errors=True)
    previous = _saved_env.pop() if _saved_env else None
    if previous is not None:
        os.environ[ENV_VAR] = previous


def _failure(found: list[str]) -> str:
    count = len(found)
    head = f"{count} invalid chat request{'s' if count > 1 else ''} reached the xai test doubles"
    return head + " (a real endpoint answers 400):\n" + "\n".join(found)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item: pytest.Item) -> Generator[None, None, None]:
    # After the test's own fixtures are gone, so requests sent while they close count too.
    try:
        yield
    finally:
        found = [invalid.describe() for invalid in drain()]
        if found and item.get_closest_marker(ALLOW_MARKER) is None:
            pytest.fail(_failure(found), pytrace=False)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    found = [invalid.describe() for invalid in drain()]
    if found:  # sent outside any test, e.g. by a child still running after its test ended
        reporter = session.config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None:
            reporter.write_line(_failure(found), red=True)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


@pytest.fixture(scope="session")
def _xai_wire_server() -> Iterator[OpenAIWireServer]:
    with OpenAIWireServer() as server:
        yield server


@pytest.fixture
def openai_server(_xai_wire_server: OpenAIWireServer) -> Iterator[OpenAIWireServer]:
    _xai_wire_server.reset()  # also puts back every quirk a previous test turned on
    yield _xai_wire_server
    _xai_wire_server.reset()


@pytest.fixture
def scripted_provider() -> ScriptedProvider:
    return ScriptedProvider()


@pytest.fixture
def no_network() -> Iterator[None]:
    with block_network():
        yield
