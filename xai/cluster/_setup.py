"""The ``HostSetup`` of ``xai serve --ray``: every host actor talks to the model endpoint
the gateway was configured with (``LLM_*`` where the gateway runs), sent to it as msgspec."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import msgspec

from xai.cluster._actor import HostParts
from xai.config import LLMConfig
from xai.providers import OpenAIProvider

__all__ = ["llm_setup"]


@asynccontextmanager
async def llm_setup(config: bytes) -> AsyncIterator[HostParts]:
    """One ``OpenAIProvider`` for all the actor's Agents, from an encoded ``LLMConfig``
    (``functools.partial(llm_setup, msgspec.json.encode(config))``)."""
    provider = OpenAIProvider(msgspec.json.decode(config, type=LLMConfig))
    try:
        yield HostParts(provider_for=lambda _: provider)
    finally:
        await provider.aclose()
