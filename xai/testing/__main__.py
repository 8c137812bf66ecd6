"""``python -m xai.testing serve [--script FILE] [--demo]``: run the OpenAI-wire test server."""

from __future__ import annotations

import argparse
import errno
import signal
import sys
import threading
from pathlib import Path

import msgspec

from xai.testing._script import Script
from xai.testing._server import OpenAIWireServer


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m xai.testing",
        description="Serve scripted OpenAI-compatible replies on this machine.",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    serve = sub.add_parser("serve", help="run the OpenAI-wire test server until interrupted")
    serve.add_argument(
        "--script", type=Path, help="JSON file with a Script (replies, rules, default)"
    )
    serve.add_argument(
        "--demo",
        action="store_true",
        help="answer as `xai demo`'s scripted model (memory extraction included), "
        "after the script's rules and before its queued replies",
    )
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=int, default=0, help="0 picks a free port (default)")
    serve.add_argument("--model", default="xai-scripted")
    serve.add_argument("--api-key", help="demand this key from clients")
    serve.add_argument(
        "--no-validate",
        action="store_true",
        help="take chat requests that break the Chat Completions rules (default: answer 400)",
    )
    args = parser.parse_args(argv)

    script = None
    if args.script is not None:
        try:
            script = msgspec.json.decode(args.script.read_bytes(), type=Script)
        except (OSError, msgspec.DecodeError, msgspec.ValidationError) as exc:
            print(f"error: cannot load script {args.script}: {exc}", file=sys.stderr)
            return 2
    stop = threading.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda *_: stop.set())
    server = OpenAIWireServer(
        script,
        host=args.host,
        port=args.port,
        model=args.model,
        api_key=args.api_key,
        validate_requests=not args.no_validate,
        keep_requests=False,  # nothing reads them here, and it runs until interrupted
    )
    if args.demo:
        from xai.testing._demo_model import demo_model

        server.script.add_responder(demo_model)
    try:
        server.start()
    except OSError as exc:
        # One line a person can act on, instead of a traceback from deep inside bind().
        if exc.errno == errno.EADDRINUSE:
            print(
                f"error: {args.host}:{args.port} is already in use "
                "(another server? pick another --port, or --port 0 for a free one)",
                file=sys.stderr,
            )
        else:
            print(f"error: cannot listen on {args.host}:{args.port}: {exc}", file=sys.stderr)
        return 2
    try:
        print(f"listening on {server.base_url}", flush=True)
        stop.wait()
    finally:
        server.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
