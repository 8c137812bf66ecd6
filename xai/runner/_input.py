"""The runner's input file: every problem reported at once, each naming its field.

Every file an input names is read with a cap (``MAX_INPUT_BYTES`` for input and batch
files, ``MAX_PROMPT_BYTES`` for prompt files) and must be a regular UTF-8 file; the
``conversation_id`` must be a plain name (it becomes a folder).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

import msgspec

from xai._reading import MiB, decode_json, read_capped, read_text_capped
from xai.config import is_plain_name
from xai.core import OrchestratorName
from xai.exceptions import ConfigurationError, InputError
from xai.tools import MCPServerConfig

__all__ = [
    "MAX_INPUT_BYTES",
    "MAX_PROMPT_BYTES",
    "InputError",
    "RunInput",
    "load_input",
    "read_input_file",
    "validate_input",
]

MAX_INPUT_BYTES = 16 * MiB
"""The largest input or batch file the runner reads."""
MAX_PROMPT_BYTES = 1 * MiB
"""The largest ``system_prompt_path`` or ``prompt_templates`` file the runner reads."""

TEMPLATE_NAMES = ("general_tool_agent", "file_expert", "calculation_expert", "conversion_expert")


class RunInput(msgspec.Struct, frozen=True, kw_only=True):
    """A validated runtime input, paths already resolved against the input file's folder."""

    conversation_id: str
    user_inputs: list[str]
    system_prompt: str | None = None
    toolset: Literal["none", "basic_tools"] = "basic_tools"
    tool_root: str
    max_turns: int = 8
    save_memory: Literal["none", "conversation", "global"] = "none"
    selected_memory_ids: list[str] = msgspec.field(default_factory=list)
    use_global_memory: bool = False
    execution_mode: Literal["integrated", "fixture"] = "integrated"
    fixture_dir: str | None = None
    compression_enabled: bool = True
    max_context_tokens: int = 32_000
    prompt_mode: Literal["single", "auto", "compare"] = "single"
    prompt_template: str = "general_tool_agent"
    prompt_templates: dict[str, str] = msgspec.field(default_factory=dict)
    """Template name → template text (built-ins plus any given as files)."""
    auto_prompt_map: dict[str, list[str]] = msgspec.field(default_factory=dict)
    mcp_servers: list[MCPServerConfig] = msgspec.field(default_factory=list)
    """MCP servers whose tools join the toolset (integrated mode; a fixture run replays)."""
    orchestrator: OrchestratorName = "lightweight"
    """Who runs the loop: xai's Session (``lightweight``) or a peer (docs/adapters.md)."""


# field -> (type, default). Validated one by one so that every problem is reported.
_FIELDS: dict[str, tuple[Any, Any]] = {
    "conversation_id": (str, msgspec.UNSET),
    "user_input": (str | None, None),
    "user_inputs": (list[str] | None, None),
    "system_prompt_path": (str | None, None),
    "toolset": (Literal["none", "basic_tools"], "basic_tools"),
    "tool_root": (str | None, None),
    "max_turns": (int, 8),
    "save_memory": (Literal["none", "conversation", "global"], "none"),
    "selected_memory_ids": (list[str], []),
    "use_global_memory": (bool, False),
    "execution_mode": (Literal["integrated", "fixture"], "integrated"),
    "fixture_dir": (str | None, None),
    "compression_enabled": (bool, True),
    "max_context_tokens": (int, 32_000),
    "prompt_mode": (Literal["single", "auto", "compare"], "single"),
    "prompt_template": (str, "general_tool_agent"),
    "prompt_templates": (dict[str, str], {}),
    "auto_prompt_map": (dict[str, list[str]], {}),
    "mcp_servers": (list[MCPServerConfig], []),
    "orchestrator": (OrchestratorName, "lightweight"),
}


