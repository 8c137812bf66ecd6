"""``GET /agents/{id}/mood``: the host API's ``GetMood`` over HTTP (issue 30), real HTTP on
127.0.0.1 against the scripted OpenAI-wire model."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from tests.test_serve import gateway, open_session, read, scripted, turns_done
from xai.agent import GetMood, MoodView
from xai.providers import OpenAIProvider
from xai.testing import OpenAIWireServer

pytestmark = pytest.mark.anyio
__all__ = ["scripted"]  # the fixture, used by name


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # uvicorn serves on asyncio only


async def test_the_mood_route_answers_the_host_apis_get_mood(
    tmp_path: Path, scripted: OpenAIWireServer, provider: OpenAIProvider
) -> None:
    async with gateway(tmp_path, provider) as (client, host):
        assert (await client.get("/agents/nobody/mood")).status_code == 404  # no read creates
        session = await open_session(client)
        path = f"/agents/ada/sessions/{session}"
        said = "This is awful, I hate that everything keeps breaking."
        assert (await client.post(path + "/messages", json={"text": said})).status_code == 202
        with anyio.fail_after(30):  # a guard against a hang, not a wait
            await read(client, path + "/events", turns_done(1))
        assert (await client.delete(path)).status_code in (200, 204)
        answer = await client.get("/agents/ada/mood", params={"limit": 10})
        assert answer.status_code == 200, answer.text
        view = answer.json()
        assert view["enabled"] and view["user"]["valence"] < 0
        (entry,) = view["history"]
        assert entry["session_id"] == session and {d["who"] for d in entry["deltas"]} == {
            "user",
            "agent",
        }
        direct = await host.call(GetMood(agent_id="ada"))
        assert isinstance(direct, MoodView) and direct.user.valence == pytest.approx(
            view["user"]["valence"], abs=1e-4
        )
        assert (await client.get("/agents/ada/mood?limit=x")).status_code == 400
