"""docs/migrating.md: the same program for the OpenAI Agents SDK, Pydantic AI and xai; the
xai one is the one the page runs offline, and prints what the page says."""

from __future__ import annotations

import contextlib
import io
import os
import re

from tests.doc_snippets import ROOT, snippets

PAGE = ROOT / "docs" / "migrating.md"
_PY = re.compile(r"^```py\n(.*?)^```$", re.DOTALL | re.MULTILINE)


def side_by_side() -> list[str]:
    return _PY.findall(PAGE.read_text(encoding="utf-8"))


def test_the_page_shows_the_program_in_all_three() -> None:
    agents_sdk, pydantic_ai, xai = side_by_side()
    assert "Runner.run_sync(" in agents_sdk and "from agents import" in agents_sdk
    assert ".run_sync(" in pydantic_ai and "from pydantic_ai import" in pydantic_ai
    assert "ask_sync(" in xai and "async" not in xai
    text = PAGE.read_text(encoding="utf-8")
    for promise in ("Durable Sessions", "Memory with provenance", "Wake-ups", "A test server"):
        assert f"**{promise}.**" in text


def test_the_xai_program_is_the_one_that_runs_offline() -> None:
    *_, shown = side_by_side()
    (runnable,) = snippets(PAGE)
    # Every line of the program shown beside the others is in the offline one, except the
    # model string (offline, LLM_BASE_URL points at the scripted model instead).
    offline = {line.strip() for line in runnable.code.splitlines()}  # it runs in a `with`
    missing = [
        line
        for line in shown.splitlines()
        if line.strip() and "model=" not in line and line.strip() not in offline
    ]
    assert not missing, missing


def test_the_offline_program_prints_what_the_page_says() -> None:
    (runnable,) = snippets(PAGE)
    promised = [
        line.strip().removeprefix("# ")
        for line in runnable.code.split("print(reply.text)", 1)[1].splitlines()
        if line.strip().startswith("#")
    ]
    saved = dict(os.environ)
    out = io.StringIO()
    try:
        with contextlib.redirect_stdout(out):
            exec(compile(runnable.code, runnable.name, "exec"), {"__name__": "__main__"})
    finally:
        os.environ.clear()
        os.environ.update(saved)
    assert out.getvalue().splitlines() == promised
    assert promised[0] == "Here is what I found:"  # the tool ran for both cities
