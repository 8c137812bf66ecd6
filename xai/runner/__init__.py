"""The file-driven runner (``xai run`` / ``xai batch``). So far: its ``basic_tools`` toolset."""

from xai.runner._basic_tools import Sandbox, basic_tools, convert_format, safe_calculate

__all__ = ["Sandbox", "basic_tools", "convert_format", "safe_calculate"]
