"""What a streamed answer costs the provider per event, and the whole-request limit that
no longer costs a cancel scope per event (issue 35).

The real ``openai`` client against the wire server: the number of cancel scopes the
provider and the Query open for one answer does not grow with the answer's length, and
the limit still cuts an answer that keeps trickling, both while a read could outlast it
from the first byte and when it only could near the end.
"""

from __future__ import annotations

import sys
from typing import Any

import anyio
import pytest

from tests.session_helpers import history_problems
from xai.messages import StopReason
from xai.providers import RetryPolicy
from xai.query import Query
from xai.testing import OpenAIWireServer, Reply

pytestmark = pytest.mark.anyio


class _Counted:
    """``anyio.move_on_after`` and ``anyio.fail_after`` called from xai's own code, counted
    (then the real ones). httpcore opens one per network read, and how many reads an answer
    takes depends on how the socket coalesced its writes: not counted."""

    def __init__(self) -> None:
        self.calls = 0
        self.move_on_after = anyio.move_on_after
        self.fail_after = anyio.fail_after

    def _count(self) -> None:
        caller = sys._getframe(2).f_globals.get("__name__", "")
        if caller == "xai" or caller.startswith("xai."):
            self.calls += 1

    def counted_move_on_after(self, *args: Any, **kwargs: Any) -> anyio.CancelScope:
        self._count()
        return self.move_on_after(*args, **kwargs)

    def counted_fail_after(self, *args: Any, **kwargs: Any) -> Any:
        self._count()
        return self.fail_after(*args, **kwargs)


@pytest.fixture
def scopes(monkeypatch: pytest.MonkeyPatch) -> _Counted:
    counted = _Counted()
    monkeypatch.setattr(anyio, "move_on_after", counted.counted_move_on_after)
    monkeypatch.setattr(anyio, "fail_after", counted.counted_fail_after)
    return counted


async def test_cancel_scopes_per_answer_do_not_grow_with_its_length(
    openai_server: OpenAIWireServer, scopes: _Counted
) -> None:
    provider = openai_server.provider(retry=RetryPolicy(max_retries=0), timeout=5.0)
    async with provider:
        query = Query(provider)
        counts = []
        for chunks in (4, 200):
            openai_server.push(Reply(text="x" * chunks, text_chunks=chunks))
            before = scopes.calls
            result = await query.run([], "Say x.")
            assert result.stop_reason is StopReason.END_TURN and result.text == "x" * chunks
            counts.append(scopes.calls - before)
    assert counts[0] == counts[1], f"cancel scopes for 4 and 200 chunks: {counts}"


@pytest.mark.parametrize(
    ("read_timeout", "limit"),
    [
        (5.0, 0.3),  # a read could outlast the limit from the start: every read is bounded
        (0.2, 0.6),  # it could only in the last 0.2 s: reads before go unbounded
    ],
)
async def test_a_runaway_answer_is_cut_at_the_request_limit_either_way(
    openai_server: OpenAIWireServer, read_timeout: float, limit: float
) -> None:
    openai_server.runaway = True
    provider = openai_server.provider(
        retry=RetryPolicy(max_retries=0), timeout=read_timeout, request_limit=limit
    )
    async with provider:
        result = await Query(provider).run([], "Tell me a story.")
    assert result.stop_reason is StopReason.ERROR and result.error is not None
    assert result.error.type == "ProviderTimeoutError" and "request limit" in result.error.message
    assert result.text.startswith("and then ")  # what came is kept
    assert history_problems(result.messages) == []
