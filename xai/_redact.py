"""Keep secrets out of log lines and error messages.

Two nets: values registered at run time (every API key xai is configured with)
are replaced wherever they appear, and anything shaped like a bearer token or
an ``sk-…`` key is masked even if nobody registered it.
"""

from __future__ import annotations

import re

__all__ = ["redact", "register_secret"]

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
