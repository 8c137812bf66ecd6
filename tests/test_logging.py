"""Logs name where they come from and never carry a secret."""

from __future__ import annotations

import io
import sys
from collections.abc import Iterator

import msgspec
import pytest
import structlog

from xai.config import LLMConfig
from xai.exceptions import ConfigurationError
from xai.logs import bind_ids, configure_logging, get_logger
from xai.messages import StopReason
from xai.providers import OpenAIProvider
from xai.query import Query
from xai.testing import HttpError, OpenAIWireServer, Reply, ScriptedCall
from xai.tools import tool

pytestmark = pytest.mark.anyio

PLANTED = "sk-PLANTED-secret-0123456789abcdef"


@pytest.fixture
def json_logs() -> Iterator[io.StringIO]:
    stream = io.StringIO()
    configure_logging("json", level="debug", stream=stream)
    try:
        yield stream
    finally:
        configure_logging("console", level="warning", stream=sys.stderr)


def lines(stream: io.StringIO) -> list[dict[str, object]]:
    return [msgspec.json.decode(line) for line in stream.getvalue().splitlines() if line]


async def test_planted_key_never_appears(
    openai_server: OpenAIWireServer, json_logs: io.StringIO
) -> None:
    openai_server.api_key = "the-right-key"  # the server echoes the wrong key back in its 401
    provider = OpenAIProvider(openai_server.llm_config(api_key=PLANTED))
    try:
        result = await Query(provider).run([], "hi")
    finally:
        await provider.aclose()
    assert result.stop_reason is StopReason.ERROR
    assert result.error is not None and result.error.type == "AuthenticationError"
    assert "Incorrect API key provided" in result.error.message
    assert PLANTED not in result.error.message
    assert PLANTED not in json_logs.getvalue()
    assert PLANTED not in repr(provider.config) and PLANTED not in str(provider.config)
    logged = lines(json_logs)
    assert any(line["event"] == "query.provider_failed" for line in logged)


async def test_unregistered_key_shapes_are_masked_too(json_logs: io.StringIO) -> None:
    get_logger("test").warning(
        "leak", header="Authorization: Bearer abcdefghijklmnop", key="sk-abcdefghijklmnopqrstuvwx"
    )
    text = json_logs.getvalue()
    assert "abcdefghijklmnop" not in text and "sk-abcdefghijk" not in text


async def test_lines_carry_the_query_id_even_from_tools(
    openai_server: OpenAIWireServer, provider: OpenAIProvider, json_logs: io.StringIO
) -> None:
    @tool
    async def noisy() -> str:
        """Logs a line."""
        get_logger("tool").info("tool.says_hello")
        return "ok"

    openai_server.push(
        Reply(tool_calls=(ScriptedCall(name="noisy"),)),
        Reply(fault=HttpError(status=429, retry_after=0.01)),
        Reply(text="done"),
    )
    with bind_ids(session_id="s-1"):
        result = await Query(provider, tools=[noisy]).run([], "hi")
    by_event = {str(line["event"]): line for line in lines(json_logs)}
    hello = by_event["tool.says_hello"]
    assert hello["query_id"] == result.query_id and hello["session_id"] == "s-1"
    retry = by_event["provider.retry"]
    assert retry["query_id"] == result.query_id and retry["level"] == "warning"


def test_console_format_and_bad_level() -> None:
    stream = io.StringIO()
    try:
        configure_logging("console", level="info", stream=stream)
        structlog.get_logger().info("hello", token=PLANTED)
        assert "hello" in stream.getvalue() and PLANTED not in stream.getvalue()
        with pytest.raises(ConfigurationError, match="unknown log level"):
            configure_logging("console", level="chatty")
    finally:
        configure_logging("console", level="warning", stream=sys.stderr)


def test_config_repr_hides_key() -> None:
    config = LLMConfig(model="m", api_key=PLANTED)
    assert PLANTED not in repr(config)


async def test_tool_error_text_is_redacted() -> None:
    from xai.messages import ToolCall
    from xai.tools import ToolSet

    @tool
    def leaky() -> str:
        """Fails with a key in its message."""
        raise RuntimeError(f"auth failed for {PLANTED}")

    LLMConfig(model="m", api_key=PLANTED)  # registering happens whenever a config holds a key
    result = await ToolSet([leaky]).call(ToolCall("c", "leaky", "{}"))
    assert (
        result.error is not None and PLANTED not in result.error and PLANTED not in result.content
    )


def test_without_any_configuration_logs_go_to_stderr_not_stdout() -> None:
    import subprocess

    code = (
        "from xai.logs import get_logger\n"
        f"get_logger('t').warning('unconfigured.warning', key={PLANTED!r})\n"
        "get_logger('t').info('unconfigured.info')\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.stdout == ""
    assert "unconfigured.warning" in done.stderr and "unconfigured.info" not in done.stderr
    assert PLANTED not in done.stderr
