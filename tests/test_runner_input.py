"""Bad input to the runner and the command line: names that would leave their folder, files
that are too big or not files, undecodable text and JSON nested too deeply all end in a clear
error (exit code 2), never a traceback, a hang or a write outside ``--outdir``."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from xai.cli import main
from xai.core import load_scenario
from xai.exceptions import ConfigurationError
from xai.runner import MAX_PROMPT_BYTES, InputError, load_batch, load_input, validate_input

DEEP = b"[" * 100_000 + b"]" * 100_000
NOT_UTF8 = b'{"conversation_id": "caf\xe9"}'


def problems_of(data: dict[str, Any], base: Path) -> list[str]:
    with pytest.raises(InputError) as caught:
        validate_input(data, base)
    return caught.value.problems


@pytest.mark.parametrize("name", ["..", ".", "a/b", "../escape", "/abs", "x" * 65, "a\\b", ""])
def test_conversation_ids_are_plain_names(tmp_path: Path, name: str) -> None:
    problems = problems_of({"conversation_id": name, "user_input": "hi"}, tmp_path)
    assert any(p.startswith("conversation_id:") for p in problems), problems


def test_template_names_are_plain_names(tmp_path: Path) -> None:
    (tmp_path / "t.md").write_text("You are a poet.")
    problems = problems_of(
        {
            "conversation_id": "c1",
            "user_input": "hi",
            "prompt_templates": {"../../outside": "t.md", "ok": "t.md"},
        },
        tmp_path,
    )
    assert any("'../../outside' is not a plain name" in p for p in problems), problems


def test_a_dot_dot_id_writes_nothing_outside_the_outdir(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    batch = tmp_path / "in" / "batch.json"
    batch.parent.mkdir()
    batch.write_text(
        json.dumps({"common_config": {"toolset": "none"}, "tasks": [{"conversation_id": ".."}]})
    )
    out = tmp_path / "work" / "out"
    assert main(["batch", str(batch), "--outdir", str(out), "--fixture", str(tmp_path)]) == 2
    assert "tasks[0].conversation_id: use 1-64 letters" in capsys.readouterr().err
    assert not (tmp_path / "work").exists()


@pytest.mark.parametrize("kind", ["device", "too_big", "folder", "not_utf8"])
def test_prompt_files_are_capped_regular_utf8_files(tmp_path: Path, kind: str) -> None:
    path = tmp_path / "prompt.md"
    if kind == "device":
        os.symlink("/dev/zero", path)  # read whole, it never ends (MemoryError after 24 s)
        expected = "is not a regular file"
    elif kind == "too_big":
        path.write_bytes(b"x" * (MAX_PROMPT_BYTES + 1))
        expected = "is larger than 1 MiB (the limit)"
    elif kind == "folder":
        path.mkdir()
        expected = "is a folder"
    else:
        path.write_bytes(b"caf\xe9")
        expected = "is not UTF-8 text (byte 0xe9 at offset 3)"
    problems = problems_of(
        {"conversation_id": "c1", "user_input": "hi", "system_prompt_path": "prompt.md"},
        tmp_path,
    )
    assert problems == [f"system_prompt_path: {path}: the system prompt {expected}"]


@pytest.mark.parametrize("content", [DEEP, NOT_UTF8, b"{", b"\xff\xfe"])
def test_undecodable_input_files_are_input_errors(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "input.json"
    path.write_bytes(content)
    with pytest.raises(InputError) as caught:
        load_input(path)
    (problem,) = caught.value.problems
    assert "the input file" in problem and str(path) in str(caught.value)
    with pytest.raises(InputError):
        load_batch(path)


@pytest.mark.parametrize("command", ["run", "batch"])
@pytest.mark.parametrize("content", [DEEP, NOT_UTF8])
def test_the_runner_cli_exits_2_on_undecodable_input(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str, content: bytes
) -> None:
    path = tmp_path / "input.json"
    path.write_bytes(content)
    assert main([command, str(path), "--outdir", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("xai: invalid input:") and "Traceback" not in err
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    ("name", "content", "expected"),
    [
        ("deep.json", DEEP, "nested too deeply"),
        ("deep.yaml", DEEP, "nested too deeply"),
        ("latin1.yaml", b"scenario_id: caf\xe9\n", "is not UTF-8 text"),
        ("latin1.json", b'{"scenario_id": "caf\xe9"}', "is not valid JSON"),
        ("bad.yaml", b"scenario_id: [\n", "is not valid YAML"),
    ],
)
def test_ask_exits_2_with_one_line_for_an_undecodable_scenario(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str, content: bytes, expected: str
) -> None:
    path = tmp_path / name
    path.write_bytes(content)
    with pytest.raises(ConfigurationError, match=expected):
        load_scenario(path)
    assert main(["ask", "--scenario", str(path), "question?"]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and expected in err and str(path) in err


def test_ingest_refuses_a_document_that_is_a_device(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    os.symlink("/dev/zero", tmp_path / "zero.txt")
    code = main(
        [
            "ingest",
            "--scenario",
            "s1",
            "--knowledge-dir",
            str(tmp_path / "kb"),
            str(tmp_path / "zero.txt"),
        ]
    )
    assert code == 2
    assert "the document is not a regular file" in capsys.readouterr().err
