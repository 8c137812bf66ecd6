"""Keep secrets out of log lines and error messages.

Two nets: values registered at run time (every API key xai is configured with)
are replaced wherever they appear, and anything shaped like a bearer token or
an ``sk-…`` key is masked even if nobody registered it.
"""

from __future__ import annotations

import re

__all__ = ["masked_settings", "redact", "register_secret", "register_settings"]

_MASK = "***"
_PATTERN = re.compile(
    r"(?:sk|pk|rk)-[A-Za-z0-9_\-]{8,}"  # OpenAI-style keys and look-alikes
    r"|(?i:bearer)\s+[A-Za-z0-9._~+/\-]{8,}=*"  # Authorization header values
)
# A set, not a config object: redaction must reach every logger and error
# message in the process, whatever configuration created the key.
_secrets: set[str] = set()


def register_secret(value: str | None) -> None:
    """Mask ``value`` wherever it would appear in logs or error messages from now on."""
    if value and len(value) >= 4:
        _secrets.add(value)


def redact(text: str) -> str:
    for secret in _secrets:
        if secret in text:
            text = text.replace(secret, _MASK)
    return _PATTERN.sub(_MASK, text)


# Setting names (HTTP headers, environment variables) whose values are credentials whatever
# they look like (``api-key`` for Azure gateways, ``x-api-key``, ``GITHUB_TOKEN``, cookies,
# signed tokens); other values count when they are shaped like a key or a bearer token.
_SECRET_NAME_WORDS = ("auth", "key", "token", "secret", "cookie", "password", "signature")


def _secret_setting(name: str, value: str) -> bool:
    """Whether the setting ``name`` = ``value`` (a header, an environment variable) holds
    a credential."""
    lowered = name.lower()
    return any(word in lowered for word in _SECRET_NAME_WORDS) or redact(value) != value


def register_settings(settings: dict[str, str]) -> None:
    """Register the credentials among ``settings``: each value, and the token of a
    ``<scheme> <token>`` one (``Bearer …``, a token of 8 characters or more), which may
    appear alone."""
    for name, value in settings.items():
        if _secret_setting(name, value):
            register_secret(value)
            words = value.split()
            if len(words) == 2 and len(words[1]) >= 8:
                register_secret(words[1])


def masked_settings(settings: dict[str, str]) -> dict[str, str]:
    """``settings`` for a ``repr``: each credential's value shown as ``***``."""
    return {name: _MASK if _secret_setting(name, v) else v for name, v in settings.items()}
