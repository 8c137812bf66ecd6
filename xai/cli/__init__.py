"""The ``xai`` command.

Exit codes: 0 success; 1 the run failed (a provider error, a failed turn); 2 bad usage or
configuration (no model configured, a directory that cannot be written, a port in use);
130 interrupted. Every error ends the command as one ``xai: ...`` line (``_errors``).
"""

from __future__ import annotations

import argparse
import io
import os
import sys
from pathlib import Path
from typing import TextIO, cast

import anyio

from xai import __version__
from xai.cli._errors import (
    EXIT_FAILED,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_USAGE,
    Explained,
    explain,
    single_error,
)
from xai.cli._render import Printer, Renderer, session_ended, turn_done
from xai.config import default_home, is_plain_name
from xai.exceptions import ConfigurationError
from xai.logs import configure_logging

__all__ = [
    "EXIT_FAILED",
    "EXIT_INTERRUPTED",
    "EXIT_OK",
    "EXIT_USAGE",
    "Explained",
    "Printer",
    "Renderer",
    "default_home",
    "explain",
    "main",
    "session_ended",
    "single_error",
    "turn_done",
]


class _Stderr(io.TextIOBase):
    """``sys.stderr`` as it is when a line is written: ``main`` may run inside a program that
    swaps it (a test capturing output), and log lines must not go to a stream it closed."""

    def write(self, text: str) -> int:
        return sys.stderr.write(text)

    def flush(self) -> None:
        sys.stderr.flush()

    def isatty(self) -> bool:
        return sys.stderr.isatty()


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="xai",
        description="LLM agents that live inside your application's event loop.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=(
            "configuration:\n"
            "  LLM_API_KEY, LLM_BASE_URL, LLM_MODEL      the chat model (any OpenAI-compatible API)\n"
            "  EMBEDDING_MODEL (+ EMBEDDING_API_KEY, EMBEDDING_BASE_URL)\n"
            "                                            an embeddings endpoint; else a local model\n"
            "  XAI_HOME                                  where Agents live (default ~/.local/share/xai)\n"
            "\n"
            "exit codes: 0 ok, 1 the run failed, 2 bad usage or configuration, 130 interrupted"
        ),
    )
    parser.add_argument("--version", action="version", version=f"xai {__version__}")
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--log-format", choices=("console", "json"), default="console", help="log line format"
    )
    common.add_argument(
        "--log-level",
        help="debug, info, warning, error (default: warning; error for chat, whose REPL shows "
        "each problem once itself)",
    )
    common.add_argument(
        "--agent-dir", type=Path, help="the Agent's directory (default: under $XAI_HOME)"
    )
    common.add_argument("--model", help="override LLM_MODEL")
    common.add_argument("--base-url", help="override LLM_BASE_URL")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.add_parser(
        "demo",
        parents=[common],
        help="a guided tour of an Agent (offline unless LLM_* is set)",
        description="Run a non-interactive tour of a whole Agent: a Session with a tool call, "
        "memory adjudicated into chromadb, a second Session that remembers, delegation and "
        "a wake-up. Offline by default; run it twice to see memory persist.",
    )
    chat = sub.add_parser(
        "chat",
        parents=[common],
        help="talk to a persistent Agent in a REPL",
        description="A REPL holding one persistent Agent. Ctrl-C cancels the running answer, "
        "Ctrl-D or /quit leaves (the conversation is remembered first). /help lists commands.",
    )
    chat.add_argument("--agent", default="default", help="the Agent's name (default: default)")
    chat.add_argument(
        "--approve",
        metavar="TOOLS",
        help="calls of these tools (comma-separated, or 'all') wait for you: /approve, /deny",
    )
    ingest = sub.add_parser(
        "ingest",
        parents=[common],
        help="add documents to a scenario's knowledge (RAG)",
        description="Chunk, embed and store text/markdown files for a scenario. Re-ingesting a "
        "file replaces its chunks.",
    )
    ingest.add_argument("--scenario", required=True, help="scenario id, or a scenario file")
    ingest.add_argument("--knowledge-dir", type=Path, help="default: $XAI_HOME/knowledge")
    ingest.add_argument("files", nargs="+", type=Path, metavar="FILE")
    ask = sub.add_parser(
        "ask",
        parents=[common],
        help="run a scenario once: run_agent(scenario, question)",
        description="Answer a question with a scenario (RAG, tools, structured output) and print "
        "the answer, references and tool calls.",
    )
    ask.add_argument(
        "--scenario", required=True, help="a scenario file, or an id under $XAI_HOME/scenarios"
    )
    ask.add_argument("--documents", help="comma-separated document ids to search (default: all)")
    ask.add_argument("--knowledge-dir", type=Path, help="default: $XAI_HOME/knowledge")
    ask.add_argument("--json", action="store_true", help="print the whole AgentResult as JSON")
    ask.add_argument("question")
    for name, text in (
        ("run", "run a runtime input file (a batch file too) into artifacts"),
        ("batch", "run a batch file: every task concurrently, each into its own folder"),
    ):
        runner = sub.add_parser(
            name,
            parents=[common],
            help=text,
            description=text + ". Exit codes: 0 finished (business errors are in the "
            "artifacts), 1 fatal error, 2 invalid input.",
        )
        runner.add_argument("input", type=Path, metavar="INPUT.json")
        runner.add_argument("--outdir", type=Path, required=True)
        runner.add_argument("--concurrency", type=int, default=4, help="batch: tasks at once")
        if name == "run":
            runner.add_argument("--resume", action="store_true", help="continue a crashed run")
        runner.add_argument("--fixture", help="fixture folder (replay, no model)")
    from xai.cli._doctor import add_doctor_parser
    from xai.cli._eval import add_eval_parser
    from xai.cli._mcp import add_mcp_parser
    from xai.cli._serve import add_serve_parser

    add_doctor_parser(sub, common)
    add_eval_parser(sub, common)
    add_mcp_parser(sub, common)
    add_serve_parser(sub, common)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return EXIT_USAGE
    try:
        stream = cast(TextIO, _Stderr())  # the TextIO a logger needs: write, flush, isatty
        # In the REPL a warning would land mid-conversation, and the REPL already says what
        # is wrong (once): its logs start at errors unless asked for.
        args.log_level = args.log_level or ("error" if args.command == "chat" else "warning")
        configure_logging(args.log_format, level=args.log_level, stream=stream)
    except ConfigurationError as exc:
        print(f"xai: {exc}", file=sys.stderr)
        return EXIT_USAGE
    if args.model:
        os.environ["LLM_MODEL"] = args.model
    if args.base_url:
        os.environ["LLM_BASE_URL"] = args.base_url
    try:
        return _run(args)
    except (Exception, KeyboardInterrupt, BaseExceptionGroup) as error:
        explained = explain(error)
        if explained is None:  # a bug of xai: say what, and how to see where
            if args.log_level.lower() == "debug":
                raise
            cause = single_error(error)
            explained = Explained(
                f"unexpected error: {type(cause).__name__}: {cause} "
                "(run with --log-level debug to see where)",
                EXIT_FAILED,
            )
        if explained.message:
            print(f"xai: {explained.message}", file=sys.stderr)
        return explained.code


