"""``SERVICE:MODEL`` strings in ``LLM_MODEL`` (or ``model=``) resolve to a base URL, a key and
a protocol; a plain name (colons and all) stays as it is; a key never goes to another host."""

from __future__ import annotations

import pytest

from xai.config import MODEL_SERVICES, LLMConfig, resolve_model
from xai.exceptions import ConfigurationError


def test_a_local_service_needs_no_key() -> None:
    config = LLMConfig.from_env({"LLM_MODEL": "ollama:qwen3"})
    assert (config.model, config.base_url, config.api_key, config.api) == (
        "qwen3",
        "http://localhost:11434/v1",
        None,
        "chat",
    )
    assert config.is_configured


def test_openai_reads_its_own_key_and_the_responses_prefix_picks_the_protocol() -> None:
    env = {"LLM_MODEL": "openai:gpt-4.1-mini", "OPENAI_API_KEY": "sk-from-openai-var"}
    config = LLMConfig.from_env(env)
    assert (config.model, config.base_url, config.api_key, config.api) == (
        "gpt-4.1-mini",
        None,  # the official endpoint
        "sk-from-openai-var",
        "chat",
    )
    responses = LLMConfig.from_model("openai-responses:gpt-4.1-mini", env)
    assert (responses.model, responses.api) == ("gpt-4.1-mini", "responses")


def test_llm_variables_win_and_a_service_key_never_goes_elsewhere() -> None:
    env = {
        "LLM_MODEL": "deepseek:deepseek-chat",
        "DEEPSEEK_API_KEY": "sk-deepseek-only",
        "LLM_BASE_URL": "https://gateway.example/v1",
    }
    config = LLMConfig.from_env(env)
    assert (config.model, config.base_url, config.api_key) == (
        "deepseek-chat",
        "https://gateway.example/v1",
        None,  # DEEPSEEK_API_KEY is for api.deepseek.com, not for the gateway
    )
    with_key = LLMConfig.from_env({**env, "LLM_API_KEY": "sk-gateway"})
    assert with_key.api_key == "sk-gateway"


def test_a_name_with_a_colon_of_its_own_stays_whole() -> None:
    assert resolve_model("qwen2.5:7b").model == "qwen2.5:7b"
    assert resolve_model("qwen2.5:7b").service is None
    assert resolve_model("ollama:qwen2.5:7b").model == "qwen2.5:7b"
    plain = LLMConfig.from_env({"LLM_MODEL": "qwen2.5:7b", "LLM_BASE_URL": "http://127.0.0.1:9/v1"})
    assert (plain.model, plain.base_url) == ("qwen2.5:7b", "http://127.0.0.1:9/v1")


def test_every_service_in_the_table_resolves() -> None:
    for name, service in MODEL_SERVICES.items():
        route = resolve_model(f"{name}:some-model", {})
        assert (route.model, route.base_url, route.api) == (
            "some-model",
            service.base_url,
            service.api,
        )


def test_mistakes_are_configuration_errors() -> None:
    with pytest.raises(ConfigurationError, match="names no model"):
        LLMConfig.from_env({"LLM_MODEL": "openai:"})
    with pytest.raises(ConfigurationError, match="LLM_API must be chat or responses"):
        LLMConfig.from_env({"LLM_MODEL": "m", "LLM_API": "completions"})
    assert LLMConfig.from_env({"LLM_MODEL": "m", "LLM_API": "responses"}).api == "responses"


def test_an_embedding_model_string_names_its_own_endpoint() -> None:
    from xai.config import EmbeddingConfig

    env = {
        "LLM_MODEL": "deepseek:deepseek-chat",
        "LLM_API_KEY": "sk-llm",
        "EMBEDDING_MODEL": "openai:text-embedding-3-small",
        "OPENAI_API_KEY": "sk-openai",
    }
    config = EmbeddingConfig.from_env(env)
    assert (config.model, config.base_url, config.api_key) == (
        "text-embedding-3-small",
        None,  # the OpenAI API, not DeepSeek's
        "sk-openai",  # never the LLM's key
    )
    local = EmbeddingConfig.from_env({"EMBEDDING_MODEL": "ollama:nomic-embed-text"})
    assert (local.base_url, local.api_key) == ("http://localhost:11434/v1", None)
    assert local.is_configured
