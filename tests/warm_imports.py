"""What the fork server of ``tests/warm_python.py`` (and of the kill campaigns) imports once,
before it forks: xai's layers and the heavy dependencies an example, a doc page or a
campaign life imports when it starts (the openai SDK, numpy, onnxruntime and the tokenizer
of the offline model, chromadb). Imported for their side effect; nothing here runs."""

from __future__ import annotations

import importlib

for _name in (
    "openai",
    "numpy",
    "onnxruntime",
    "tokenizers",
    "chromadb",
    "pydantic",
    "xai",
    "xai.agent",
    "xai.core",
    "xai.memory",
    "xai.providers",
    "xai.runner",
    "xai.session",
    "xai.structured",
    "xai.testing",
    "xai.tools",
    "tests.campaign_child",
    "tests.stream_campaign_child",
):
    importlib.import_module(_name)