def _run(args: argparse.Namespace) -> int:
    """Run the subcommand; every error is the caller's to explain."""
    if args.command == "demo":
        from xai.cli._demo import run_demo

        directory = args.agent_dir or default_home() / "demo-agent"
        return anyio.run(run_demo, directory.expanduser())
    if args.command in ("run", "batch"):
        from xai.cli._runner import run_command

        return run_command(args)
    if args.command in ("ingest", "ask"):
        from xai.cli._rag import ask_command, ingest_command

        return ingest_command(args) if args.command == "ingest" else ask_command(args)
    if args.command == "doctor":
        from xai.cli._doctor import doctor_command

        return doctor_command(args)
    if args.command == "eval":
        from xai.cli._eval import eval_command

        return eval_command(args)
    if args.command == "mcp":
        from xai.cli._mcp import mcp_command

        return mcp_command(args, default_home() / "agents" / "mcp")
    if args.command == "serve":
        from xai.cli._serve import serve_command

        return serve_command(args)
    if args.command == "chat":
        from xai.cli._repl import run_chat

        if not is_plain_name(args.agent):
            raise ConfigurationError(
                f"--agent {args.agent!r}: use 1-64 letters, digits, '_', '.' or '-'"
            )
        directory = args.agent_dir or default_home() / "agents" / args.agent
        return anyio.run(run_chat, directory.expanduser(), args.approve)
    raise ConfigurationError(f"unknown command {args.command!r}")  # pragma: no cover
