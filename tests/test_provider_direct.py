"""A provider's requests after the first go out on its own HTTP client (``_direct``), built
from the request the ``openai`` SDK sent first: the same headers, and the same typed errors,
retries and messages as the SDK's path gives."""

from __future__ import annotations

from typing import Any

import openai
import pytest

from xai.exceptions import ProviderError
from xai.messages import UserMessage
from xai.providers import OpenAIProvider, ProviderEvent, ProviderRequest, TextChunk
from xai.testing import Delay, HttpError, OpenAIWireServer, Reply

pytestmark = pytest.mark.anyio

HELLO = ProviderRequest(messages=(UserMessage(content="hello"),))

_PER_REQUEST = {"content-length"}


async def collect(provider: OpenAIProvider) -> list[ProviderEvent]:
    return [event async for event in provider.stream(HELLO)]


def text_of(events: list[ProviderEvent]) -> str:
    return "".join(e.text for e in events if isinstance(e, TextChunk))


def headers_of(server: OpenAIWireServer, index: int) -> dict[str, str]:
    headers = server.chat_requests()[index].headers
    return {k: v for k, v in headers.items() if k not in _PER_REQUEST}


async def test_later_requests_carry_the_headers_and_body_the_sdk_sent_first(
    openai_server: OpenAIWireServer,
) -> None:
    openai_server.push(Reply(text="one"), Reply(text="two"), Reply(text="three"))
    config = openai_server.llm_config(extra_headers={"X-Team": "blue"})
    async with OpenAIProvider(config) as provider:
        assert [text_of(await collect(provider)) for _ in range(3)] == ["one", "two", "three"]
    first, *later = openai_server.chat_requests()
    assert first.headers["authorization"] == f"Bearer {config.api_key}"
    assert first.headers["x-team"] == "blue"
    for index in (1, 2):
        assert headers_of(openai_server, index) == headers_of(openai_server, 0)
    assert all(r.body == first.body for r in later)


async def test_a_new_api_key_is_sent_at_once(openai_server: OpenAIWireServer) -> None:
    openai_server.push(Reply(text="one"), Reply(text="two"), Reply(text="three"))
    async with openai_server.provider() as provider:
        await collect(provider)
        provider.client.api_key = "rotated-key"
        await collect(provider)
        await collect(provider)
    keys = [r.headers["authorization"] for r in openai_server.chat_requests()]
    assert keys[1:] == ["Bearer rotated-key", "Bearer rotated-key"]


async def test_an_injected_client_sends_every_request_itself(
    openai_server: OpenAIWireServer,
) -> None:
    openai_server.push(Reply(text="one"), Reply(text="two"))
    sent: list[str] = []
    client = openai.AsyncOpenAI(api_key="k", base_url=openai_server.base_url, max_retries=0)
    # The SDK builds every request anew: a header it adds per request shows each one.
    original = client.post

    async def post(*args: Any, **kwargs: Any) -> Any:
        sent.append(args[0])
        return await original(*args, **kwargs)

    client.post = post  # type: ignore[method-assign]
    try:
        provider = OpenAIProvider(openai_server.llm_config(), client=client)
        assert text_of(await collect(provider)) == "one"
        assert text_of(await collect(provider)) == "two"
    finally:
        await client.close()
    assert sent == ["/chat/completions", "/chat/completions"]


FAULTS = [
    HttpError(status=401, message="bad key"),
    HttpError(status=403),
    HttpError(status=400, message="bad shape"),
    HttpError(status=400, code="context_length_exceeded", message="maximum context length is 8"),
    HttpError(status=429, retry_after=0.01, message="slow down"),
    HttpError(status=500),
    HttpError(status=503, message="overloaded"),
]


def described(error: BaseException) -> tuple[type[BaseException], str, bool, Any]:
    assert isinstance(error, ProviderError)
    return type(error), str(error), error.retryable, error.status_code


@pytest.mark.parametrize("fault", FAULTS, ids=lambda f: f"{f.status}-{f.message or f.code}")
async def test_an_error_status_maps_as_the_sdks_did(
    openai_server: OpenAIWireServer, fault: HttpError
) -> None:
    """The first request's error (the SDK's path) against the same error on a later one."""
    openai_server.push(Reply(fault=fault), Reply(text="ok"), Reply(fault=fault))
    async with openai_server.provider(max_retries=0) as provider:
        with pytest.raises(ProviderError) as through_sdk:
            await collect(provider)  # the SDK sends the first request: no template yet
        assert text_of(await collect(provider)) == "ok"  # the template
        with pytest.raises(ProviderError) as direct:
            await collect(provider)
    assert described(direct.value) == described(through_sdk.value)
    if fault.status == 429:
        assert direct.value.retry_after == through_sdk.value.retry_after  # type: ignore[attr-defined]


async def test_a_retryable_status_on_a_direct_send_is_retried(
    openai_server: OpenAIWireServer,
) -> None:
    openai_server.push(
        Reply(text="first"),
        Reply(fault=HttpError(status=429, retry_after=0.01)),
        Reply(fault=HttpError(status=500)),
        Reply(text="recovered"),
    )
    async with openai_server.provider(max_retries=2) as provider:
        assert text_of(await collect(provider)) == "first"
        assert text_of(await collect(provider)) == "recovered"
    assert len(openai_server.chat_requests()) == 4


async def test_a_timeout_on_a_direct_send_is_the_sdks_timeout(
    openai_server: OpenAIWireServer,
) -> None:
    openai_server.push(
        Reply(fault=Delay(seconds=3)), Reply(text="ok"), Reply(fault=Delay(seconds=3))
    )
    async with openai_server.provider(timeout=0.3, max_retries=0) as provider:
        with pytest.raises(ProviderError) as through_sdk:
            await collect(provider)
        assert text_of(await collect(provider)) == "ok"
        with pytest.raises(ProviderError) as direct:
            await collect(provider)
    assert described(direct.value) == described(through_sdk.value)


async def test_a_refused_connection_on_a_direct_send_is_retried_then_typed() -> None:
    with OpenAIWireServer() as server:
        server.push(Reply(text="ok"))
        provider = server.provider(max_retries=1)
        assert text_of(await collect(provider)) == "ok"
    try:  # the server is gone: nothing listens on that port
        with pytest.raises(ProviderError, match="could not reach the model endpoint: Connect") as e:
            await collect(provider)
        assert type(e.value).__name__ == "ProviderConnectionError" and e.value.retryable
    finally:
        await provider.aclose()