def validate_input(
    data: Any, base: Path, *, origin: str = "input", fixture: str | None = None
) -> RunInput:
    """Check every field; raise ``InputError`` listing all problems (nothing is written)."""
    from xai.runner._templates import builtin_templates

    if not isinstance(data, dict):
        raise InputError(origin, ["the input must be a JSON object"])
    problems: list[str] = []
    values: dict[str, Any] = {}
    for key in data:
        if key not in _FIELDS and key not in ("tasks", "common_config"):
            problems.append(f"{key}: unknown field (known: {', '.join(sorted(_FIELDS))})")
    for name, (type_, default) in _FIELDS.items():
        if name not in data:
            if default is msgspec.UNSET:
                problems.append(f"{name}: required")
            values[name] = default
            continue
        try:
            values[name] = msgspec.convert(data[name], type_)
        except msgspec.ValidationError as exc:
            problems.append(f"{name}: {exc}")
            values[name] = default
    if isinstance(values["conversation_id"], str) and not is_plain_name(values["conversation_id"]):
        problems.append(
            "conversation_id: use 1-64 letters, digits, '_', '.' or '-' (not '.' or '..')"
        )
    single, many = values["user_input"], values["user_inputs"]
    if (single is None) == (many is None):
        problems.append("user_input / user_inputs: give exactly one of them")
    inputs = [single] if single is not None else list(many or [])
    if single is not None or many is not None:
        if not inputs:
            problems.append("user_inputs: must not be empty")
        for i, text in enumerate(inputs):
            if not str(text).strip():
                field = "user_input" if single is not None else f"user_inputs[{i}]"
                problems.append(f"{field}: must not be empty")
    if isinstance(values["max_turns"], int) and not 1 <= values["max_turns"] <= 100:
        problems.append("max_turns: must be between 1 and 100")
    if isinstance(values["max_context_tokens"], int) and values["max_context_tokens"] < 1000:
        problems.append("max_context_tokens: must be at least 1000")

    def resolve(field: str, value: str) -> Path:
        path = Path(value).expanduser()
        return path if path.is_absolute() else base / path

    system_prompt = None
    if values["system_prompt_path"]:
        path = resolve("system_prompt_path", values["system_prompt_path"])
        try:
            system_prompt = read_text_capped(path, MAX_PROMPT_BYTES, what="the system prompt")
        except ConfigurationError as exc:
            problems.append(f"system_prompt_path: {exc}")
    tool_root = resolve("tool_root", values["tool_root"]) if values["tool_root"] else base
    if not tool_root.is_dir():
        problems.append(f"tool_root: {tool_root} is not a folder")
    templates = builtin_templates()
    for name, value in values["prompt_templates"].items():
        if not is_plain_name(name):
            # A template's name becomes a folder (compare/NAME, the checkpoint's session-NAME).
            problems.append(
                f"prompt_templates: {name!r} is not a plain name "
                "(1-64 letters, digits, '_', '.' or '-'; not '.' or '..')"
            )
            continue
        path = resolve(f"prompt_templates.{name}", value)
        try:
            templates[name] = read_text_capped(path, MAX_PROMPT_BYTES, what="the template")
        except ConfigurationError as exc:
            problems.append(f"prompt_templates.{name}: {exc}")
    if values["prompt_template"] not in templates:
        problems.append(
            f"prompt_template: unknown template {values['prompt_template']!r} "
            f"(known: {', '.join(sorted(templates))})"
        )
    for name in values["auto_prompt_map"]:
        if name not in templates:
            problems.append(f"auto_prompt_map.{name}: no such template")
    if fixture:  # --fixture: a fixture run, whatever the file says
        values["execution_mode"] = "fixture"
    fixture_dir = fixture or values["fixture_dir"]
    if values["execution_mode"] == "fixture":
        if not fixture_dir:
            problems.append("fixture_dir: fixture mode needs a fixture folder (or --fixture)")
        elif not resolve("fixture_dir", fixture_dir).is_dir():
            problems.append(f"fixture_dir: {resolve('fixture_dir', fixture_dir)} is not a folder")
    if values["orchestrator"] != "lightweight":
        # A peer answers each input with one run_agent call: the Session's features stay
        # with the lightweight orchestrator.
        peer = values["orchestrator"]
        for field, default in (
            ("execution_mode", "integrated"),
            ("prompt_mode", "single"),
            ("save_memory", "none"),
            ("use_global_memory", False),
            ("selected_memory_ids", []),
        ):
            if values[field] != default:
                problems.append(
                    f"{field}: the {peer!r} orchestrator runs with {field} {default!r} only "
                    "(the Session's features stay with 'lightweight')"
                )
    if problems:
        raise InputError(origin, problems)
    return RunInput(
        conversation_id=values["conversation_id"],
        user_inputs=inputs,
        system_prompt=system_prompt,
        toolset=values["toolset"],
        tool_root=str(tool_root),
        max_turns=values["max_turns"],
        save_memory=values["save_memory"],
        selected_memory_ids=values["selected_memory_ids"],
        use_global_memory=values["use_global_memory"],
        execution_mode=values["execution_mode"],
        fixture_dir=str(resolve("fixture_dir", fixture_dir)) if fixture_dir else None,
        compression_enabled=values["compression_enabled"],
        max_context_tokens=values["max_context_tokens"],
        prompt_mode=values["prompt_mode"],
        prompt_template=values["prompt_template"],
        prompt_templates=templates,
        auto_prompt_map=values["auto_prompt_map"],
        mcp_servers=values["mcp_servers"],
        orchestrator=values["orchestrator"],
    )


def read_input_file(path: Path) -> Any:
    """The decoded JSON of an input or batch file; any reason it cannot be is an
    ``InputError`` (too big, not a file, not UTF-8, not JSON, nested too deeply)."""
    try:
        what = "the input file"
        return decode_json(read_capped(path, MAX_INPUT_BYTES, what=what), path, what=what)
    except ConfigurationError as exc:
        raise InputError(str(path), [str(exc).removeprefix(f"{path}: ")]) from None


def load_input(path: str | Path, *, fixture: str | None = None) -> RunInput:
    path = Path(path)
    data = read_input_file(path)
    return validate_input(data, path.parent.resolve(), origin=str(path), fixture=fixture)
