"""Extra headers reach the endpoint on chat and embeddings requests; who closes which client."""

from __future__ import annotations

import openai
import pytest

from tests.conftest import FAST_RETRY
from xai.config import EmbeddingConfig
from xai.memory import OpenAIEmbedder
from xai.messages import UserMessage
from xai.providers import OpenAIProvider, ProviderRequest
from xai.query import Query
from xai.testing import OpenAIWireServer, Reply

pytestmark = pytest.mark.anyio

HEADERS = {
    "OpenAI-Organization": "org-acme",
    "X-Route": "eu-west",
    "X-Conversation-Id": "conv-7",
    "api-key": "gateway-credential-0451",
}
HELLO = ProviderRequest(messages=(UserMessage(content="hello"),))


def sent(request_headers: dict[str, str]) -> dict[str, str]:
    """The extra headers as the server received them (HTTP header names are lower-cased)."""
    return {name: request_headers.get(name.lower(), "") for name in HEADERS}


async def test_extra_headers_arrive_on_every_chat_request(openai_server: OpenAIWireServer) -> None:
    openai_server.push(Reply(text="one"), Reply(text="two"))
    async with OpenAIProvider(openai_server.llm_config(extra_headers=HEADERS)) as provider:
        await Query(provider).run([], "first")
        await Query(provider).run([], "second")
    first, second = openai_server.chat_requests()
    assert sent(first.headers) == HEADERS and sent(second.headers) == HEADERS
    # The key still goes as the bearer token beside them.
    assert first.headers["authorization"] == "Bearer test-key"


async def test_extra_headers_from_the_environment(openai_server: OpenAIWireServer) -> None:
    env = {
        "LLM_BASE_URL": openai_server.base_url,
        "LLM_MODEL": "m",
        "LLM_EXTRA_HEADERS": '{"X-Route": "eu-west", "OpenAI-Project": "proj_9"}',
    }
    openai_server.push(Reply(text="ok"))
    async with OpenAIProvider.from_env(env) as provider:
        _ = [event async for event in provider.stream(HELLO)]
    headers = openai_server.chat_requests()[0].headers
    assert headers["x-route"] == "eu-west" and headers["openai-project"] == "proj_9"


async def test_extra_headers_arrive_on_embeddings_requests(openai_server: OpenAIWireServer) -> None:
    config = EmbeddingConfig(
        model="e", base_url=openai_server.base_url, api_key="k", extra_headers=HEADERS
    )
    embedder = OpenAIEmbedder(config)
    try:
        vectors = await embedder.embed(["a note", "another"])
    finally:
        await embedder.aclose()
    assert len(vectors) == 2
    (request,) = [r for r in openai_server.requests if r.path.endswith("/embeddings")]
    assert sent(request.headers) == HEADERS


async def test_an_injected_client_gets_the_headers_and_stays_the_callers(
    openai_server: OpenAIWireServer,
) -> None:
    client = openai.AsyncOpenAI(base_url=openai_server.base_url, api_key="k", max_retries=0)
    try:
        config = openai_server.llm_config(extra_headers={"X-Route": "eu-west"})
        openai_server.push(Reply(text="one"), Reply(text="two"))
        async with OpenAIProvider(config, client=client, retry=FAST_RETRY) as provider:
            assert provider.client is client
            _ = [event async for event in provider.stream(HELLO)]
        assert not client.is_closed()  # the provider closed, the caller's client did not
        # Still usable by its owner, here through a second provider.
        again = OpenAIProvider(config, client=client)
        _ = [event async for event in again.stream(HELLO)]
        await again.aclose()
        assert not client.is_closed()
    finally:
        await client.close()
    assert [r.headers["x-route"] for r in openai_server.chat_requests()] == ["eu-west"] * 2


async def test_a_client_the_provider_built_is_closed_with_it(
    openai_server: OpenAIWireServer,
) -> None:
    provider = OpenAIProvider(openai_server.llm_config())
    client = provider.client
    assert not client.is_closed()
    await provider.aclose()
    assert client.is_closed()
