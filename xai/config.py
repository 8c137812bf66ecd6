"""Where the model lives: ``LLMConfig`` and ``EmbeddingConfig``, from code or the environment;
and where xai keeps its data on disk (``default_home``).

Environment variables: ``LLM_API_KEY``, ``LLM_BASE_URL``, ``LLM_MODEL``,
``LLM_EXTRA_HEADERS``, ``LLM_STREAM``, ``LLM_API`` and ``EMBEDDING_API_KEY``,
``EMBEDDING_BASE_URL``, ``EMBEDDING_MODEL``, ``EMBEDDING_EXTRA_HEADERS``; each
empty embedding value falls back to its LLM twin (the key and the headers only
for the same endpoint). Keys, and header values that look like credentials, are
registered with the redaction net the moment a config holds them, and never
appear in ``repr``.
``LLM_MODEL`` may be a model string, ``SERVICE:MODEL`` (``openai:gpt-4.1-mini``,
``ollama:qwen3``): ``MODEL_SERVICES`` gives the service's base URL, the variable its key is
read from when ``LLM_API_KEY`` is empty, and the protocol it speaks (``resolve_model``).
``XAI_HOME`` (else ``XDG_DATA_HOME``) says where Agents, knowledge and the runner's
memory live.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal, TypeAlias
from urllib.parse import urlsplit

import msgspec

from xai._redact import masked_settings, register_secret, register_settings
from xai.exceptions import ConfigurationError

__all__ = [
    "MODEL_SERVICES",
    "Api",
    "EmbeddingConfig",
    "LLMConfig",
    "ModelRoute",
    "ModelService",
    "default_home",
    "is_plain_name",
    "resolve_model",
]

Api: TypeAlias = Literal["chat", "responses"]
"""The protocol spoken to the model: OpenAI Chat Completions (``/chat/completions``, what
every compatible service takes) or the OpenAI Responses API (``/responses``)."""


class ModelService(msgspec.Struct, frozen=True, kw_only=True):
    """Where a ``SERVICE:MODEL`` string sends its requests."""

    base_url: str | None
    """``None``: the official OpenAI endpoint."""
    key_variable: str | None
    """The environment variable its key is read from when ``LLM_API_KEY`` is empty
    (``None``: a server on this machine, no key)."""
    api: Api = "chat"


# Each service's documented OpenAI-compatible endpoint. The Responses API is OpenAI's own
# (`openai-responses:`); the other services speak Chat Completions.
MODEL_SERVICES: dict[str, ModelService] = {
    "openai": ModelService(base_url=None, key_variable="OPENAI_API_KEY"),
    "openai-responses": ModelService(base_url=None, key_variable="OPENAI_API_KEY", api="responses"),
    "deepseek": ModelService(base_url="https://api.deepseek.com", key_variable="DEEPSEEK_API_KEY"),
    "qwen": ModelService(
        base_url="https://dashscope.aliyuncs.com/compatible-mode/v1",
        key_variable="DASHSCOPE_API_KEY",
    ),
    "siliconflow": ModelService(
        base_url="https://api.siliconflow.cn/v1", key_variable="SILICONFLOW_API_KEY"
    ),
    "openrouter": ModelService(
        base_url="https://openrouter.ai/api/v1", key_variable="OPENROUTER_API_KEY"
    ),
    "groq": ModelService(base_url="https://api.groq.com/openai/v1", key_variable="GROQ_API_KEY"),
    "mistral": ModelService(base_url="https://api.mistral.ai/v1", key_variable="MISTRAL_API_KEY"),
    "together": ModelService(
        base_url="https://api.together.xyz/v1", key_variable="TOGETHER_API_KEY"
    ),
    "gemini": ModelService(
        base_url="https://generativelanguage.googleapis.com/v1beta/openai/",
        key_variable="GEMINI_API_KEY",
    ),
    "ollama": ModelService(base_url="http://localhost:11434/v1", key_variable=None),
    "lmstudio": ModelService(base_url="http://localhost:1234/v1", key_variable=None),
    "vllm": ModelService(base_url="http://localhost:8000/v1", key_variable=None),
}


class ModelRoute(msgspec.Struct, frozen=True, kw_only=True):
    """What a model string resolves to."""

    model: str
    """The model name sent to the service (the string without its ``SERVICE:`` prefix)."""
    service: str | None = None
    """The ``MODEL_SERVICES`` entry it named, or ``None`` for a plain model name."""
    base_url: str | None = None
    api_key: str | None = None
    api: Api = "chat"


def resolve_model(text: str, env: Mapping[str, str] | None = None) -> ModelRoute:
    """Resolve ``SERVICE:MODEL`` through ``MODEL_SERVICES``; the key comes from the service's
    variable in ``env`` (default ``os.environ``).

    Only a known service counts as a prefix, so a name with a colon of its own stays whole
    (``qwen2.5:7b`` is an Ollama model name, ``ollama:qwen2.5:7b`` the string for it).
    """
    env = os.environ if env is None else env
    prefix, colon, name = text.partition(":")
    service = MODEL_SERVICES.get(prefix.strip().lower()) if colon else None
    if service is None:
        return ModelRoute(model=text)
    if not name.strip():
        raise ConfigurationError(
            f"model string {text!r} names no model after {prefix}: "
            f"(e.g. {prefix}:{'gpt-4.1-mini' if prefix.startswith('openai') else 'NAME'})",
            variable="LLM_MODEL",
        )
    key = _env(env, service.key_variable) if service.key_variable else None
    return ModelRoute(
        model=name.strip(),
        service=prefix.strip().lower(),
        base_url=service.base_url,
        api_key=key,
        api=service.api,
    )


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


def _checked_headers(headers: object, variable: str) -> dict[str, str]:
    if not isinstance(headers, Mapping):
        raise ConfigurationError(
            f"{variable} must be a JSON object of header names to strings, "
            f"got {type(headers).__name__}",
            variable=variable,
        )
    for name, value in headers.items():
        if not isinstance(name, str) or not name.strip():
            raise ConfigurationError(
                f"{variable}: header names must be non-empty strings, got {name!r}",
                variable=variable,
            )
        if not isinstance(value, str):
            # The value is not shown: it may be a credential.
            raise ConfigurationError(
                f"{variable}: the value of header {name!r} must be a string, "
                f"got {type(value).__name__}",
                variable=variable,
            )
    return dict(headers)


def _env_headers(env: Mapping[str, str], name: str) -> dict[str, str] | None:
    raw = _env(env, name)
    if raw is None:
        return None
    try:
        headers = msgspec.json.decode(raw)
    except msgspec.DecodeError as exc:
        # The message names the variable but never echoes its text: it may hold a credential.
        raise ConfigurationError(
            f"{name} is not valid JSON ({exc}); expected an object such as "
            '{"OpenAI-Organization": "org-…"}',
            variable=name,
        ) from None
    return _checked_headers(headers, name)


def _env_limit(raw: str, name: str) -> float | None:
    if raw.lower() in ("none", "off"):
        return None
    try:
        return float(raw)
    except ValueError:
        raise ConfigurationError(
            f"{name} must be a number of seconds or 'none', got {raw!r}", variable=name
        ) from None


def _env_flag(env: Mapping[str, str], name: str) -> bool | None:
    raw = _env(env, name)
    if raw is None:
        return None
    lowered = raw.lower()
    if lowered in ("1", "true", "yes", "on"):
        return True
    if lowered in ("0", "false", "no", "off"):
        return False
    raise ConfigurationError(f"{name} must be true or false, got {raw!r}", variable=name)


class _EndpointConfig(msgspec.Struct, frozen=True, kw_only=True):
    model: str | None = None
    base_url: str | None = None
    """``None`` means the official OpenAI endpoint."""
    api_key: str | None = None
    timeout: float = 60.0
    """Seconds to wait for the first byte and between bytes of an answer."""
    max_retries: int = 2
    """Retries of a retryable failure (429, 5xx, timeout, connection) before giving up."""
    extra_headers: dict[str, str] = msgspec.field(default_factory=dict)
    """HTTP headers sent with every request, e.g. a gateway's routing, organisation,
    project or conversation headers. They win over the client's own headers (so a
    gateway's ``api-key`` header works too). Values that look like credentials are
    registered with the redaction net and masked in ``repr``."""

    _prefix = "LLM"

    def __post_init__(self) -> None:
        register_secret(self.api_key)
        headers = _checked_headers(self.extra_headers, "extra_headers")
        # A copy: the caller's dict changing later must not change a frozen config.
        msgspec.structs.force_setattr(self, "extra_headers", headers)
        register_settings(headers)

    def __repr__(self) -> str:
        shown: list[str] = []
        for name in self.__struct_fields__:
            if name == "api_key":
                shown.append(f"api_key={'None' if self.api_key is None else repr('***')}")
            elif name == "extra_headers":
                if self.extra_headers:
                    shown.append(f"extra_headers={masked_settings(self.extra_headers)!r}")
            elif name == "api":  # shown only when it is not the default, Chat Completions
                if (api := getattr(self, name)) != "chat":
                    shown.append(f"api={api!r}")
            else:
                shown.append(f"{name}={getattr(self, name)!r}")
        return f"{type(self).__name__}({', '.join(shown)})"

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

    request_limit: float | None = 600.0
    """Seconds one request may take in all, its whole answer included (``None``: no
    limit). ``timeout`` bounds each wait for a byte, so a server that keeps trickling (a
    small model running away without ``max_tokens``) would never trip it; this does, with
    ``ProviderTimeoutError``. Long answers from a slow endpoint may need more."""
    api: Api = "chat"
    """The protocol: ``"chat"`` (Chat Completions, every OpenAI-compatible service) or
    ``"responses"`` (the OpenAI Responses API; ``LLM_API=responses``, or an
    ``openai-responses:`` model string). docs/providers.md says which service takes which."""
    stream: bool = True
    """Stream answers (SSE). False sends ``"stream": false`` and decodes one JSON answer into
    the same provider events, for gateways that do not stream; ``timeout`` then has to
    cover the whole answer, which arrives in one piece."""

    def validated(self) -> Any:
        if self.request_limit is not None and self.request_limit <= 0:
            raise ConfigurationError(
                f"request_limit must be > 0 (or None), got {self.request_limit!r}"
            )
        return super().validated()

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None, **overrides: Any) -> LLMConfig:
        """Read ``LLM_*`` from ``env`` (default ``os.environ``); keyword overrides win.

        ``LLM_MODEL`` may be a model string (``resolve_model``): ``LLM_BASE_URL`` and
        ``LLM_API_KEY`` still win over what it resolves to, when they are set."""
        env = os.environ if env is None else env
        values: dict[str, Any] = {
            "api_key": _env(env, "LLM_API_KEY"),
            "base_url": _env(env, "LLM_BASE_URL"),
            "model": _env(env, "LLM_MODEL"),
        }
        text = overrides.get("model", values["model"])
        if isinstance(text, str):
            route = resolve_model(text, env)
            values["model"] = route.model
            overrides = {k: v for k, v in overrides.items() if k != "model"}
            if route.service is not None:
                values["api"] = route.api
                if values["base_url"] in (None, route.base_url):
                    values["base_url"] = route.base_url
                    values["api_key"] = values["api_key"] or route.api_key
                # else LLM_BASE_URL points elsewhere: the service's own key (OPENAI_API_KEY...)
                # is never sent to another host; LLM_API_KEY is the key for it.
        api = _env(env, "LLM_API")
        if api is not None:
            if api not in ("chat", "responses"):
                raise ConfigurationError(
                    f"LLM_API must be chat or responses, got {api!r}", variable="LLM_API"
                )
            values["api"] = api
        headers = _env_headers(env, "LLM_EXTRA_HEADERS")
        if headers is not None:
            values["extra_headers"] = headers
        limit = _env(env, "LLM_REQUEST_LIMIT")
        if limit is not None:
            values["request_limit"] = _env_limit(limit, "LLM_REQUEST_LIMIT")
        stream = _env_flag(env, "LLM_STREAM")
        if stream is not None:
            values["stream"] = stream
        values.update(overrides)
        return cls(**values)

    @classmethod
    def from_model(
        cls, model: str, env: Mapping[str, str] | None = None, **overrides: Any
    ) -> LLMConfig:
        """A config for a model string such as ``"openai:gpt-4.1-mini"`` or ``"ollama:qwen3"``
        (the rest of ``LLM_*`` still read from ``env``); a plain name keeps ``LLM_BASE_URL``."""
        return cls.from_env(env, model=model, **overrides)


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
        same_endpoint = own_url in (None, _env(env, "LLM_BASE_URL"))
        if _env(env, "EMBEDDING_API_KEY") is None and not same_endpoint:
            # Never send the LLM key to a different host.
            values["api_key"] = None
        # The headers follow the same rule as the key: they may carry credentials.
        headers = _env_headers(env, "EMBEDDING_EXTRA_HEADERS")
        if headers is None and same_endpoint:
            headers = _env_headers(env, "LLM_EXTRA_HEADERS")
        if headers is not None:
            values["extra_headers"] = headers
        own_model = _env(env, "EMBEDDING_MODEL")
        route = resolve_model(own_model, env) if own_model is not None else None
        if route is not None and route.service is not None:
            # EMBEDDING_MODEL=openai:text-embedding-3-small names its own endpoint: the LLM's
            # URL, key and headers are not its fallbacks then, the service's are.
            values["model"] = route.model
            values["base_url"] = own_url or route.base_url
            values["api_key"] = _env(env, "EMBEDDING_API_KEY") or (
                route.api_key if own_url in (None, route.base_url) else None
            )
            values.pop("extra_headers", None)
            if (own_headers := _env_headers(env, "EMBEDDING_EXTRA_HEADERS")) is not None:
                values["extra_headers"] = own_headers
        values.update(overrides)
        return cls(**values)
