"""``LLMConfig`` / ``EmbeddingConfig``: extra headers and the stream switch, from code and env."""

from __future__ import annotations

import io
import sys
from collections.abc import Iterator

import pytest
import structlog

from xai._redact import redact
from xai.config import EmbeddingConfig, LLMConfig
from xai.exceptions import ConfigurationError
from xai.logs import configure_logging

BASE = {"LLM_MODEL": "m", "LLM_BASE_URL": "https://gateway.example/v1", "LLM_API_KEY": "k-1234"}


def test_extra_headers_from_the_environment() -> None:
    env = {**BASE, "LLM_EXTRA_HEADERS": '{"X-Route": "eu-1", "OpenAI-Project": "proj_42"}'}
    config = LLMConfig.from_env(env)
    assert config.extra_headers == {"X-Route": "eu-1", "OpenAI-Project": "proj_42"}
    assert LLMConfig.from_env(BASE).extra_headers == {}
    # Keyword overrides win, as for every other field.
    assert LLMConfig.from_env(env, extra_headers={"A": "b"}).extra_headers == {"A": "b"}


@pytest.mark.parametrize(
    ("raw", "says"),
    [
        ("{not json", "is not valid JSON"),
        ('["X-Route", "eu-1"]', "must be a JSON object"),
        ('"eu-1"', "must be a JSON object"),
        ('{"X-Route": 1}', "the value of header 'X-Route' must be a string"),
        ('{"X-Route": null}', "must be a string"),
        ('{"X-Route": {"nested": "no"}}', "must be a string"),
        ('{"": "x"}', "header names must be non-empty strings"),
    ],
)
@pytest.mark.parametrize("variable", ["LLM_EXTRA_HEADERS", "EMBEDDING_EXTRA_HEADERS"])
def test_bad_extra_headers_name_their_variable(raw: str, says: str, variable: str) -> None:
    cls = LLMConfig if variable.startswith("LLM") else EmbeddingConfig
    with pytest.raises(ConfigurationError, match=says) as info:
        cls.from_env({**BASE, variable: raw})
    assert info.value.variable == variable
    assert variable in str(info.value)


def test_bad_headers_in_code_are_refused() -> None:
    with pytest.raises(ConfigurationError, match="must be a string") as info:
        LLMConfig(model="m", extra_headers={"X-Count": 3})  # type: ignore[dict-item]
    assert info.value.variable == "extra_headers"


def test_a_bad_header_value_is_not_echoed() -> None:
    secret = "tok-never-echo-0123456789"
    with pytest.raises(ConfigurationError) as info:
        LLMConfig.from_env({**BASE, "LLM_EXTRA_HEADERS": f'{{"Api-Key": ["{secret}"]}}'})
    assert secret not in str(info.value)
    with pytest.raises(ConfigurationError) as info:
        LLMConfig.from_env({**BASE, "LLM_EXTRA_HEADERS": f'{{"Api-Key": "{secret}"'})
    assert secret not in str(info.value)


def test_the_config_keeps_its_own_copy_of_the_headers() -> None:
    headers = {"X-Route": "eu-1"}
    config = LLMConfig(model="m", extra_headers=headers)
    headers["X-Route"] = "us-1"
    assert config.extra_headers == {"X-Route": "eu-1"}


@pytest.fixture
def json_logs() -> Iterator[io.StringIO]:
    stream = io.StringIO()
    configure_logging("json", level="debug", stream=stream)
    try:
        yield stream
    finally:
        configure_logging("console", level="warning", stream=sys.stderr)


def test_credential_headers_are_masked_in_repr_and_logs(json_logs: io.StringIO) -> None:
    named = "plain-looking-credential-81f2"  # only its header name says it is a credential
    shaped = "Bearer abcdefghijklmnopqrstuvwxyz"  # only its shape says so
    config = LLMConfig(
        model="m",
        api_key="k-1234",
        extra_headers={
            "api-key": named,
            "X-Upstream-Authorization": "Basic dXNlcjpwYXNz",
            "X-Session-Token": "abc123secretvalue",
            "X-Forwarded": shaped,
            "OpenAI-Organization": "org-acme",
            "X-Conversation-Id": "conv-7",
        },
    )
    shown = repr(config)
    for secret in (named, "dXNlcjpwYXNz", "abc123secretvalue", "abcdefghijklmnop"):
        assert secret not in shown and secret not in str(config)
    # Routing and organisation headers are not secrets: they stay readable.
    assert "'OpenAI-Organization': 'org-acme'" in shown and "'X-Conversation-Id': 'conv-7'" in shown
    assert "'api-key': '***'" in shown
    # Registered with the redaction net: a log line or error message that carries them is masked.
    structlog.get_logger().warning("gateway.refused", detail=f"sent {named} and Basic dXNlcjpwYXNz")
    logged = json_logs.getvalue()
    assert "gateway.refused" in logged and named not in logged and "dXNlcjpwYXNz" not in logged
    assert redact(f"x {named} y") == "x *** y"


def test_repr_shows_no_headers_field_when_there_are_none() -> None:
    assert "extra_headers" not in repr(LLMConfig(model="m"))
    assert repr(LLMConfig(model="m")).endswith("max_retries=2, request_limit=600.0, stream=True)")


def test_embedding_headers_fall_back_to_the_llm_ones_only_for_the_same_endpoint() -> None:
    env = {
        **BASE,
        "EMBEDDING_MODEL": "bge-m3",
        "LLM_EXTRA_HEADERS": '{"api-key": "gateway-secret-1234"}',
    }
    assert EmbeddingConfig.from_env(env).extra_headers == {"api-key": "gateway-secret-1234"}
    same_url = {**env, "EMBEDDING_BASE_URL": BASE["LLM_BASE_URL"]}
    assert EmbeddingConfig.from_env(same_url).extra_headers == {"api-key": "gateway-secret-1234"}
    # Another host gets neither the LLM key nor the LLM headers (they may carry credentials).
    other = EmbeddingConfig.from_env({**env, "EMBEDDING_BASE_URL": "https://embed.example/v1"})
    assert other.extra_headers == {} and other.api_key is None
    own = EmbeddingConfig.from_env({**env, "EMBEDDING_EXTRA_HEADERS": '{"X-Embed": "1"}'})
    assert own.extra_headers == {"X-Embed": "1"}


@pytest.mark.parametrize(
    ("raw", "expected"),
    [("false", False), ("0", False), ("No", False), ("true", True), ("1", True), ("", True)],
)
def test_stream_switch_from_the_environment(raw: str, expected: bool) -> None:
    assert LLMConfig.from_env({**BASE, "LLM_STREAM": raw}).stream is expected


def test_a_bad_stream_switch_names_its_variable() -> None:
    with pytest.raises(ConfigurationError, match="LLM_STREAM must be true or false") as info:
        LLMConfig.from_env({**BASE, "LLM_STREAM": "sometimes"})
    assert info.value.variable == "LLM_STREAM"
