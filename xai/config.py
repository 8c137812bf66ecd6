"""Where the model lives: ``LLMConfig`` and ``EmbeddingConfig``, from code or the environment;
and where xai keeps its data on disk (``default_home``).

Environment variables: ``LLM_API_KEY``, ``LLM_BASE_URL``, ``LLM_MODEL`` and
``EMBEDDING_API_KEY``, ``EMBEDDING_BASE_URL``, ``EMBEDDING_MODEL``; each empty
embedding value falls back to its LLM twin. Keys are registered with the
redaction net the moment a config holds them, and never appear in ``repr``.
``XAI_HOME`` (else ``XDG_DATA_HOME``) says where Agents, knowledge and the runner's
memory live.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import msgspec

from xai._redact import register_secret
from xai.exceptions import ConfigurationError

__all__ = ["EmbeddingConfig", "LLMConfig", "default_home", "is_plain_name"]

_LOCAL_HOSTS = frozenset({"localhost", "127.0.0.1", "::1", "0.0.0.0"})


def default_home(env: Mapping[str, str] | None = None) -> Path:
    """Where xai keeps its data: ``$XAI_HOME``, else ``$XDG_DATA_HOME/xai``, else
    ``~/.local/share/xai``."""
    env = os.environ if env is None else env
    if env.get("XAI_HOME"):
        return Path(env["XAI_HOME"]).expanduser()
    data = env.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(data).expanduser() / "xai"


_NAME = re.compile(r"[A-Za-z0-9_.-]{1,64}")


def is_plain_name(value: str) -> bool:
    """True for a name that is safe as one folder name under a parent: 1-64 letters, digits,
    ``_``, ``.`` or ``-``, and neither ``.`` nor ``..`` (so no separator, no way up).
    Agent names and the runner's conversation ids follow this rule."""
    return _NAME.fullmatch(value) is not None and value not in (".", "..")


def _is_local(base_url: str | None) -> bool:
    if not base_url:
        return False
    host = urlsplit(base_url).hostname or ""
    return host in _LOCAL_HOSTS or host.startswith("127.")


def _env(env: Mapping[str, str], name: str) -> str | None:
    value = env.get(name, "").strip()
    return value or None


class _EndpointConfig(msgspec.Struct, frozen=True, kw_only=True):
    model: str | None = None
    base_url: str | None = None
    """``None`` means the official OpenAI endpoint."""
    api_key: str | None = None
    timeout: float = 60.0
    """Seconds to wait for the first byte and between bytes of an answer."""
    max_retries: int = 2
    """Retries of a retryable failure (429, 5xx, timeout, connection) before giving up."""

    _prefix = "LLM"

    def __post_init__(self) -> None:
        register_secret(self.api_key)

    def __repr__(self) -> str:
        key = "None" if self.api_key is None else "'***'"
        return (
            f"{type(self).__name__}(model={self.model!r}, base_url={self.base_url!r}, "
            f"api_key={key}, timeout={self.timeout!r}, max_retries={self.max_retries!r})"
        )

    __str__ = __repr__

    @property
    def is_local(self) -> bool:
        """True for an endpoint on this machine (no key needed)."""
        return _is_local(self.base_url)

    @property
    def is_configured(self) -> bool:
        """True when a model is named and an endpoint can be reached with these settings."""
        return self.model is not None and (self.api_key is not None or self.is_local)

    def validated(self) -> Any:
        """Return ``self`` if a client can be built from it, else raise ``ConfigurationError``."""
        prefix = self._prefix
        if self.model is None:
            raise ConfigurationError(
                f"no model configured: set {prefix}_MODEL (e.g. {prefix}_MODEL=gpt-4o-mini) "
                "or pass model=...",
                variable=f"{prefix}_MODEL",
            )
        if self.api_key is None and not self.is_local:
            where = self.base_url or "the OpenAI API"
            raise ConfigurationError(
                f"{prefix}_API_KEY is not set: {where} needs an API key "
                f"(set {prefix}_API_KEY, or pass api_key=...)",
                variable=f"{prefix}_API_KEY",
            )
        if self.timeout <= 0:
            raise ConfigurationError(f"timeout must be > 0, got {self.timeout!r}")
        if self.max_retries < 0:
            raise ConfigurationError(f"max_retries must be >= 0, got {self.max_retries!r}")
        return self


class LLMConfig(_EndpointConfig, frozen=True, kw_only=True):
    """The chat model endpoint (any OpenAI-compatible service)."""

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None, **overrides: Any) -> LLMConfig:
        """Read ``LLM_*`` from ``env`` (default ``os.environ``); keyword overrides win."""
        env = os.environ if env is None else env
        values: dict[str, Any] = {
            "api_key": _env(env, "LLM_API_KEY"),
            "base_url": _env(env, "LLM_BASE_URL"),
            "model": _env(env, "LLM_MODEL"),
        }
        values.update(overrides)
        return cls(**values)


class EmbeddingConfig(_EndpointConfig, frozen=True, kw_only=True):
    """The embeddings endpoint; falls back to the LLM settings for each empty value."""

    _prefix = "EMBEDDING"

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None, **overrides: Any) -> EmbeddingConfig:
        env = os.environ if env is None else env
        values: dict[str, Any] = {
            name: _env(env, f"EMBEDDING_{name.upper()}") or _env(env, f"LLM_{name.upper()}")
            for name in ("api_key", "base_url", "model")
        }
        own_url = _env(env, "EMBEDDING_BASE_URL")
        if _env(env, "EMBEDDING_API_KEY") is None and own_url not in (
            None,
            _env(env, "LLM_BASE_URL"),
        ):
            # Never send the LLM key to a different host.
            values["api_key"] = None
        values.update(overrides)
        return cls(**values)
