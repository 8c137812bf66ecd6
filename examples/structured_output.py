"""Structured output: ask for a msgspec type, get it parsed — or the raw text and the error.

Offline by default (xai's OpenAI-wire test server plays a model whose first
answer is broken JSON, so the repair retry shows); set LLM_* for a real model.

    python examples/structured_output.py
"""

from __future__ import annotations

import anyio
import msgspec

from xai import LLMConfig, OpenAIProvider, UserMessage
from xai.structured import ask_structured
from xai.testing import OpenAIWireServer, Reply


class Ticket(msgspec.Struct):
    title: str
    priority: int
    tags: list[str]


async def main() -> None:
    config = LLMConfig.from_env()
    server = None
    if not config.is_configured:
        server = OpenAIWireServer(
            [
                Reply(text='{"title": "Login fails", "priority": "high"'),  # broken on purpose
                Reply(text='{"title": "Login fails", "priority": 1, "tags": ["auth", "web"]}'),
            ]
        ).start()
        config = server.llm_config()
    try:
        async with OpenAIProvider(config) as provider:
            question = UserMessage(content="File a ticket: users cannot log in on the website.")
            parsed, result = await ask_structured(provider, [question], Ticket)
        print(f"requests: {result.usage.requests}, parsed ok: {parsed.ok}")
        print(f"value: {parsed.value}")
        if not parsed.ok:
            print(f"error: {parsed.error}\nraw: {parsed.raw}")
    finally:
        if server is not None:
            server.stop()


if __name__ == "__main__":
    anyio.run(main)
