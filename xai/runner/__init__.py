"""The file-driven runner: ``xai run`` / ``xai batch`` over the Session core, with artifacts,
fixture replay, multi-turn input, resume from the Session journal and prompt modes."""

from xai.runner._basic_tools import MAX_LISTED, MAX_READ_CHARS, basic_tools, convert_format
from xai.runner._batch import is_batch, load_batch, run_batch
from xai.runner._calculator import safe_calculate
from xai.runner._fixture import MAX_FIXTURE_BYTES, Fixture, load_fixture
from xai.runner._input import (
    MAX_INPUT_BYTES,
    MAX_PROMPT_BYTES,
    InputError,
    RunInput,
    load_input,
    validate_input,
)
from xai.runner._memory import RunnerMemory
from xai.runner._run import RunReport, run_input, write_atomic
from xai.runner._sandbox import MAX_LINK_SCAN, MAX_TOOL_FILE_BYTES, Sandbox
from xai.runner._templates import builtin_templates, choose_template

__all__ = [
    "MAX_FIXTURE_BYTES",
    "MAX_INPUT_BYTES",
    "MAX_LINK_SCAN",
    "MAX_LISTED",
    "MAX_PROMPT_BYTES",
    "MAX_READ_CHARS",
    "MAX_TOOL_FILE_BYTES",
    "Fixture",
    "InputError",
    "RunInput",
    "RunReport",
    "RunnerMemory",
    "Sandbox",
    "basic_tools",
    "builtin_templates",
    "choose_template",
    "convert_format",
    "is_batch",
    "load_batch",
    "load_fixture",
    "load_input",
    "run_batch",
    "run_input",
    "safe_calculate",
    "validate_input",
    "write_atomic",
]
