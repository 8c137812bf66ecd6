"""Forget scopes over HTTP (issue 29): ``DELETE /agents/ID/facts/FACT?scope=`` carries the
host API's ``Forget.scope`` (so Ray's gateway gets it too); ``erase`` leaves the sentence in
no file of the Agent. Real HTTP on 127.0.0.1, an ``AgentHost``, real chromadb and MiniLM."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from tests.serve_helpers import listening
from tests.session_helpers import extraction_responder
from tests.test_agent import echo, judge_adds
from tests.test_memory_forget_scopes import files_holding
from tests.test_serve import open_session, read
from tests.test_serve_idempotency import inputs_until
from xai.agent import AgentHost, ReadAgentEvents
from xai.events import MemoryDecided
from xai.providers import OpenAIProvider
from xai.serve import create_app
from xai.testing import OpenAIWireServer

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(180)]

SECRET = "My locker code is 4417 at the Ghent gym."


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # uvicorn serves on asyncio only


async def test_forget_scopes_over_http_and_erase_leaves_no_file_holding_it(
    tmp_path: Path, openai_server: OpenAIWireServer, provider: OpenAIProvider
) -> None:
    for responder in (extraction_responder, judge_adds, echo):
        openai_server.script.add_responder(responder)
    async with (
        AgentHost(tmp_path, lambda _: provider) as host,
        listening(create_app(host)) as url,
        httpx.AsyncClient(base_url=url, timeout=60) as client,
    ):
        session = await open_session(client)
        events = await host.stream(ReadAgentEvents(agent_id="ada"))
        path = f"/agents/ada/sessions/{session}"
        sent = await client.post(path + "/messages", json={"text": SECRET})
        assert sent.status_code == 202, sent.text
        await read(client, path + "/events", inputs_until(SECRET))  # the turn is done
        assert (await client.delete(path)).status_code < 300
        async for event in events:  # the Session's point, adjudicated on its close
            if isinstance(event.event, MemoryDecided):
                break
        [fact] = (await client.get("/agents/ada/facts")).json()
        where = f"/agents/ada/facts/{fact['id']}"
        bad = await client.delete(where + "?scope=everything")
        assert bad.status_code == 400 and "scope" in bad.json()["message"]
        first = await client.delete(where + "?scope=evidence")
        assert first.status_code == 200 and first.json()["forget_scope"] == "evidence"
        assert (await client.delete(where + "?scope=fact")).status_code == 404  # narrower
        assert files_holding(tmp_path / "ada", SECRET)  # evidence: out of search, on disk
        erased = await client.delete(where + "?scope=erase")
        assert erased.status_code == 200, erased.text
        assert erased.json()["text"].startswith("[erased sha256:")
        # the host's shared chromadb (beside the Agents' directories) included
        assert files_holding(tmp_path, SECRET) == []
        assert files_holding(tmp_path, "locker code") == []
        assert (await client.delete(where + "?scope=erase")).status_code == 404
