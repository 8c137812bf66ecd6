"""The ``xai`` command."""

from __future__ import annotations

import argparse
import sys

import anyio

from xai import __version__
from xai.logs import configure_logging

__all__ = ["main"]

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="xai",
        description="LLM agents that live inside your application's event loop.",
        epilog="Configuration comes from LLM_API_KEY, LLM_BASE_URL and LLM_MODEL. "
        "Exit codes: 0 success, 1 the run failed, 2 bad usage.",
    )
    parser.add_argument("--version", action="version", version=f"xai {__version__}")
    parser.add_argument(
        "--log-format", choices=("console", "json"), default="console", help="log line format"
    )
    parser.add_argument(
        "--log-level", default="warning", help="debug, info, warning (default), error"
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.add_parser(
        "demo",
        help="a tour of a Query with a tool call (offline unless LLM_* is set)",
        description="Run a Query with a tool call and stream its events. Offline by default.",
    )
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return EXIT_USAGE
    configure_logging(args.log_format, level=args.log_level)
    if args.command == "demo":
        from xai._demo import run_demo

        try:
            return anyio.run(run_demo)
        except KeyboardInterrupt:
            return EXIT_FAILED
    parser.error(f"unknown command {args.command!r}")  # pragma: no cover


if __name__ == "__main__":
    sys.exit(main())
