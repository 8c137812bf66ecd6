"""What the library keeps per text it has seen stays small (issue 29: an evaluation's RSS
grew question after question)."""

from __future__ import annotations

import gc
import tracemalloc

import openai
import pytest

from xai.memory import LocalMiniLM
from xai.testing import OpenAIWireServer, Reply

pytestmark = pytest.mark.anyio

TEXTS = [
    f"Note {i}: the {i % 7}th train to Porto leaves at {i % 24}:{i % 60:02d}." for i in range(200)
]


def test_the_embedders_cache_keeps_a_vector_in_its_32_bit_floats() -> None:
    """A cached vector took 15 KB as a list of Python floats (a full cache of 4,096: 60 MiB,
    filled over an evaluation's first hundred questions); as 32-bit floats it takes 1.6 KB,
    and the floats given back are the model's, bit for bit."""
    model = LocalMiniLM()
    model.embed_sync(["warm up"])  # the model and its sessions loaded before measuring
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        vectors = model.embed_sync(TEXTS)
        del vectors
        gc.collect()
        kept = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert kept / len(TEXTS) < 4_000  # bytes a text: its key, its vector, the cache's node
    uncached = LocalMiniLM(cache_size=0)
    assert model.embed_sync(TEXTS[:20]) == uncached.embed_sync(TEXTS[:20])  # from the cache
    assert all(type(x) is float for x in model.embed_sync(TEXTS[:1])[0])


@pytest.mark.xai_allow_invalid_requests  # one broken request, on purpose
async def test_a_server_told_not_to_keep_requests_answers_and_keeps_none() -> None:
    with OpenAIWireServer(keep_requests=False) as server:
        client = openai.AsyncOpenAI(base_url=server.base_url, api_key="test-key")
        try:
            for n in range(3):
                server.push(Reply(text=f"answer {n}"))
                done = await client.chat.completions.create(
                    model=server.model, messages=[{"role": "user", "content": f"hi {n}"}]
                )
                assert done.choices[0].message.content == f"answer {n}"
            with pytest.raises(openai.BadRequestError):  # a broken request is still caught
                await client.chat.completions.create(model=server.model, messages=[])
        finally:
            await client.close()
        assert server.requests == []
        assert len(server.violations) == 1
